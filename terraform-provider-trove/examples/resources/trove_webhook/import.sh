# A webhook is imported by its ID (trove webhook list shows them); its secret is not imported.
terraform import trove_webhook.ci wh_0123456789abcdef
