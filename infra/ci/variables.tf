variable "github_repository" {
  type        = string
  description = "The GitHub repository whose workflows may sign in as the CI identity, as `owner/name` (the `repo:` part of GitHub's OIDC subject)."
  nullable    = false

  validation {
    condition     = can(regex("^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$", var.github_repository))
    error_message = "github_repository must be owner/name, e.g. \"blobleader/blobleader\"."
  }
}

variable "location" {
  type        = string
  description = "Azure region of the identity's resource group, e.g. `swedencentral`."
  nullable    = false

  validation {
    condition     = can(regex("^[a-z][a-z0-9]{2,29}$", var.location))
    error_message = "location must be an Azure region name in lower case without spaces, e.g. \"swedencentral\"."
  }
}

variable "extra_subjects" {
  type        = list(string)
  default     = []
  description = <<-EOT
    More OIDC subjects that may sign in, each a full GitHub subject claim such
    as `repo:owner/name:ref:refs/heads/main` (a job without an environment).
    Keep it short: every subject is a way in.
  EOT
  nullable    = false

  validation {
    condition     = alltrue([for s in var.extra_subjects : startswith(s, "repo:${var.github_repository}:")])
    error_message = "extra_subjects must be subjects of github_repository, starting with \"repo:<github_repository>:\"."
  }
}

variable "github_environment" {
  type        = string
  default     = "azure"
  description = <<-EOT
    The GitHub environment the Azure workflow's job runs in
    (.github/workflows/azure.yml, `environment: azure`). GitHub then issues the
    subject `repo:<owner/name>:environment:<name>`, which is the only one
    trusted by default; protect the environment (required reviewers, branch
    rules) to decide who may spend the subscription.
  EOT
  nullable    = false

  validation {
    condition     = can(regex("^[A-Za-z0-9_.-]{1,255}$", var.github_environment))
    error_message = "github_environment must be a GitHub environment name (letters, digits, '.', '_', '-')."
  }
}

variable "name_prefix" {
  type        = string
  default     = "blobleader"
  description = "Prefix of the identity, its resource group and the custom role."
  nullable    = false

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,30}$", var.name_prefix))
    error_message = "name_prefix must be 2-31 lower-case letters, digits or '-', starting with a letter."
  }
}

variable "tags" {
  type        = map(string)
  default     = {}
  description = "Tags added to the resource group and the identity (besides `project = blobleader`)."
  nullable    = false
}

variable "use_contributor" {
  type        = bool
  default     = false
  description = <<-EOT
    Grant the built-in Contributor role on the subscription instead of the
    custom role this configuration defines. The custom role is narrower (only
    the resource types the suite creates, and no storage account keys) but has
    not been proven against a real subscription yet; use this if a run fails
    with AuthorizationFailed on an action the custom role lacks.
  EOT
  nullable    = false
}
