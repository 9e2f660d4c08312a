# A deprecation is imported by <namespace>/<name>/<system>/<version>.
terraform import trove_module_version_deprecation.network_1 acme/network/aws/1.0.0
