# One `make deploy` on an empty subscription, alerts on: the two applies of
# infra/scripts/deploy.sh (stage 1 without an image digest, stage 2 with
# the pushed one) with its variables, one after the other in one state, on
# a mocked provider whose workspace has no table at all. Nothing is read at
# plan time but the caller's own identity (no table either:
# test/azure TestOffline_FirstDeployReadsNothingAtPlanTime checks every data
# block), the rules are created after the diagnostic settings that fill
# their table, and without Azure resolving it at creation.

# The mock answers every create with ids of ARM's shape (the provider
# parses the ids one resource passes to another); it holds no log table.
mock_provider "azurerm" {
  mock_data "azurerm_client_config" {
    defaults = {
      subscription_id = "00000000-0000-0000-0000-000000000001"
      tenant_id       = "00000000-0000-0000-0000-000000000002"
      object_id       = "00000000-0000-0000-0000-000000000003"
    }
  }
  mock_resource "azurerm_resource_group" {
    defaults = { id = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg-blobleader" }
  }
  mock_resource "azurerm_storage_account" {
    defaults = {
      id                    = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg-blobleader/providers/Microsoft.Storage/storageAccounts/stblobleadertest"
      primary_blob_endpoint = "https://stblobleadertest.blob.core.windows.net/"
    }
  }
  mock_resource "azurerm_storage_container" {
    defaults = { id = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg-blobleader/providers/Microsoft.Storage/storageAccounts/stblobleadertest/blobServices/default/containers/leases" }
  }
  mock_resource "azurerm_user_assigned_identity" {
    defaults = {
      id           = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg-blobleader/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id-blobleader-worker"
      client_id    = "11111111-1111-1111-1111-111111111111"
      principal_id = "22222222-2222-2222-2222-222222222222"
    }
  }
  mock_resource "azurerm_container_registry" {
    defaults = {
      id           = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg-blobleader/providers/Microsoft.ContainerRegistry/registries/crblobleadertest"
      login_server = "crblobleadertest.azurecr.io"
    }
  }
  mock_resource "azurerm_log_analytics_workspace" {
    defaults = {
      id                 = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg-blobleader/providers/Microsoft.OperationalInsights/workspaces/log-blobleader"
      workspace_id       = "44444444-4444-4444-4444-444444444444"
      primary_shared_key = "mock-workspace-key"
    }
  }
  mock_resource "azurerm_container_group" {
    defaults = { id = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg-blobleader/providers/Microsoft.ContainerInstance/containerGroups/ci-blobleader-worker" }
  }
  mock_resource "azurerm_monitor_action_group" {
    defaults = { id = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg-blobleader/providers/Microsoft.Insights/actionGroups/ag-blobleader" }
  }
  mock_resource "azurerm_role_assignment" {
    defaults = { id = "/subscriptions/00000000-0000-0000-0000-000000000001/providers/Microsoft.Authorization/roleAssignments/33333333-3333-3333-3333-333333333333" }
  }
  mock_resource "azurerm_monitor_diagnostic_setting" {
    defaults = { id = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg-blobleader/providers/Microsoft.ContainerInstance/containerGroups/ci-blobleader-worker|diag-blobleader-logs" }
  }
  mock_resource "azurerm_monitor_scheduled_query_rules_alert_v2" {
    defaults = { id = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg-blobleader/providers/Microsoft.Insights/scheduledQueryRules/alert-blobleader" }
  }
}

# deploy.sh: common_vars (location, worker_count), the signed-in operator,
# and the receiver docs/deploy.md exports as TF_VAR_alerts.
variables {
  location               = "eastus"
  worker_count           = 3
  operator_principal_ids = ["55555555-5555-5555-5555-555555555555"]
  alerts                 = { email_receivers = ["oncall@example.com"] }
}

run "stage_1_applies_without_groups" {
  command = apply

  variables {
    image_digest = ""
  }

  assert {
    condition     = length(azurerm_container_group.worker) == 0 && length(azurerm_monitor_diagnostic_setting.groups) == 0 && length(azurerm_monitor_scheduled_query_rules_alert_v2.this) == 0 && length(azurerm_monitor_action_group.alerts) == 1
    error_message = "Stage 1 creates the action group but no group, diagnostic setting or rule."
  }
}

run "stage_2_applies_groups_settings_and_rules" {
  command = apply

  variables {
    image_digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
  }

  assert {
    condition     = length(azurerm_container_group.worker) == 3 && length(azurerm_monitor_diagnostic_setting.groups) == 3 && length(azurerm_monitor_scheduled_query_rules_alert_v2.this) == 10
    error_message = "Stage 2 on the state stage 1 left creates the three groups, their diagnostic settings and the ten rules in one apply."
  }
  assert {
    condition     = alltrue([for r in azurerm_monitor_scheduled_query_rules_alert_v2.this : r.skip_query_validation && r.enabled])
    error_message = "Every rule is created enabled and without query validation (its table has no line yet)."
  }
  assert {
    condition     = length(output.alert_rule_ids) == 10 && length(output.alert_queries) == 10
    error_message = "The outputs make verify-azure reads name every rule and its query."
  }
}

run "a_second_deploy_plans_cleanly_on_the_same_state" {
  # `make deploy` again (deploy.sh reads the digest from the state first):
  # stage 1 with the digest keeps the groups, nothing is read.
  command = plan

  variables {
    image_digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
  }

  assert {
    condition     = length(azurerm_container_group.worker) == 3 && length(azurerm_monitor_scheduled_query_rules_alert_v2.this) == 10
    error_message = "A re-run keeps the groups and the rules."
  }
}
