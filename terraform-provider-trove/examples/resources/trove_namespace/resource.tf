resource "trove_namespace" "acme" {
  name        = "acme"
  description = "Providers of the ACME platform team"
}
