terraform {
  # The module pins azurerm (~> 5.2) and configures it; this root adds nothing.
  required_version = ">= 1.11, < 2.0"
}
