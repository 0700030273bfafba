# The `shards` variable passes --shards (as BLOBLEADER_SHARDS) to every worker
# container group; 0 keeps the single-task mode and sets nothing. Bad values
# fail at plan with the variable's own message.

mock_provider "azurerm" {}

variables {
  location     = "eastus"
  image_digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
  # Alerts are on by default and need a receiver (alerts.tftest.hcl).
  alerts = { email_receivers = ["oncall@example.com"] }
}

run "single_task_mode_by_default" {
  command = plan

  assert {
    condition     = !contains(keys(azurerm_container_group.worker["01"].container[0].environment_variables), "BLOBLEADER_SHARDS")
    error_message = "With shards = 0 the workers must run in single-task mode (no BLOBLEADER_SHARDS)."
  }
}

run "shards_reach_every_worker" {
  command = plan

  variables {
    shards       = 16
    worker_count = 3
  }

  assert {
    condition     = alltrue([for k, g in azurerm_container_group.worker : g.container[0].environment_variables["BLOBLEADER_SHARDS"] == "16"])
    error_message = "Every worker must get BLOBLEADER_SHARDS=16: all workers of a pool run with the same N."
  }
}

run "shards_at_the_upper_edge" {
  command = plan
  variables {
    shards = 1024
  }
}

run "shards_above_1024" {
  command = plan
  variables {
    shards = 1025
  }
  expect_failures = [var.shards]
}

run "shards_negative" {
  command = plan
  variables {
    shards = -1
  }
  expect_failures = [var.shards]
}

run "shards_fractional" {
  command = plan
  variables {
    shards = 2.5
  }
  expect_failures = [var.shards]
}
