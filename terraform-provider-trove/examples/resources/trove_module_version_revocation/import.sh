# A revocation is imported by <namespace>/<name>/<system>/<version>.
terraform import trove_module_version_revocation.network_1_0_1 acme/network/aws/1.0.1
