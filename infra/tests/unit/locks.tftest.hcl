# The `lock_service` variable deploys `blobleader locks` beside the workers:
# off by default (no container group), on with a subnet and a token
# (replicas on private IPs, the token a secure environment variable).

mock_provider "azurerm" {}

variables {
  location     = "eastus"
  image_digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
  alerts       = { email_receivers = ["oncall@example.com"] }
}

run "off_by_default" {
  command = plan

  assert {
    condition     = length(azurerm_container_group.locks) == 0
    error_message = "Without lock_service.enabled no lock service may be deployed."
  }
}

run "enabled_deploys_private_replicas_with_a_token" {
  command = plan

  variables {
    lock_service       = { enabled = true, replicas = 2, subnet_id = "/subscriptions/0/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/aci" }
    lock_service_token = "0123456789abcdef0123456789abcdef"
  }

  assert {
    condition     = length(azurerm_container_group.locks) == 2
    error_message = "replicas = 2 must deploy two lock service container groups."
  }
  assert {
    condition     = alltrue([for g in azurerm_container_group.locks : g.ip_address_type == "Private" && length(g.subnet_ids) == 1])
    error_message = "The lock service must listen on a private IP in the given subnet, never a public one."
  }
  assert {
    condition     = alltrue([for g in azurerm_container_group.locks : g.container[0].commands == tolist(["/blobleader", "locks"])])
    error_message = "The lock service container must run `blobleader locks`."
  }
  assert {
    condition     = alltrue([for g in azurerm_container_group.locks : g.container[0].environment_variables["BLOBLEADER_LISTEN"] == ":3500" && g.container[0].environment_variables["BLOBLEADER_STORE"] == "lockstore" && !contains(keys(g.container[0].environment_variables), "BLOBLEADER_LOCKS_TOKEN")])
    error_message = "The lock service gets --listen :3500 and --store through their env twins, and the token only as a secure variable."
  }
  assert {
    condition     = alltrue([for g in azurerm_container_group.locks : contains(keys(g.container[0].secure_environment_variables), "BLOBLEADER_LOCKS_TOKEN")])
    error_message = "The token must reach the service as a secure environment variable."
  }
}

run "enabled_without_a_subnet" {
  command = plan
  variables {
    lock_service       = { enabled = true }
    lock_service_token = "0123456789abcdef0123456789abcdef"
  }
  expect_failures = [var.lock_service]
}

run "enabled_without_a_token" {
  command = plan
  variables {
    lock_service = { enabled = true, subnet_id = "/subscriptions/0/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/aci" }
  }
  expect_failures = [azurerm_container_group.locks]
}

run "replicas_out_of_range" {
  command = plan
  variables {
    lock_service = { replicas = 0 }
  }
  expect_failures = [var.lock_service]
}

run "stage_1_creates_no_replica" {
  command = plan
  # Stage 1 of `make deploy` has no image yet: like the workers, the
  # replicas wait for stage 2 (an empty image would be refused by ACI).
  variables {
    image_digest       = ""
    lock_service       = { enabled = true, subnet_id = "/subscriptions/0/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/aci" }
    lock_service_token = "0123456789abcdef0123456789abcdef"
  }
  assert {
    condition     = length(azurerm_container_group.locks) == 0
    error_message = "No lock service replica before the image is pushed."
  }
}

run "replicas_meet_acis_group_minimum" {
  command = plan
  variables {
    lock_service       = { enabled = true, subnet_id = "/subscriptions/0/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/aci" }
    lock_service_token = "0123456789abcdef0123456789abcdef"
  }
  assert {
    condition     = alltrue([for g in azurerm_container_group.locks : g.container[0].cpu >= 1 && g.container[0].memory >= 1])
    error_message = "A lock replica is a container group of its own: at least 1 vCPU and 1 GB (ACI's minimum per group)."
  }
}

run "replica_below_the_minimum" {
  command = plan
  variables {
    lock_service = { cpu = 0.5, memory_gb = 0.5 }
  }
  expect_failures = [var.lock_service]
}

