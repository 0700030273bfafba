variable "location" {
  type        = string
  default     = "eastus"
  description = "Azure region to deploy to."
  nullable    = false
}

variable "image_digest" {
  type        = string
  default     = ""
  description = "Digest of the pushed worker image (`sha256:...`); empty creates everything but the container groups."
  nullable    = false
}

variable "alert_email_receivers" {
  type        = list(string)
  description = "E-mail addresses the deployment's alerts notify (at least one)."
  nullable    = false
}
