terraform {
  required_version = ">= 1.11, < 2.0"

  required_providers {
    azurerm = {
      source  = "hashicorp/azurerm"
      version = "5.2.0"
    }
  }
}

# A root of its own, applied once by someone allowed to create role
# definitions and assignments (Owner, or User Access Administrator plus
# Contributor): `terraform -chdir=infra/ci apply -var github_repository=…`.
# The subscription comes from ARM_SUBSCRIPTION_ID.
provider "azurerm" {
  resource_provider_registrations = "none"
  resource_providers_to_register  = ["Microsoft.ManagedIdentity"]

  features {}
}
