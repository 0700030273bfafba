# Plan-only checks of the security properties (docs/security.md) against a
# mocked azurerm provider: no credentials, no network.
# `override_during = plan` makes the mock fill computed attributes (ids, client
# ids, endpoints) at plan time, so assertions can compare them.

mock_provider "azurerm" {
  override_during = plan

  mock_data "azurerm_client_config" {
    defaults = {
      subscription_id = "00000000-0000-0000-0000-000000000001"
      tenant_id       = "00000000-0000-0000-0000-000000000002"
      object_id       = "00000000-0000-0000-0000-000000000003"
    }
  }

  mock_resource "azurerm_storage_account" {
    defaults = {
      id                    = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg-blobleader/providers/Microsoft.Storage/storageAccounts/stblobleadertest"
      primary_blob_endpoint = "https://stblobleadertest.blob.core.windows.net/"
    }
  }

  mock_resource "azurerm_user_assigned_identity" {
    defaults = {
      id           = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg-blobleader/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id-blobleader-worker"
      client_id    = "11111111-1111-1111-1111-111111111111"
      principal_id = "22222222-2222-2222-2222-222222222222"
    }
  }

  mock_resource "azurerm_log_analytics_workspace" {
    defaults = {
      # The alert rules (alerts.tf) are scoped to it; the provider parses the id at plan.
      id                 = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg-blobleader/providers/Microsoft.OperationalInsights/workspaces/log-blobleader"
      workspace_id       = "44444444-4444-4444-4444-444444444444"
      primary_shared_key = "mock-workspace-key"
    }
  }

  mock_resource "azurerm_container_registry" {
    defaults = {
      id           = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg-blobleader/providers/Microsoft.ContainerRegistry/registries/crblobleadertest"
      login_server = "crblobleadertest.azurecr.io"
    }
  }
}

# Distinct ARM ids for the two containers, known at plan time, so role scopes
# can be compared with them.
override_resource {
  target          = azurerm_storage_container.this["leases"]
  override_during = plan
  values = {
    id = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg-blobleader/providers/Microsoft.Storage/storageAccounts/stblobleadertest/blobServices/default/containers/leases"
  }
}

override_resource {
  target          = azurerm_storage_container.this["history"]
  override_during = plan
  values = {
    id = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg-blobleader/providers/Microsoft.Storage/storageAccounts/stblobleadertest/blobServices/default/containers/history"
  }
}

variables {
  location     = "eastus"
  name_suffix  = "test"
  image_digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
  # Alerts are on by default and need a receiver (alerts.tftest.hcl).
  alerts = { email_receivers = ["oncall@example.com"] }
}

run "storage_is_keyless_and_private" {
  command = plan

  assert {
    condition     = azurerm_storage_account.this.shared_access_key_enabled == false
    error_message = "Shared key access must be disabled on the storage account."
  }
  assert {
    condition     = azurerm_storage_account.this.default_to_oauth_authentication == true
    error_message = "The storage account must default to Entra ID (OAuth) authentication."
  }
  assert {
    condition     = azurerm_storage_account.this.local_user_enabled == false && azurerm_storage_account.this.sftp_enabled == false
    error_message = "Local users and SFTP must be disabled."
  }
  assert {
    condition     = azurerm_storage_account.this.allow_nested_items_to_be_public == false
    error_message = "No container may be made public."
  }
  assert {
    condition     = azurerm_storage_account.this.min_tls_version == "TLS1_2" && azurerm_storage_account.this.https_traffic_only_enabled == true
    error_message = "The storage account must require HTTPS and TLS 1.2."
  }
  assert {
    condition     = azurerm_storage_account.this.name == "stblobleadertest"
    error_message = "The storage account name must be st<prefix><suffix>."
  }
}

run "containers_are_created_through_arm" {
  command = plan

  assert {
    condition     = toset(keys(azurerm_storage_container.this)) == toset(["leases", "history"])
    error_message = "Exactly the leases and history containers must be created."
  }
  assert {
    condition     = alltrue([for c in azurerm_storage_container.this : c.storage_account_id == azurerm_storage_account.this.id && c.container_access_type == "private"])
    error_message = "Containers must be private and created through ARM with storage_account_id."
  }
}

