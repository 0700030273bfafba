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

output "log_analytics_workspace_guid" {
  description = "Workspace (customer) id of the Log Analytics workspace, a GUID: what `az monitor log-analytics query -w` and the query API take."
  value       = azurerm_log_analytics_workspace.this.workspace_id
}

output "log_table" {
  description = "The table the alerts read (var.log_route): ContainerInstanceLog, which the groups' diagnostic settings fill, or the legacy ContainerInstanceLog_CL (columns of both: alerts/tables.json)."
  value       = local.log_table
}

output "log_route" {
  description = "How the groups' lines reach log_table: diagnostic_setting or legacy (var.log_route), with the table's group and container-name columns (the legacy table has none of the latter: empty), and the name of the groups' diagnostic setting (empty for legacy); make verify-azure checks the route."
  value = {
    route              = var.log_route
    group_column       = local.log_source.group_column
    container_column   = local.log_source.container_column
    diagnostic_setting = local.diagnostic_settings ? "diag-${var.name_prefix}-logs" : ""
  }
}

output "lock_group_ids" {
  description = "ARM ids of the lock service's container groups (empty unless lock_service.enabled and the image is pushed)."
  value       = [for k in sort(keys(azurerm_container_group.locks)) : azurerm_container_group.locks[k].id]
}

output "lock_group_names" {
  description = "Names of the lock service's container groups (empty unless lock_service.enabled and the image is pushed)."
  value       = [for k in sort(keys(azurerm_container_group.locks)) : azurerm_container_group.locks[k].name]
}

output "role_assignment_ids" {
  description = "ARM ids of the role assignments this deployment creates, by what they grant (make verify-azure measures how old each is when access works)."
  value = merge(
    { for k, r in azurerm_role_assignment.worker_blob : "worker blob data contributor on ${k}" => r.id },
    { "worker acr pull" = azurerm_role_assignment.worker_acr_pull.id },
    { for k, r in azurerm_role_assignment.operator_blob : "operator blob data reader on ${k}" => r.id },
    { for k, r in azurerm_role_assignment.chaos_controller : "harness blob data contributor on ${k}" => r.id },
  )
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

# --- Alerts (infra/alerts.tf) ----------------------------------------------------

output "alert_queries" {
  description = "Each alert rule's query and window as the rules run them (also while alerts.enabled is false), for make verify-azure; empty before the worker groups exist."
  value       = local.worker_count > 0 ? { for k, r in local.alert_rules : k => { query = r.query, window = r.window } } : {}
}

output "alert_action_group_id" {
  description = "ARM id of the action group the alerts notify (null when alerts.enabled is false)."
  value       = one(azurerm_monitor_action_group.alerts[*].id)
}

output "alert_rule_ids" {
  description = "ARM ids of the scheduled log query alert rules by name (the keys of alert_queries); empty before the worker groups exist or when alerts are off."
  value       = { for k, r in azurerm_monitor_scheduled_query_rules_alert_v2.this : k => r.id }
}

output "alert_thresholds" {
  description = "The thresholds the alert rules use, derived from the election timing and the role propagation allowance: seconds without a leader line, the forced-break overlap allowed, leaders started per 15 minutes, seconds of 403s, seconds a worker may be starting, minutes of unexpected storage answers per 15, seconds of shards unowned (shard mode), watchdog step-downs without progress per 15 minutes, minutes and hours of silence."
  value = {
    no_leader_gap_seconds    = local.alert_leader_gap_seconds
    failover_bound_seconds   = local.alert_failover_bound_seconds
    break_overlap_seconds    = local.alert_break_overlap_seconds
    flapping_handovers       = var.alerts.flapping_handovers
    forbidden_seconds        = var.alerts.rbac_propagation_minutes * 60
    forbidden_window_minutes = local.alert_forbidden_window_minutes
    unhealthy_after_seconds  = var.lease_duration_seconds
    shards_unowned_seconds   = local.alert_unowned_seconds
    no_progress_stalls       = local.alert_min_stalls
    startup_seconds          = local.alert_startup_seconds
    storage_failing_minutes  = local.alert_failing_minutes
    no_logs_minutes          = local.alert_silent_minutes
    silent_hours             = local.alert_silent_hours
  }
}
