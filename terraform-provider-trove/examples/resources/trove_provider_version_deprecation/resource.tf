# Terraform and OpenTofu warn on every init that queries acme/cloud.
resource "trove_provider_version_deprecation" "cloud_1_2" {
  namespace = "acme"
  type      = "cloud"
  version   = "1.2.0"
  reason    = "CVE-2025-1234 in the TLS code: upgrade to 1.3"
  link      = "https://example.com/advisories/1234"
}