run "worker_blob_role_is_scoped_to_the_containers" {
  command = plan

  assert {
    condition     = length(azurerm_role_assignment.worker_blob) == 2
    error_message = "The worker identity must get one blob role per container (two)."
  }
  assert {
    condition = alltrue([
      for k, ra in azurerm_role_assignment.worker_blob :
      ra.scope == azurerm_storage_container.this[k].id && ra.role_definition_name == "Storage Blob Data Contributor"
    ])
    error_message = "Storage Blob Data Contributor must be scoped to each container, not the account."
  }
  assert {
    condition = alltrue([
      for ra in azurerm_role_assignment.worker_blob :
      ra.scope != azurerm_storage_account.this.id && ra.principal_id == azurerm_user_assigned_identity.worker.principal_id && ra.principal_type == "ServicePrincipal"
    ])
    error_message = "The blob role must belong to the worker identity and never be scoped to the storage account."
  }
  assert {
    condition     = length(azurerm_role_assignment.operator_blob) == 0
    error_message = "No operator gets data access unless operator_principal_ids is set."
  }
}

run "worker_identity_has_acr_pull_only" {
  command = plan

  assert {
    condition     = azurerm_role_assignment.worker_acr_pull.role_definition_name == "AcrPull" && azurerm_role_assignment.worker_acr_pull.scope == azurerm_container_registry.this.id
    error_message = "The worker identity must have AcrPull on the registry."
  }
  assert {
    condition = toset(concat(
      [for ra in azurerm_role_assignment.worker_blob : ra.role_definition_name],
      [azurerm_role_assignment.worker_acr_pull.role_definition_name],
    )) == toset(["Storage Blob Data Contributor", "AcrPull"])
    error_message = "The worker identity must hold only Storage Blob Data Contributor (containers) and AcrPull (registry)."
  }
  assert {
    condition     = azurerm_container_registry.this.admin_enabled == false && azurerm_container_registry.this.anonymous_pull_enabled == false
    error_message = "The registry admin user and anonymous pull must be disabled."
  }
}

run "worker_groups_have_no_ip" {
  command = plan

  assert {
    condition     = length(azurerm_container_group.worker) == 3
    error_message = "Three worker groups by default."
  }
  assert {
    condition = alltrue([
      for g in azurerm_container_group.worker :
      g.ip_address_type == "None" && g.dns_name_label == null && (g.subnet_ids == null ? 0 : length(g.subnet_ids)) == 0
    ])
    error_message = "Worker groups must have no IP address (public or private) and no DNS label."
  }
  assert {
    condition     = alltrue([for g in azurerm_container_group.worker : g.restart_policy == "Always" && g.os_type == "Linux"])
    error_message = "Worker groups must restart Always."
  }
  # azurerm applies `security { privilege_enabled }` only to the Confidential
  # SKU; on Standard it proves nothing at best and fails the create at worst.
  # Standard-SKU groups cannot run privileged containers at all.
  assert {
    condition     = alltrue([for g in azurerm_container_group.worker : g.sku == "Standard" && alltrue([for c in g.container : length(c.security) == 0])])
    error_message = "Worker groups must be Standard SKU (no privileged containers there) and set no security block (azurerm applies it only to the Confidential SKU)."
  }
}

