locals {
  # GitHub's OIDC issuer and the audience Entra expects for a federated token.
  github_issuer = "https://token.actions.githubusercontent.com"
  audience      = "api://AzureADTokenExchange"

  subjects = merge(
    { environment = "repo:${var.github_repository}:environment:${var.github_environment}" },
    { for i, s in var.extra_subjects : format("extra-%02d", i + 1) => s },
  )

  # What the Azure suite's Terraform and faults do (infra/, test/azure):
  # create and delete resource groups; storage accounts with containers;
  # user-assigned identities (and attach them to container groups); a
  # registry (and push to it); container groups (stop, start, exec); a Log
  # Analytics workspace (its key goes to the groups); the alerts' action
  # group and rules and the groups' diagnostic settings; register the six
  # resource providers; read anything. Role assignments are not here: they
  # come from the constrained RBAC administrator assignment below.
  suite_actions = [
    "*/read",
    "Microsoft.Resources/subscriptions/resourceGroups/write",
    "Microsoft.Resources/subscriptions/resourceGroups/delete",
    "Microsoft.ContainerInstance/register/action",
    "Microsoft.ContainerRegistry/register/action",
    "Microsoft.Insights/register/action",
    "Microsoft.ManagedIdentity/register/action",
    "Microsoft.OperationalInsights/register/action",
    "Microsoft.Storage/register/action",
    "Microsoft.Storage/storageAccounts/*",
    "Microsoft.ManagedIdentity/userAssignedIdentities/*",
    "Microsoft.ContainerRegistry/registries/*",
    "Microsoft.ContainerInstance/containerGroups/*",
    "Microsoft.OperationalInsights/workspaces/*",
    "Microsoft.Insights/actionGroups/*",
    "Microsoft.Insights/scheduledQueryRules/*",
    "Microsoft.Insights/diagnosticSettings/*",
  ]
  # No account keys: azurerm tolerates a 403 on ListKeys, so they never
  # reach the suite's Terraform state (docs/security.md).
  suite_not_actions = [
    "Microsoft.Storage/storageAccounts/listKeys/action",
    "Microsoft.Storage/storageAccounts/regeneratekey/action",
  ]

  # The only roles the CI identity may assign (and remove): the data roles
  # and AcrPull that infra/ grants.
  assignable_role_ids = {
    "Storage Blob Data Contributor" = "ba92f5b4-2d11-453d-a403-e96b0029c9fe"
    "Storage Blob Data Reader"      = "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1"
    "AcrPull"                       = "7f951dda-4ed3-4680-a7ca-43fe172d538d"
  }
  assignable_guids = join(", ", values(local.assignable_role_ids))
  # Azure RBAC condition (version 2.0): role assignment writes and deletes
  # only for those role definitions.
  assignment_condition = join("", [
    "((!(ActionMatches{'Microsoft.Authorization/roleAssignments/write'})) OR ",
    "(@Request[Microsoft.Authorization/roleAssignments:RoleDefinitionId] ForAnyOfAnyValues:GuidEquals {${local.assignable_guids}})) AND ",
    "((!(ActionMatches{'Microsoft.Authorization/roleAssignments/delete'})) OR ",
    "(@Resource[Microsoft.Authorization/roleAssignments:RoleDefinitionId] ForAnyOfAnyValues:GuidEquals {${local.assignable_guids}}))",
  ])

  contributor_role_id = "${data.azurerm_subscription.current.id}/providers/Microsoft.Authorization/roleDefinitions/b24988ac-6180-42a0-ab88-20f7382dd24c"

  tags = merge({ project = "blobleader", purpose = "ci-identity" }, var.tags)
}
