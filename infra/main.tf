# blobleader on Azure: N worker container groups electing a leader through a
# blob lease, keyless end to end (DESIGN §6, docs/security.md).
#
# Two stages (scripts/deploy.sh): with `image_digest = ""` everything but the
# container groups is created (registry, identity, roles, storage, logs); the
# image is then pushed and a second apply with its digest creates the groups.

data "azurerm_client_config" "current" {}

resource "azurerm_resource_group" "this" {
  location = var.location
  name     = local.resource_group_name
  tags     = local.tags
}

# --- Storage: the lease blob, the fenced ledger and the history -------------

# Queue logging needs the queue data plane (azurerm_storage_account_queue_properties),
# which this deployment never calls; the account holds no queue.
#tfsec:ignore:azure-storage-queue-services-logging-enabled No queues are used; see the comment above.
resource "azurerm_storage_account" "this" {
  account_replication_type = var.storage_replication_type
  account_tier             = "Standard"
  location                 = azurerm_resource_group.this.location
  name                     = local.storage_account_name
  resource_group_name      = azurerm_resource_group.this.name
  account_kind             = "StorageV2"
  # Keyless: no shared key, no SAS signed with a key, no local (SFTP) users;
  # the portal and tools default to Entra ID.
  shared_access_key_enabled       = false
  default_to_oauth_authentication = true
  local_user_enabled              = false
  sftp_enabled                    = false
  # Nothing anonymous; TLS 1.2 over HTTPS only.
  allow_nested_items_to_be_public  = false
  https_traffic_only_enabled       = true
  min_tls_version                  = "TLS1_2"
  cross_tenant_replication_enabled = false
  # The workers run in ACI without a virtual network (zonal container groups
  # cannot be VNet-injected), so they reach the public endpoint; every request
  # still needs an Entra ID token with a data role on the container.
  public_network_access_enabled = true
  tags                          = local.tags

  blob_properties {
    # Soft delete so an operator's mistake on the ledger or history is undoable.
    container_delete_retention_policy {
      days = 7
    }
    delete_retention_policy {
      days = 7
    }
  }

  #tfsec:ignore:azure-storage-default-action-deny Zonal ACI container groups have no VNet (VNet injection excludes zones), so the workers come from Azure public IPs; access is Entra ID only (shared keys disabled) and scoped to two containers. See docs/security.md.
  network_rules {
    default_action = "Allow"
    bypass         = ["AzureServices"]
  }
}

# Created through ARM (storage_account_id): no data-plane call, no key.
resource "azurerm_storage_container" "this" {
  for_each = local.storage_containers

  name                  = each.value
  storage_account_id    = azurerm_storage_account.this.id
  container_access_type = "private"
}

# --- Identity and roles ------------------------------------------------------

resource "azurerm_user_assigned_identity" "worker" {
  location            = azurerm_resource_group.this.location
  name                = local.identity_name
  resource_group_name = azurerm_resource_group.this.name
  tags                = local.tags
}

# Blob data rights on the two containers only: the identity can take and renew
# the lease, write metadata and append to the ledger and history, and nothing
# else in the account (it cannot even create a container).
resource "azurerm_role_assignment" "worker_blob" {
  for_each = azurerm_storage_container.this

  principal_id         = azurerm_user_assigned_identity.worker.principal_id
  scope                = each.value.id
  principal_type       = "ServicePrincipal"
  role_definition_name = "Storage Blob Data Contributor"
  description          = "blobleader workers: lease, ledger and history in container ${each.value.name}"
}

# Read-only data access for the people or pipelines that run `make deploy`
# (it waits for a leader by reading the lease blob) and watch the ledger.
resource "azurerm_role_assignment" "operator_blob" {
  for_each = local.operator_container_roles

  principal_id         = each.value.principal_id
  scope                = azurerm_storage_container.this[each.value.container].id
  role_definition_name = "Storage Blob Data Reader"
  description          = "blobleader operator: read ${each.value.container}"
}

