# The named-lock service (`blobleader locks`, docs/architecture.md, Resource
# locks) beside the workers: var.lock_service.replicas stateless replicas in
# container groups of their own, on private IPs in the subnet the caller
# gives, all on the lease container (lock blobs under locks/). Off by default.
# A non-loopback listen requires a bearer token: var.lock_service_token, sent
# as a secure environment variable (never shown by the ARM API or the logs).

locals {
  lock_port = 3500
  # Like the workers, the replicas run the pushed image: they exist from
  # stage 2 of `make deploy` (image_digest set), never with an empty image.
  lock_replicas = var.lock_service.enabled && var.image_digest != "" ? {
    for i in range(var.lock_service.replicas) : format("%02d", i + 1) => "${var.name_prefix}-locks-${format("%02d", i + 1)}"
  } : {}
  # Only the flags `blobleader locks` has, through their env twins: the
  # workers' environment would also set --listen and others for them.
  lock_environment = {
    AZURE_CLIENT_ID         = azurerm_user_assigned_identity.worker.client_id
    AZURE_TOKEN_CREDENTIALS = "ManagedIdentityCredential"
    BLOBLEADER_ACCOUNT_URL  = azurerm_storage_account.this.primary_blob_endpoint
    BLOBLEADER_CONTAINER    = var.lease_container_name
    BLOBLEADER_STORE        = var.lock_service.store
    BLOBLEADER_LISTEN       = ":${local.lock_port}"
    BLOBLEADER_LOG_FORMAT   = "json"
  }
}

resource "azurerm_container_group" "locks" {
  for_each = local.lock_replicas

  location            = azurerm_resource_group.this.location
  name                = each.value
  os_type             = "Linux"
  resource_group_name = azurerm_resource_group.this.name
  # A private IP in the caller's subnet: clients in that network reach it;
  # nothing public does.
  ip_address_type = "Private"
  subnet_ids      = [var.lock_service.subnet_id]
  restart_policy  = "Always"
  sku             = "Standard"
  tags            = local.tags

  identity {
    type         = "UserAssigned"
    identity_ids = [azurerm_user_assigned_identity.worker.id]
  }

  image_registry_credential {
    server                    = azurerm_container_registry.this.login_server
    user_assigned_identity_id = azurerm_user_assigned_identity.worker.id
  }

  container {
    name                         = "locks"
    image                        = local.image_reference
    cpu                          = var.lock_service.cpu
    memory                       = var.lock_service.memory_gb
    commands                     = ["/blobleader", "locks"]
    environment_variables        = local.lock_environment
    secure_environment_variables = { BLOBLEADER_LOCKS_TOKEN = var.lock_service_token }

    ports {
      port     = local.lock_port
      protocol = "TCP"
    }

    liveness_probe {
      failure_threshold     = 3
      initial_delay_seconds = 5
      period_seconds        = 10
      success_threshold     = 1
      timeout_seconds       = 2

      http_get {
        path   = "/healthz"
        port   = local.lock_port
        scheme = "http"
      }
    }

    # Storage answering is readiness, never liveness (a restart cures
    # neither a role still propagating nor an outage).
    readiness_probe {
      failure_threshold     = 3
      initial_delay_seconds = 2
      period_seconds        = 5
      success_threshold     = 1
      timeout_seconds       = 2

      http_get {
        path   = "/readyz"
        port   = local.lock_port
        scheme = "http"
      }
    }
  }

  # Logged the way the worker groups are (main.tf): the legacy integration
  # without log_type, and a diagnostic setting (main.tf,
  # azurerm_monitor_diagnostic_setting.groups); the alerts read the
  # replicas' storage_error and storage_forbidden lines (alerts.tf).
  diagnostics {
    log_analytics {
      workspace_id  = azurerm_log_analytics_workspace.this.workspace_id
      workspace_key = azurerm_log_analytics_workspace.this.primary_shared_key
    }
  }

  depends_on = [
    azurerm_role_assignment.worker_acr_pull,
    azurerm_role_assignment.worker_blob,
  ]

  lifecycle {
    precondition {
      condition     = length(var.lock_service_token) >= 32
      error_message = "lock_service.enabled needs lock_service_token (at least 32 characters): the service listens on a private IP, and a non-loopback listen requires a bearer token."
    }
  }
}
