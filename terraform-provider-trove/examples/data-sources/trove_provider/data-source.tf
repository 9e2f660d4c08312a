data "trove_provider" "trove" {
  namespace = "trove"
  type      = "trove"
}

# The newest version and the platforms it was published for.
output "latest" {
  value = data.trove_provider.trove.latest_version
}

output "platforms" {
  value = [for p in data.trove_provider.trove.versions[0].platforms : "${p.os}_${p.arch}"]
}
