resource "trove_module_version_deprecation" "network_1" {
  namespace = "acme"
  name      = "network"
  system    = "aws"
  version   = "1.0.0"
  reason    = "1.x creates public subnets by default: move to 2.x"
  link      = "https://example.com/network/upgrade-to-2"
}
