# An identity provider is imported by its name, e.g. one added with
# `trove sso provider set corp ...`.
terraform import trove_identity_provider.corp corp