run "worker_environment_and_probes" {
  command = plan

  assert {
    condition = alltrue([
      for g in azurerm_container_group.worker :
      g.container[0].environment_variables["AZURE_CLIENT_ID"] == "11111111-1111-1111-1111-111111111111" &&
      g.container[0].environment_variables["BLOBLEADER_ACCOUNT_URL"] == "https://stblobleadertest.blob.core.windows.net/" &&
      g.container[0].environment_variables["BLOBLEADER_HISTORY"] == "blob" &&
      g.container[0].environment_variables["BLOBLEADER_CONTAINER"] == "leases" &&
      g.container[0].environment_variables["BLOBLEADER_LEASE_DURATION"] == "15s" &&
      g.container[0].environment_variables["BLOBLEADER_RENEW_DEADLINE"] == "10s" &&
      g.container[0].environment_variables["BLOBLEADER_RENEW_INTERVAL"] == "2s" &&
      g.container[0].environment_variables["BLOBLEADER_RETRY_PERIOD"] == "1s" &&
      g.container[0].environment_variables["BLOBLEADER_IDENTITY"] == g.name
    ])
    error_message = "Each worker must get the identity's client id, the blob endpoint, history=blob and the election timings through BLOBLEADER_* variables."
  }
  assert {
    condition     = alltrue([for g in azurerm_container_group.worker : g.container[0].secure_environment_variables == null && !contains(keys(g.container[0].environment_variables), "AZURE_STORAGE_CONNECTION_STRING")])
    error_message = "Workers must get no connection string or other secret."
  }
  assert {
    condition = alltrue([
      for g in azurerm_container_group.worker :
      g.container[0].liveness_probe[0].http_get[0].path == "/healthz" && g.container[0].liveness_probe[0].http_get[0].port == 8080 &&
      g.container[0].readiness_probe[0].http_get[0].path == "/readyz" && g.container[0].readiness_probe[0].http_get[0].port == 8080
    ])
    error_message = "Liveness must probe /healthz and readiness /readyz on port 8080."
  }
  assert {
    condition = alltrue([
      for g in azurerm_container_group.worker :
      g.container[0].image == "crblobleadertest.azurecr.io/blobleader/worker@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
    ])
    error_message = "The worker image must be pinned by digest in the deployment's registry."
  }
  assert {
    condition = alltrue([
      for g in azurerm_container_group.worker :
      g.image_registry_credential[0].user_assigned_identity_id == azurerm_user_assigned_identity.worker.id &&
      g.image_registry_credential[0].username == null && g.image_registry_credential[0].password == null &&
      contains(g.identity[0].identity_ids, azurerm_user_assigned_identity.worker.id)
    ])
    error_message = "Images must be pulled with the worker identity, never with a username and password."
  }
  assert {
    condition     = alltrue([for g in azurerm_container_group.worker : g.diagnostics[0].log_analytics[0].workspace_id == azurerm_log_analytics_workspace.this.workspace_id])
    error_message = "Container logs must go to the Log Analytics workspace."
  }
}

run "groups_spread_over_zones" {
  command = plan

  variables {
    worker_count = 4
    zones        = ["1", "2"]
  }

  assert {
    condition     = jsonencode([for k in sort(keys(azurerm_container_group.worker)) : tolist(azurerm_container_group.worker[k].zones)]) == jsonencode([["1"], ["2"], ["1"], ["2"]])
    error_message = "Worker groups must be placed in the zones round-robin."
  }
  assert {
    condition     = output.container_group_names == ["ci-blobleader-worker-01", "ci-blobleader-worker-02", "ci-blobleader-worker-03", "ci-blobleader-worker-04"]
    error_message = "Group names must be ci-<prefix>-worker-NN, in order."
  }
}

run "region_without_zones" {
  command = plan

  variables {
    zones                    = []
    storage_replication_type = "LRS"
  }

  assert {
    condition     = alltrue([for g in azurerm_container_group.worker : length(g.zones) == 0])
    error_message = "With zones = [] no group may be pinned to a zone."
  }
  assert {
    condition     = azurerm_container_registry.this.zone_redundancy_enabled == false
    error_message = "Registry zone redundancy needs zones."
  }
}

run "stage_one_creates_no_groups" {
  command = plan

  variables {
    image_digest = ""
  }

  assert {
    condition     = length(azurerm_container_group.worker) == 0 && output.image_reference == ""
    error_message = "Without an image digest (stage 1 of make deploy) no container group may be planned."
  }
  assert {
    condition     = length(azurerm_role_assignment.worker_blob) == 2 && azurerm_container_registry.this.sku == "Premium"
    error_message = "Stage 1 must still create the roles and the registry."
  }
}

run "chaos_sidecar_is_off_by_default" {
  command = plan

  assert {
    condition     = alltrue([for g in azurerm_container_group.worker : length(g.container) == 1 && g.container[0].name == "worker"])
    error_message = "Without chaos_sidecar.enabled each group runs the worker alone."
  }
  assert {
    condition     = alltrue([for g in azurerm_container_group.worker : !contains(keys(g.container[0].environment_variables), "BLOBLEADER_STORAGE_DIAL") && !contains(keys(g.container[0].environment_variables), "BLOBLEADER_CONTROL_LISTEN")])
    error_message = "Without the sidecar the worker dials storage directly and serves no control endpoint."
  }
  assert {
    condition     = length(azurerm_storage_container.this) == 2 && length(azurerm_role_assignment.chaos_controller) == 0
    error_message = "Without the sidecar there is no chaos container and no harness role."
  }
}

