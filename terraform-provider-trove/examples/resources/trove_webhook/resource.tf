# Start a pipeline when acme publishes a provider or module version.
resource "trove_webhook" "ci" {
  namespace   = trove_namespace.acme.name
  url         = "https://ci.example.com/hooks/trove"
  events      = ["provider.published", "module.published"]
  description = "release pipeline"
}

# Tell the platform team's chat about every deprecation, revocation and
# deletion in any namespace (a global webhook: needs a global admin),
# signed with a secret kept in a secret store.
resource "trove_webhook" "chat" {
  url    = "https://chat.example.com/hooks/registry"
  events = ["provider.deprecated", "provider.revoked", "provider.deleted", "module.deprecated", "module.revoked", "module.deleted"]
  secret = var.chat_webhook_secret
}

variable "chat_webhook_secret" {
  type      = string
  sensitive = true
}

# Give the receiver the generated secret of the first one.
output "ci_webhook_secret" {
  value     = trove_webhook.ci.secret
  sensitive = true
}
