# The public Terraform registry, narrowed to HashiCorp's providers and one
# provider at its 1.x versions, new releases held back a week. The default
# upstream of this host exists already: import it first (see import.sh).
resource "trove_mirror_upstream" "terraform" {
  host        = "registry.terraform.io"
  description = "Public Terraform registry, HashiCorp providers only"

  allow {
    provider = "hashicorp/*"
    min_age  = "7d"
  }
  allow {
    provider = "acme/widget"
    versions = "~> 1.2"
  }
}

# A private registry behind a company certificate authority.
resource "trove_mirror_upstream" "internal" {
  host            = "registry.example.com"
  service_url     = "https://registry.example.com/v1/providers/"
  ca_certificates = file("${path.module}/corp-ca.pem")
  description     = "Internal registry of the platform team"

  allow {
    provider = "*/*"
  }
}
