# The plan `make destroy` runs (infra/scripts/destroy-plan_test.sh passes
# deploy.sh's own destroy arguments on the command line, in an environment
# with no TF_VAR_*). A destroy plans the configuration and validates every
# variable first; this plan validates the same variables.

mock_provider "azurerm" {
  override_during = plan

  mock_data "azurerm_client_config" {
    defaults = {
      subscription_id = "00000000-0000-0000-0000-000000000001"
      tenant_id       = "00000000-0000-0000-0000-000000000002"
      object_id       = "00000000-0000-0000-0000-000000000003"
    }
  }
}

run "destroy_plan_validates" {
  command = plan
}
