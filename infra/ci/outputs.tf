output "client_id" {
  description = "Client id of the CI identity: the GitHub variable AZURE_CLIENT_ID (ARM_CLIENT_ID in the workflow)."
  value       = azurerm_user_assigned_identity.this.client_id
}

output "federated_subjects" {
  description = "The OIDC subjects allowed to sign in as the CI identity."
  value       = [for k in sort(keys(azurerm_federated_identity_credential.github)) : azurerm_federated_identity_credential.github[k].subject]
}

output "principal_id" {
  description = "Object id of the CI identity (the harness grants itself data roles with it)."
  value       = azurerm_user_assigned_identity.this.principal_id
}

output "subscription_id" {
  description = "The subscription the CI identity may deploy into: the GitHub variable AZURE_SUBSCRIPTION_ID."
  value       = data.azurerm_subscription.current.subscription_id
}

output "tenant_id" {
  description = "Tenant of the CI identity: the GitHub variable AZURE_TENANT_ID."
  value       = azurerm_user_assigned_identity.this.tenant_id
}
