# The public half of the key the release pipeline signs SHA256SUMS with:
#   gpg --armor --export 51852D87348FFC4C > release-key.asc
resource "trove_signing_key" "release" {
  namespace   = trove_namespace.acme.name
  ascii_armor = file("${path.module}/release-key.asc")
}

# Or let Trove generate and keep the namespace's key: it then signs the
# releases published without a .sig (trove publish of an unsigned dist/).
resource "trove_signing_key" "managed" {
  namespace = trove_namespace.acme.name
  managed   = true
}
