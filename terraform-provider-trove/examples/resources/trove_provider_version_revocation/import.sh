# A revocation is imported by <namespace>/<type>/<version>.
terraform import trove_provider_version_revocation.cloud_1_2_1 acme/cloud/1.2.1
