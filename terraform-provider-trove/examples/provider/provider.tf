terraform {
  required_providers {
    trove = {
      # Trove serves its own provider: <trove host>/trove/trove.
      source = "localhost:8443/trove/trove"
    }
  }
}

# The token comes from TROVE_TOKEN; address could come from TROVE_ADDR.
provider "trove" {
  address      = "https://localhost:8443"
  ca_cert_file = "/etc/trove/ca.pem" # the tls/ca.pem of a self-signed `trove serve`
}
