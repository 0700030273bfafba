terraform {
  # The module pins azurerm (exactly 5.2.0, infra/terraform.tf) and configures it; this root adds nothing.
  required_version = ">= 1.11, < 2.0"
}
