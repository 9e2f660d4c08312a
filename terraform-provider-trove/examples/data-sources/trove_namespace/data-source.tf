data "trove_namespace" "acme" {
  name = "acme"
}

output "acme_description" {
  value = data.trove_namespace.acme.description
}
