# A retention rule is imported by its namespace.
terraform import trove_retention_rule.acme acme
