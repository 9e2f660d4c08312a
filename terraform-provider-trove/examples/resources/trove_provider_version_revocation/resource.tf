# New resolutions skip acme/cloud 1.2.1; lock files pinning it must be upgraded.
resource "trove_provider_version_revocation" "cloud_1_2_1" {
  namespace = "acme"
  type      = "cloud"
  version   = "1.2.1"
  reason    = "packages built from the wrong commit"
}
