# A token for the pipeline that publishes the namespace's providers.
resource "trove_token" "ci" {
  namespaces  = [trove_namespace.acme.name]
  scopes      = ["publish"]
  description = "CI release pipeline"
  expires_at  = "2030-01-01T00:00:00Z"
}

# One token for a pipeline that publishes to two namespaces: it publishes in
# both and nowhere else, and goes when either namespace is deleted.
resource "trove_token" "platform_ci" {
  namespaces  = [trove_namespace.acme.name, trove_namespace.acme_labs.name]
  scopes      = ["publish"]
  description = "CI of the platform team's modules"
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
  namespaces  = [trove_namespace.acme.name]
  scopes      = ["read"]
  description = "alice's terraform init"
}

output "ci_token" {
  value     = trove_token.ci.token
  sensitive = true
}
