# A namespace is imported by its name.
terraform import trove_namespace.acme acme
