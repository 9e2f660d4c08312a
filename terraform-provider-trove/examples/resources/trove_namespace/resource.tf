resource "trove_namespace" "acme" {
  name        = "acme"
  description = "Providers of the ACME platform team"
  visibility  = "private" # the default; "public" lets anyone install without credentials
}
