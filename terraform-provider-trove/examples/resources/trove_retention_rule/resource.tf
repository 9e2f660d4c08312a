# Keep the 10 highest versions of every provider and module of "acme", and
# whatever was published in the last 180 days; the 1.x line and 2.3.4 are
# never deleted. `trove gc --dry-run` shows what the rule would delete.
resource "trove_retention_rule" "acme" {
  namespace   = "acme"
  keep_last   = 10
  keep_within = "180d"
  pin         = ["~> 1.0", "2.3.4"]
}