# The chaos test harness (var.chaos_sidecar.controller_principal_ids) writes
# fault plans and breaks the lease as an operator would. Only with the sidecar.
resource "azurerm_role_assignment" "chaos_controller" {
  for_each = local.chaos_controller_roles

  principal_id         = each.value.principal_id
  scope                = azurerm_storage_container.this[each.value.container].id
  role_definition_name = "Storage Blob Data Contributor"
  description          = "blobleader chaos harness: ${each.value.container == "chaos" ? "write fault plans" : "break the lease"}"
}

# --- Registry ----------------------------------------------------------------

resource "azurerm_container_registry" "this" {
  location            = azurerm_resource_group.this.location
  name                = local.registry_name
  resource_group_name = azurerm_resource_group.this.name
  sku                 = var.registry_sku
  # Pulls use the worker identity (AcrPull), pushes the deployer's Entra token
  # (`az acr login --expose-token`): no admin user, no anonymous pull.
  admin_enabled          = false
  anonymous_pull_enabled = false
  # ACI's identity-based pull goes through the trusted-services path.
  network_rule_bypass_option = "AzureServices"
  zone_redundancy_enabled    = var.registry_sku == "Premium" && length(var.zones) > 0
  tags                       = local.tags
}

resource "azurerm_role_assignment" "worker_acr_pull" {
  principal_id         = azurerm_user_assigned_identity.worker.principal_id
  scope                = azurerm_container_registry.this.id
  principal_type       = "ServicePrincipal"
  role_definition_name = "AcrPull"
  description          = "blobleader workers: pull the worker image"
}

# --- Logs ----------------------------------------------------------------------

resource "azurerm_log_analytics_workspace" "this" {
  location            = azurerm_resource_group.this.location
  name                = local.log_analytics_name
  resource_group_name = azurerm_resource_group.this.name
  daily_quota_gb      = var.log_daily_quota_gb
  # The container groups' legacy log integration (their `diagnostics` block)
  # authenticates with the workspace key; that is the one key in this
  # deployment (stored as a secure value in each group).
  local_authentication_enabled = true
  retention_in_days            = var.log_retention_days
  sku                          = "PerGB2018"
  tags                         = local.tags
}

# --- Workers -------------------------------------------------------------------

