# The company's Keycloak realm as a confidential client: every Trove
# replica has the client secret in TROVE_OIDC_SECRET_CORP. Register
# redirect_uri (output below) at the provider.
resource "trove_identity_provider" "corp" {
  name              = "corp"
  display_name      = "Example Corp"
  issuer            = "https://login.example.com/realms/corp"
  client_id         = "trove"
  client_secret_env = "TROVE_OIDC_SECRET_CORP"
  scopes            = ["profile", "email", "groups"]
}

output "corp_redirect_uri" {
  value = trove_identity_provider.corp.redirect_uri
}
