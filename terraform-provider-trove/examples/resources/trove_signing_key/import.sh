# A signing key is imported by <namespace>/<key ID>.
terraform import trove_signing_key.release acme/51852D87348FFC4C
