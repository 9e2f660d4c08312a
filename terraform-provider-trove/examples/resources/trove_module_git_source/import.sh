# A git source is imported by <namespace>/<name>/<system>; its credentials and webhook secret stay out of the state.
terraform import trove_module_git_source.network acme/network/aws
