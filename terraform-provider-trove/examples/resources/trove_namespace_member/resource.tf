# alice publishes the namespace's providers and modules.
resource "trove_namespace_member" "alice" {
  namespace = trove_namespace.acme.name
  user      = trove_user.alice.name
  role      = "publisher"
}
