output "container_group_ids" {
  description = "ARM ids of the worker container groups, in worker order (empty before the image is pushed)."
  value       = [for k in sort(keys(azurerm_container_group.worker)) : azurerm_container_group.worker[k].id]
}

output "container_group_names" {
  description = "Names of the worker container groups, in worker order; each is also the worker's election identity."
  value       = [for k in sort(keys(azurerm_container_group.worker)) : azurerm_container_group.worker[k].name]
}

output "container_names" {
  description = "Blob containers: `leases` (lease blob and fenced ledger) and `history` (event history)."
  value       = { for k, c in azurerm_storage_container.this : k => c.name }
}

output "identity_client_id" {
  description = "Client id of the workers' user-assigned identity (their AZURE_CLIENT_ID)."
  value       = azurerm_user_assigned_identity.worker.client_id
}

output "identity_principal_id" {
  description = "Object (principal) id of the workers' user-assigned identity, the subject of its role assignments."
  value       = azurerm_user_assigned_identity.worker.principal_id
}

output "image_digest" {
  description = "Digest the container groups pin the worker image by (empty before the image is pushed)."
  value       = var.image_digest
}

output "image_reference" {
  description = "Full, digest-pinned worker image reference the groups run (empty before the image is pushed)."
  value       = local.image_reference
}

output "image_repository" {
  description = "Registry repository `make deploy` pushes the worker image to."
  value       = "${azurerm_container_registry.this.login_server}/${var.image_repository}"
}

output "lease_blob_name" {
  description = "Name of the lease blob in the leases container."
  value       = var.lease_blob_name
}

output "log_analytics_workspace_id" {
  description = "ARM id of the Log Analytics workspace receiving the container logs."
  value       = azurerm_log_analytics_workspace.this.id
}

output "registry_login_server" {
  description = "Login server of the container registry, e.g. `crblobleaderXXXX.azurecr.io`."
  value       = azurerm_container_registry.this.login_server
}

output "registry_name" {
  description = "Name of the container registry (for `az acr login -n`)."
  value       = azurerm_container_registry.this.name
}

output "resource_group_name" {
  description = "Name of the resource group holding everything (`make destroy` removes it)."
  value       = azurerm_resource_group.this.name
}

output "storage_account_name" {
  description = "Name of the storage account holding the lease."
  value       = azurerm_storage_account.this.name
}

output "storage_blob_endpoint" {
  description = "Blob endpoint of the storage account (the workers' BLOBLEADER_ACCOUNT_URL)."
  value       = azurerm_storage_account.this.primary_blob_endpoint
}
