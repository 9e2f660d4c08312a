# A membership is imported by <namespace>/<user>.
terraform import trove_namespace_member.alice acme/alice
