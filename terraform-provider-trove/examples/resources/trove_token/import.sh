# A token is imported by its ID (see `trove token list`). The secret cannot
# be imported: the token attribute stays empty.
terraform import trove_token.ci tok_0123456789abcdef
