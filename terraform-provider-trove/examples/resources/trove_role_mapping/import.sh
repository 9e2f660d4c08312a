# A role mapping is imported by its ID, the number `trove sso mapping list`
# shows.
terraform import trove_role_mapping.platform 3
