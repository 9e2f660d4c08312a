data "trove_namespace" "acme" {
  name = "acme"
}

output "acme_description" {
  value = data.trove_namespace.acme.description
}

output "acme_is_public" {
  value = data.trove_namespace.acme.visibility == "public"
}
