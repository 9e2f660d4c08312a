# GitHub Actions: release tags of acme/infra, from the production
# environment, publish to acme without a stored secret.
resource "trove_trust_policy" "github" {
  namespace = trove_namespace.acme.name
  issuer    = "https://token.actions.githubusercontent.com"
  conditions = {
    repository  = "acme/infra"
    ref         = "refs/tags/v*"
    environment = "production"
  }
  description = "releases of acme/infra"
}

# GitLab.com: tag pipelines of the project acme/infra.
resource "trove_trust_policy" "gitlab" {
  namespace = trove_namespace.acme.name
  issuer    = "https://gitlab.com"
  conditions = {
    project_path = "acme/infra"
    ref_type     = "tag"
  }
  token_ttl_seconds = 600
}
