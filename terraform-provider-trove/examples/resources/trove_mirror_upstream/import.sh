# A mirror upstream is imported by its host, e.g. one of the two defaults.
terraform import trove_mirror_upstream.terraform registry.terraform.io
