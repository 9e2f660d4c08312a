# A user is imported by name. Trove never reveals the password: the next
# apply sets the configured one.
terraform import trove_user.alice alice