run "chaos_sidecar_when_enabled" {
  command = plan

  override_resource {
    target          = azurerm_storage_container.this["chaos"]
    override_during = plan
    values = {
      id = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg-blobleader/providers/Microsoft.Storage/storageAccounts/stblobleadertest/blobServices/default/containers/chaos"
    }
  }

  variables {
    chaos_sidecar = {
      enabled                  = true
      image                    = "crblobleadertest.azurecr.io/blobleader/chaos@sha256:89abcdef0123456789abcdef0123456789abcdef0123456789abcdef01234567"
      controller_principal_ids = ["55555555-5555-5555-5555-555555555555"]
    }
  }

  assert {
    condition = alltrue([
      for g in azurerm_container_group.worker :
      length(g.container) == 2 && g.container[1].name == "chaos" && length(g.container[1].ports) == 0 &&
      g.ip_address_type == "None" && g.sku == "Standard" && length(g.container[1].security) == 0
    ])
    error_message = "The sidecar is a second container with no ports and no security block in a Standard-SKU group (no privileged containers), and the group stays without an IP."
  }
  assert {
    condition = alltrue([
      for g in azurerm_container_group.worker :
      g.container[0].environment_variables["BLOBLEADER_STORAGE_DIAL"] == "127.0.0.1:10443" &&
      g.container[1].environment_variables["BLOBLEADER_CHAOS_LISTEN"] == "127.0.0.1:10443" &&
      g.container[1].environment_variables["BLOBLEADER_CHAOS_NAME"] == g.name &&
      g.container[1].environment_variables["BLOBLEADER_CHAOS_ACCOUNT_URL"] == "https://stblobleadertest.blob.core.windows.net/" &&
      g.container[1].environment_variables["BLOBLEADER_CHAOS_CONTAINER"] == "chaos" &&
      g.container[1].environment_variables["BLOBLEADER_CHAOS_WORKER_STATUS"] == "http://127.0.0.1:8080/status" &&
      g.container[0].environment_variables["BLOBLEADER_CONTROL_LISTEN"] == "127.0.0.1:8081" &&
      g.container[1].environment_variables["BLOBLEADER_CHAOS_WORKER_STOP"] == "http://127.0.0.1:8081/stop" &&
      g.container[1].environment_variables["AZURE_CLIENT_ID"] == "11111111-1111-1111-1111-111111111111" &&
      g.container[1].secure_environment_variables == null
    ])
    error_message = "The worker must dial the sidecar's loopback proxy and serve its control endpoint on loopback, and the sidecar must listen on loopback only, read its own plan (named after its group) from the chaos container with the worker identity, relay the worker's /status and know the worker's stop URL."
  }
  assert {
    condition     = azurerm_storage_container.this["chaos"].name == "chaos" && azurerm_storage_container.this["chaos"].container_access_type == "private"
    error_message = "The sidecar's control container is a private container named chaos."
  }
  assert {
    condition = length(azurerm_role_assignment.chaos_controller) == 2 && alltrue([
      for ra in azurerm_role_assignment.chaos_controller :
      ra.principal_id == "55555555-5555-5555-5555-555555555555" && ra.role_definition_name == "Storage Blob Data Contributor" &&
      contains([azurerm_storage_container.this["chaos"].id, azurerm_storage_container.this["leases"].id], ra.scope)
    ])
    error_message = "The harness gets Storage Blob Data Contributor on the chaos and lease containers only."
  }
  assert {
    condition     = length(azurerm_role_assignment.worker_blob) == 3
    error_message = "The workers (and their sidecars) get their blob role on the three containers, nothing wider."
  }
}

run "operators_get_read_only_container_access" {
  command = plan

  variables {
    operator_principal_ids = ["33333333-3333-3333-3333-333333333333"]
  }

  assert {
    condition = length(azurerm_role_assignment.operator_blob) == 2 && alltrue([
      for ra in azurerm_role_assignment.operator_blob :
      ra.role_definition_name == "Storage Blob Data Reader" && contains([for c in azurerm_storage_container.this : c.id], ra.scope)
    ])
    error_message = "Operators get Storage Blob Data Reader on the two containers only."
  }
}