resource "azurerm_container_group" "worker" {
  for_each = local.workers

  location            = azurerm_resource_group.this.location
  name                = each.value.name
  os_type             = "Linux"
  resource_group_name = azurerm_resource_group.this.name
  # No IP at all: nothing listens on a public (or private) address. Probes reach
  # the container directly; operators use `az container exec`/`logs`.
  ip_address_type = "None"
  restart_policy  = "Always"
  sku             = "Standard"
  tags            = local.tags
  zones           = each.value.zone == null ? [] : [each.value.zone]

  identity {
    type         = "UserAssigned"
    identity_ids = [azurerm_user_assigned_identity.worker.id]
  }

  image_registry_credential {
    server                    = azurerm_container_registry.this.login_server
    user_assigned_identity_id = azurerm_user_assigned_identity.worker.id
  }

  container {
    name   = "worker"
    image  = local.image_reference
    cpu    = var.worker_cpu
    memory = var.worker_memory_gb
    environment_variables = merge(local.worker_environment, {
      BLOBLEADER_IDENTITY = each.value.name
    })

    ports {
      port     = local.worker_port
      protocol = "TCP"
    }

    # No `security` block: azurerm applies privilege_enabled only to the
    # Confidential SKU; a Standard-SKU group runs no privileged container.

    liveness_probe {
      failure_threshold     = 3
      initial_delay_seconds = 10
      period_seconds        = 10
      success_threshold     = 1
      timeout_seconds       = 2

      http_get {
        path   = "/healthz"
        port   = local.worker_port
        scheme = "http"
      }
    }

    readiness_probe {
      failure_threshold     = 3
      initial_delay_seconds = 2
      period_seconds        = 5
      success_threshold     = 1
      timeout_seconds       = 2

      http_get {
        path   = "/readyz"
        port   = local.worker_port
        scheme = "http"
      }
    }
  }

  # The chaos sidecar of the Azure test suite (var.chaos_sidecar, off by
  # default): a toxiproxy proxy on 127.0.0.1 only, which the worker dials for
  # every storage connection (BLOBLEADER_STORAGE_DIAL) and which applies the
  # fault plan the harness writes into the `chaos` container. No port, no IP.
  dynamic "container" {
    for_each = var.chaos_sidecar.enabled ? [var.chaos_sidecar] : []

    content {
      name   = "chaos"
      image  = container.value.image
      cpu    = container.value.cpu
      memory = container.value.memory_gb
      environment_variables = merge(local.chaos_environment, {
        BLOBLEADER_CHAOS_NAME = each.value.name
      })
    }
  }

  # The legacy integration (workspace id and key): ACI writes the lines to
  # ContainerInstanceLog_CL, a custom table that exists only after its first
  # ingestion. Every group carries it, whatever var.log_route: with
  # `legacy` the alerts read it; otherwise it is for people reading logs,
  # and a fallback when the diagnostic setting below does not deliver. No
  # log_type: Microsoft's documented form sets none, and what each value
  # carries is not documented.
  diagnostics {
    log_analytics {
      workspace_id  = azurerm_log_analytics_workspace.this.workspace_id
      workspace_key = azurerm_log_analytics_workspace.this.primary_shared_key
    }
  }

  # Image pulls and blob access need the role assignments in place (ARM may take
  # minutes to propagate them; the worker retries 403 with backoff).
  depends_on = [
    azurerm_role_assignment.worker_acr_pull,
    azurerm_role_assignment.worker_blob,
  ]
}

# The route the alerts rely on by default (var.log_route): a diagnostic
# setting per group sends its container logs and events to the
# resource-specific tables ContainerInstanceLog and ContainerEvent (Microsoft
# Learn, "Container group and instance logging with Azure Monitor logs",
# Using Diagnostic Settings; the categories are those of Azure Policy's
# built-in "Configure diagnostic settings for container groups to Log
# Analytics workspace"). Microsoft's monitoring reference
# (monitor-azure-container-instances-reference, ms.date 2025-11-17) calls the
# feature a public preview: "Once this feature is enabled for a subscription,
# diagnostic settings can be applied to a container group. Applying
# diagnostic settings causes a container group to restart." So: the preflight
# of `make deploy` and of the Azure suite look for a preview feature of
# Microsoft.ContainerInstance that is not registered, `make verify-azure`
# checks the categories and the settings on every group, the suite waits out
# the restart, and `log_route = "legacy"` delivers the alerts without it.
# Nothing here reads the table at plan time: the rules are created after
# these settings, without query validation (alerts.tf). One setting per
# group: the workers' (keyed as local.workers) and the lock service
# replicas' (locks.tf; keyed locks-NN).
resource "azurerm_monitor_diagnostic_setting" "groups" {
  for_each = local.diagnostic_settings ? merge(
    { for k in keys(local.workers) : k => azurerm_container_group.worker[k].id },
    { for k in keys(local.lock_replicas) : "locks-${k}" => azurerm_container_group.locks[k].id },
  ) : {}

  name                           = "diag-${var.name_prefix}-logs"
  target_resource_id             = each.value
  log_analytics_workspace_id     = azurerm_log_analytics_workspace.this.id
  log_analytics_destination_type = "Dedicated"

  dynamic "enabled_log" {
    for_each = local.log_categories
    content {
      category = enabled_log.value
    }
  }
}

# The settings were the workers' alone, under this name, with the same keys.
moved {
  from = azurerm_monitor_diagnostic_setting.worker
  to   = azurerm_monitor_diagnostic_setting.groups
}
