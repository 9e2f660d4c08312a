data "trove_module" "network" {
  namespace = "acme"
  name      = "network"
  system    = "aws"
}

# Every published version, newest first.
output "network_versions" {
  value = [for v in data.trove_module.network.versions : v.version]
}
