# The semver tags of a private repository become versions of
# acme/network/aws; a push webhook makes new tags appear at once.
variable "git_token" {
  type      = string
  sensitive = true
}

resource "trove_module_git_source" "network" {
  namespace  = trove_namespace.acme.name
  name       = "network"
  system     = "aws"
  url        = "https://git.example.com/acme/infra.git"
  subdir     = "modules/network"
  tag_prefix = "network/"
  username   = "ci"
  password   = var.git_token
}

# Give the repository's webhook trove_module_git_source.network.webhook_url
# and .webhook_secret (for example with the Git host's own provider).
output "network_webhook_url" {
  value = trove_module_git_source.network.webhook_url
}
