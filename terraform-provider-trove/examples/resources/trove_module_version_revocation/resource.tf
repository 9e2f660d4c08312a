resource "trove_module_version_revocation" "network_1_0_1" {
  namespace = "acme"
  name      = "network"
  system    = "aws"
  version   = "1.0.1"
  reason    = "the archive misses the outputs file"
}
