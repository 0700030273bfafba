terraform {
  # 1.11: `override_during = plan` in mock providers, cross-variable validation (1.9+).
  required_version = ">= 1.11, < 2.0"

  required_providers {
    azurerm = {
      source = "hashicorp/azurerm"
      # Exactly the version the offline checks build and validate
      # (AZURERM_VERSION in infra/infra.mk; docs/deploy.md, "Offline checks"):
      # a bump changes both, and `make tf-lock` records its hashes.
      version = "5.2.0"
    }
  }
}

# This directory is the deployment root (`make deploy`), so it configures its
# provider. The subscription comes from ARM_SUBSCRIPTION_ID.
provider "azurerm" {
  # Every storage call Terraform makes is authorised with Entra ID, never with an
  # account key: the account has shared keys disabled.
  storage_use_azuread = true

  # azurerm 5.x registers no resource providers by default; register exactly the
  # ones this configuration uses.
  resource_provider_registrations = "none"
  resource_providers_to_register = [
    "Microsoft.ContainerInstance",
    "Microsoft.ContainerRegistry",
    # The action group, the log alert rules and the container groups'
    # diagnostic settings.
    "Microsoft.Insights",
    "Microsoft.ManagedIdentity",
    "Microsoft.OperationalInsights",
    "Microsoft.Storage",
  ]

  features {
    # azurerm deletes a workspace softly by default (14 days recoverable):
    # a redeploy with the same name_prefix would bring the old workspace and
    # its logs back, and one in another region would be refused the name.
    # `make destroy` (and the Azure suite's teardown) remove it for good.
    log_analytics_workspace {
      permanently_delete_on_destroy = true
    }
    storage {
      # Containers are created through ARM (`storage_account_id`), so apply never
      # needs the blob data plane, a key, or a network path to the account.
      data_plane_available = false
    }
  }
}
