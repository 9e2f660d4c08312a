# A deprecation is imported by <namespace>/<type>/<version>.
terraform import trove_provider_version_deprecation.cloud_1_2 acme/cloud/1.2.0
