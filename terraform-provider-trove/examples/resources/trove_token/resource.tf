# A token for the pipeline that publishes the namespace's providers.
resource "trove_token" "ci" {
  namespace   = trove_namespace.acme.name
  scopes      = ["publish"]
  description = "CI release pipeline"
  expires_at  = "2030-01-01T00:00:00Z"
}

# A global read-only token, e.g. for a monitoring job.
resource "trove_token" "audit" {
  scopes      = ["read"]
  description = "Nightly audit"
}

# A personal token of alice: it reads what alice may read in acme, and stops
# working when she loses her membership or is disabled.
resource "trove_token" "alice_read" {
  user        = trove_user.alice.name
  namespace   = trove_namespace.acme.name
  scopes      = ["read"]
  description = "alice's terraform init"
}

output "ci_token" {
  value     = trove_token.ci.token
  sensitive = true
}
