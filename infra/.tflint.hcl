# tflint configuration for infra/ (run by `make test-infra`, offline).
# The azurerm ruleset is built from source by infra/infra.mk into
# $TFLINT_PLUGIN_DIR (no `source`: nothing is downloaded).

config {
  call_module_type = "local"
}

plugin "terraform" {
  enabled = true
  preset  = "all"
}

plugin "azurerm" {
  enabled = true
}
