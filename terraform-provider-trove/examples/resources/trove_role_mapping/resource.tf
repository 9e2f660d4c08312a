# Members of the group "platform" at the identity provider may read and
# publish in the namespace acme; members of "registry-admins" are global
# admins. Both are applied at every sign-in through the provider.
resource "trove_role_mapping" "platform" {
  identity_provider = trove_identity_provider.corp.name
  claim             = "groups"
  value             = "platform"
  namespace         = trove_namespace.acme.name
  role              = "publisher"
}

resource "trove_role_mapping" "admins" {
  identity_provider = trove_identity_provider.corp.name
  value             = "registry-admins"
  namespace         = "*"
  role              = "admin"
}
