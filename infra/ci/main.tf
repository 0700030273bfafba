# The identity GitHub Actions signs in as for `make test-azure`
# (.github/workflows/azure.yml): a user-assigned managed identity with a
# federated credential for the repository's `azure` environment. No client
# secret or certificate exists anywhere. Only azurerm is needed (no Entra
# app registration, so no azuread provider).

data "azurerm_subscription" "current" {}

resource "azurerm_resource_group" "this" {
  location = var.location
  name     = "rg-${var.name_prefix}-ci"
  tags     = local.tags
}

resource "azurerm_user_assigned_identity" "this" {
  location            = azurerm_resource_group.this.location
  name                = "id-${var.name_prefix}-ci"
  resource_group_name = azurerm_resource_group.this.name
  tags                = local.tags
}

resource "azurerm_federated_identity_credential" "github" {
  for_each = local.subjects

  audience                  = [local.audience]
  issuer                    = local.github_issuer
  name                      = "github-${each.key}"
  subject                   = each.value
  user_assigned_identity_id = azurerm_user_assigned_identity.this.id
}

# Narrower than Contributor: the resource types the suite creates, and no
# storage account keys. (Fallback: use_contributor.)
resource "azurerm_role_definition" "suite" {
  count = var.use_contributor ? 0 : 1

  name              = "${var.name_prefix} Azure suite (CI)"
  scope             = data.azurerm_subscription.current.id
  assignable_scopes = [data.azurerm_subscription.current.id]
  description       = "Deploy, fault and destroy the blobleader Azure test suite (infra/, test/azure); no role assignments, no storage keys."

  permissions {
    actions     = local.suite_actions
    not_actions = local.suite_not_actions
  }
}

# The suite creates a resource group per run, so the scope is the
# subscription.
resource "azurerm_role_assignment" "suite" {
  principal_id       = azurerm_user_assigned_identity.this.principal_id
  scope              = data.azurerm_subscription.current.id
  principal_type     = "ServicePrincipal"
  role_definition_id = var.use_contributor ? local.contributor_role_id : azurerm_role_definition.suite[0].role_definition_resource_id
  description        = "blobleader CI: deploy and fault the Azure test suite"
}

# infra/ grants the worker identity and the harness data roles and AcrPull;
# the CI identity may assign exactly those three roles and no other.
resource "azurerm_role_assignment" "assign_suite_roles" {
  principal_id         = azurerm_user_assigned_identity.this.principal_id
  scope                = data.azurerm_subscription.current.id
  condition            = local.assignment_condition
  condition_version    = "2.0"
  principal_type       = "ServicePrincipal"
  role_definition_name = "Role Based Access Control Administrator"
  description          = "blobleader CI: assign only Storage Blob Data Contributor/Reader and AcrPull"
}
