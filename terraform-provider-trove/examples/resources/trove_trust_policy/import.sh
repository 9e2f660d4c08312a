# A trust policy is imported by <namespace>/<policy ID> (trove trust-policy list shows the IDs).
terraform import trove_trust_policy.github acme/tp_0123456789abcdef
