# The deployment's run-time choices that cost money or a working start when
# wrong: the credential the workers use, and the tags teardown-by-tag relies
# on (docs/testing-on-azure.md, "What is cleaned up").

mock_provider "azurerm" {}

variables {
  location     = "eastus"
  image_digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
  # Alerts are on by default and need a receiver (alerts.tftest.hcl).
  alerts = { email_receivers = ["oncall@example.com"] }
  tags = {
    purpose = "blobleader-azure-suite"
    run     = "abc123"
  }
  chaos_sidecar = {
    enabled                  = true
    image                    = "crblobleadertest.azurecr.io/blobleader/chaos@sha256:89abcdef0123456789abcdef0123456789abcdef0123456789abcdef01234567"
    controller_principal_ids = ["55555555-5555-5555-5555-555555555555"]
  }
}

# DefaultAzureCredential in front of a managed identity probes the metadata
# endpoint with a fixed 1 s timeout first; named explicitly, the managed
# identity is the whole chain (worker/election/bloblock/token.go).
run "workers_and_sidecars_name_their_credential" {
  command = plan

  assert {
    condition = alltrue(flatten([
      for g in azurerm_container_group.worker : [
        for c in g.container : lookup(c.environment_variables, "AZURE_TOKEN_CREDENTIALS", "") == "ManagedIdentityCredential"
      ]
    ]))
    error_message = "Every container (worker and chaos sidecar) must set AZURE_TOKEN_CREDENTIALS = ManagedIdentityCredential."
  }
}

# Every resource that takes tags carries the run's: teardown finds a run's
# resource group by them when the Terraform state is gone.
run "every_taggable_resource_carries_the_run_tags" {
  command = plan

  assert {
    condition = alltrue([
      for tags in concat(
        [azurerm_resource_group.this.tags, azurerm_storage_account.this.tags, azurerm_user_assigned_identity.worker.tags,
        azurerm_container_registry.this.tags, azurerm_log_analytics_workspace.this.tags],
        [for g in azurerm_container_group.worker : g.tags],
      ) : tags["run"] == "abc123" && tags["purpose"] == "blobleader-azure-suite" && tags["project"] == "blobleader"
    ])
    error_message = "The resource group, storage account, identity, registry, workspace and every container group must carry var.tags (run, purpose) and project = blobleader."
  }
}
