# Plan-only checks of the CI identity (docs/testing-on-azure.md, "CI") against
# a mocked azurerm provider: no credentials, no network.

mock_provider "azurerm" {
  override_during = plan

  mock_data "azurerm_subscription" {
    defaults = {
      id              = "/subscriptions/00000000-0000-0000-0000-000000000001"
      subscription_id = "00000000-0000-0000-0000-000000000001"
    }
  }

  mock_resource "azurerm_user_assigned_identity" {
    defaults = {
      id           = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg-blobleader-ci/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id-blobleader-ci"
      principal_id = "66666666-6666-6666-6666-666666666666"
      client_id    = "77777777-7777-7777-7777-777777777777"
    }
  }

  mock_resource "azurerm_role_definition" {
    defaults = {
      role_definition_resource_id = "/subscriptions/00000000-0000-0000-0000-000000000001/providers/Microsoft.Authorization/roleDefinitions/88888888-8888-8888-8888-888888888888"
    }
  }
}

variables {
  github_repository = "blobleader/blobleader"
  location          = "swedencentral"
}

run "federated_credential_for_the_repository_environment_only" {
  command = plan

  assert {
    condition     = keys(azurerm_federated_identity_credential.github) == ["environment"]
    error_message = "By default exactly one federated credential: the repository's azure environment."
  }
  assert {
    condition = alltrue([for c in azurerm_federated_identity_credential.github :
      c.issuer == "https://token.actions.githubusercontent.com" && c.audience == tolist(["api://AzureADTokenExchange"]) &&
      c.subject == "repo:blobleader/blobleader:environment:azure" && c.user_assigned_identity_id == azurerm_user_assigned_identity.this.id
    ])
    error_message = "The credential must trust GitHub's issuer, Entra's exchange audience and the subject repo:<owner/name>:environment:azure, for the CI identity."
  }
}

run "roles_are_scoped_and_constrained" {
  command = plan

  assert {
    condition = (azurerm_role_assignment.suite.scope == "/subscriptions/00000000-0000-0000-0000-000000000001" &&
      azurerm_role_assignment.suite.role_definition_id == azurerm_role_definition.suite[0].role_definition_resource_id &&
    azurerm_role_assignment.suite.principal_id == "66666666-6666-6666-6666-666666666666")
    error_message = "The CI identity gets the custom suite role on the subscription."
  }
  assert {
    condition = alltrue([for a in azurerm_role_definition.suite[0].permissions[0].actions :
      !startswith(a, "Microsoft.Authorization/") && a != "*"
    ]) && contains(azurerm_role_definition.suite[0].permissions[0].not_actions, "Microsoft.Storage/storageAccounts/listKeys/action")
    error_message = "The custom role must not grant \"*\" or any Microsoft.Authorization action, and must exclude the storage account keys."
  }
  assert {
    condition = (azurerm_role_assignment.assign_suite_roles.role_definition_name == "Role Based Access Control Administrator" &&
      azurerm_role_assignment.assign_suite_roles.condition_version == "2.0" &&
      alltrue([for g in ["ba92f5b4-2d11-453d-a403-e96b0029c9fe", "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1", "7f951dda-4ed3-4680-a7ca-43fe172d538d"] :
      length(regexall(g, azurerm_role_assignment.assign_suite_roles.condition)) == 2]) &&
      strcontains(azurerm_role_assignment.assign_suite_roles.condition, "roleAssignments/write") &&
    strcontains(azurerm_role_assignment.assign_suite_roles.condition, "roleAssignments/delete"))
    error_message = "Role assignment writes and deletes must be limited to Storage Blob Data Contributor, Storage Blob Data Reader and AcrPull."
  }
  assert {
    condition     = length(regexall("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", azurerm_role_assignment.assign_suite_roles.condition)) == 6
    error_message = "The condition names exactly the three assignable roles, once for writes and once for deletes."
  }
}

run "contributor_fallback" {
  command = plan

  variables {
    use_contributor = true
  }

  assert {
    condition     = length(azurerm_role_definition.suite) == 0 && endswith(azurerm_role_assignment.suite.role_definition_id, "/roleDefinitions/b24988ac-6180-42a0-ab88-20f7382dd24c")
    error_message = "use_contributor assigns the built-in Contributor role and defines no custom role."
  }
}

run "extra_subject" {
  command = plan

  variables {
    extra_subjects = ["repo:blobleader/blobleader:ref:refs/heads/main"]
  }

  assert {
    condition     = output.federated_subjects == ["repo:blobleader/blobleader:environment:azure", "repo:blobleader/blobleader:ref:refs/heads/main"]
    error_message = "extra_subjects add credentials beside the environment one."
  }
}

run "subject_of_another_repository" {
  command = plan
  variables {
    extra_subjects = ["repo:someone/else:ref:refs/heads/main"]
  }
  expect_failures = [var.extra_subjects]
}

run "repository_not_owner_slash_name" {
  command = plan
  variables {
    github_repository = "https://github.com/blobleader/blobleader"
  }
  expect_failures = [var.github_repository]
}
