variable "alice_password" {
  type      = string
  sensitive = true
}

variable "bob_password" {
  type      = string
  sensitive = true
}

resource "trove_user" "alice" {
  name     = "alice"
  password = var.alice_password
}

# A global administrator.
resource "trove_user" "bob" {
  name     = "bob"
  password = var.bob_password
  admin    = true
}
