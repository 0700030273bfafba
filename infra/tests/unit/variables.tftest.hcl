# Bad input must fail at plan, with the variable's own message, before anything
# reaches Azure. Election timing rules (DESIGN §2): 15 <= L <= 60 (whole seconds),
# 0 < D < L - 2, 0 < renew interval <= D / 3, retry period > 0.

mock_provider "azurerm" {}

variables {
  location     = "eastus"
  image_digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
  # Alerts are on by default and need a receiver (alerts.tftest.hcl).
  alerts = { email_receivers = ["oncall@example.com"] }
}

run "defaults_are_valid" {
  command = plan
}

run "timings_at_the_edges_are_valid" {
  command = plan

  variables {
    lease_duration_seconds   = 60
    renew_deadline_seconds   = 57
    renew_interval_seconds   = 19
    retry_period_seconds     = 0.5
    watchdog_timeout_seconds = 40
  }

  assert {
    condition     = azurerm_container_group.worker["01"].container[0].environment_variables["BLOBLEADER_RETRY_PERIOD"] == "0.5s"
    error_message = "Fractional seconds must reach the worker as a Go duration (0.5s)."
  }
}

run "lease_duration_below_azure_minimum" {
  command = plan
  variables {
    lease_duration_seconds = 14
    renew_deadline_seconds = 10
  }
  expect_failures = [var.lease_duration_seconds]
}

run "lease_duration_above_azure_maximum" {
  command = plan
  variables {
    lease_duration_seconds = 61
  }
  expect_failures = [var.lease_duration_seconds]
}

run "lease_duration_fractional" {
  command = plan
  variables {
    lease_duration_seconds = 15.5
  }
  expect_failures = [var.lease_duration_seconds]
}

run "renew_deadline_without_two_second_margin" {
  command = plan
  variables {
    lease_duration_seconds = 15
    renew_deadline_seconds = 13
  }
  expect_failures = [var.renew_deadline_seconds]
}

run "renew_deadline_zero" {
  command = plan
  variables {
    renew_deadline_seconds = 0
  }
  expect_failures = [var.renew_deadline_seconds]
}

run "renew_interval_zero" {
  command = plan
  variables {
    renew_interval_seconds = 0
  }
  expect_failures = [var.renew_interval_seconds]
}

run "renew_interval_above_a_third_of_the_deadline" {
  command = plan
  variables {
    renew_deadline_seconds = 10
    renew_interval_seconds = 3.5
  }
  expect_failures = [var.renew_interval_seconds]
}

run "retry_period_zero" {
  command = plan
  variables {
    retry_period_seconds = 0
  }
  expect_failures = [var.retry_period_seconds]
}

run "retry_period_below_the_floor" {
  command = plan
  variables {
    retry_period_seconds = 0.1
  }
  expect_failures = [var.retry_period_seconds]
}

run "tick_zero" {
  command = plan
  variables {
    tick_seconds = 0
  }
  expect_failures = [var.tick_seconds]
}

run "tick_above_an_hour" {
  command = plan
  variables {
    tick_seconds = 3601
  }
  expect_failures = [var.tick_seconds]
}

run "watchdog_shorter_than_renew_interval" {
  command = plan
  variables {
    watchdog_timeout_seconds = 1
  }
  expect_failures = [var.watchdog_timeout_seconds]
}

run "history_off" {
  command = plan
  variables {
    history_to_blob = false
  }
  assert {
    condition     = !contains(keys(azurerm_container_group.worker["01"].container[0].environment_variables), "BLOBLEADER_HISTORY")
    error_message = "history_to_blob = false must leave BLOBLEADER_HISTORY unset."
  }
}

run "worker_count_zero" {
  command = plan
  variables {
    worker_count = 0
  }
  expect_failures = [var.worker_count]
}

run "worker_count_above_twenty" {
  command = plan
  variables {
    worker_count = 21
  }
  expect_failures = [var.worker_count]
}

run "name_prefix_not_storage_safe" {
  command = plan
  variables {
    name_prefix = "Blob-Leader"
  }
  expect_failures = [var.name_prefix]
}

run "location_display_name" {
  command = plan
  variables {
    location = "East US"
  }
  expect_failures = [var.location]
}

run "image_digest_is_a_tag" {
  command = plan
  variables {
    image_digest = "latest"
  }
  expect_failures = [var.image_digest]
}

run "zone_that_does_not_exist" {
  command = plan
  variables {
    zones = ["1", "4"]
  }
  expect_failures = [var.zones]
}

run "registry_sku_unknown" {
  command = plan
  variables {
    registry_sku = "Free"
  }
  expect_failures = [var.registry_sku]
}

run "lease_container_clashes_with_history" {
  command = plan
  variables {
    lease_container_name = "history"
  }
  expect_failures = [var.lease_container_name]
}

run "lease_blob_with_slash" {
  command = plan
  variables {
    lease_blob_name = "a/b"
  }
  expect_failures = [var.lease_blob_name]
}

run "lease_blob_name_trailing_dot" {
  command = plan
  variables {
    lease_blob_name = "leader."
  }
  expect_failures = [var.lease_blob_name]
}

run "operator_id_not_a_guid" {
  command = plan
  variables {
    operator_principal_ids = ["alice@example.com"]
  }
  expect_failures = [var.operator_principal_ids]
}

run "chaos_sidecar_enabled_without_image" {
  command = plan
  variables {
    chaos_sidecar = { enabled = true }
  }
  expect_failures = [var.chaos_sidecar]
}

run "chaos_sidecar_image_by_tag" {
  command = plan
  variables {
    chaos_sidecar = { enabled = true, image = "crblobleadertest.azurecr.io/blobleader/chaos:latest" }
  }
  expect_failures = [var.chaos_sidecar]
}

run "chaos_sidecar_on_the_worker_port" {
  command = plan
  variables {
    chaos_sidecar = { enabled = false, listen_port = 8080 }
  }
  expect_failures = [var.chaos_sidecar]
}

run "chaos_sidecar_control_on_the_proxy_port" {
  command = plan
  variables {
    chaos_sidecar = { enabled = false, listen_port = 10443, control_port = 10443 }
  }
  expect_failures = [var.chaos_sidecar]
}

run "chaos_sidecar_controller_not_a_guid" {
  command = plan
  variables {
    chaos_sidecar = { enabled = false, controller_principal_ids = ["me@example.com"] }
  }
  expect_failures = [var.chaos_sidecar]
}

run "chaos_sidecar_with_a_lease_container_named_chaos" {
  command = plan
  variables {
    lease_container_name = "chaos"
    chaos_sidecar        = { enabled = true, image = "crblobleadertest.azurecr.io/blobleader/chaos@sha256:89abcdef0123456789abcdef0123456789abcdef0123456789abcdef01234567" }
  }
  expect_failures = [var.chaos_sidecar]
}

run "worker_memory_too_small" {
  command = plan
  variables {
    worker_memory_gb = 0.05
  }
  expect_failures = [var.worker_memory_gb]
}

# Combinations each in range but unworkable together (the worker's own rules).
run "request_timeout_below_what_storage_answers_in" {
  command = plan
  variables {
    renew_deadline_seconds = 1.2
    renew_interval_seconds = 0.4
  }
  expect_failures = [var.renew_interval_seconds]
}

run "tick_above_the_watchdog" {
  command = plan
  variables {
    tick_seconds = 30
  }
  expect_failures = [var.watchdog_timeout_seconds]
}

run "tick_plus_append_timeout_above_the_watchdog" {
  command = plan
  variables {
    tick_seconds = 7
  }
  expect_failures = [var.watchdog_timeout_seconds]
}

run "append_timeout_above_the_watchdog" {
  command = plan
  variables {
    watchdog_timeout_seconds = 3
  }
  expect_failures = [var.watchdog_timeout_seconds]
}

run "tick_above_the_watchdog_is_fine_with_the_watchdog_off" {
  command = plan
  variables {
    tick_seconds             = 30
    watchdog_timeout_seconds = 0
  }
}

run "shard_coordinator_poll_above_the_watchdog" {
  command = plan
  variables {
    shards               = 4
    retry_period_seconds = 20
  }
  expect_failures = [var.watchdog_timeout_seconds]
}

# ACI takes CPU and memory requests in steps of 0.1 (a container group with
# 0.25 GB is refused at create time, long after plan): the defaults are such
# steps and other values fail at plan.
run "resource_defaults_are_tenths" {
  command = plan

  variables {
    chaos_sidecar = {
      enabled = true
      image   = "crblobleadertest.azurecr.io/blobleader/chaos@sha256:89abcdef0123456789abcdef0123456789abcdef0123456789abcdef01234567"
    }
  }

  assert {
    condition = alltrue(flatten([
      for c in azurerm_container_group.worker["01"].container : [
        abs(c.cpu * 10 - floor(c.cpu * 10 + 0.5)) < 0.000001,
        abs(c.memory * 10 - floor(c.memory * 10 + 0.5)) < 0.000001,
      ]
    ])) && length(azurerm_container_group.worker["01"].container) == 2
    error_message = "Every container's default cpu and memory (worker and chaos sidecar) must be a multiple of 0.1."
  }
}

run "worker_cpu_not_a_tenth" {
  command = plan
  variables {
    worker_cpu = 0.25
  }
  expect_failures = [var.worker_cpu]
}

run "worker_memory_not_a_tenth" {
  command = plan
  variables {
    worker_memory_gb = 0.55
  }
  expect_failures = [var.worker_memory_gb]
}

run "sidecar_memory_not_a_tenth" {
  command = plan
  variables {
    chaos_sidecar = {
      enabled   = true
      image     = "crblobleadertest.azurecr.io/blobleader/chaos@sha256:89abcdef0123456789abcdef0123456789abcdef0123456789abcdef01234567"
      cpu       = 0.2
      memory_gb = 0.25
    }
  }
  expect_failures = [var.chaos_sidecar]
}

run "tenths_are_accepted" {
  command = plan
  variables {
    worker_cpu       = 0.9
    worker_memory_gb = 0.7
    chaos_sidecar = {
      enabled   = true
      image     = "crblobleadertest.azurecr.io/blobleader/chaos@sha256:89abcdef0123456789abcdef0123456789abcdef0123456789abcdef01234567"
      cpu       = 0.1
      memory_gb = 0.3
    }
  }
}

# ACI allocates at least 1 vCPU and 1 GB to a container group (Microsoft
# Learn, "Container groups in Azure Container Instances", Minimum and
# maximum allocation): the defaults reach it, with and without the chaos
# sidecar, and a group that would not is refused at plan.
run "defaults_meet_acis_group_minimum" {
  command = plan

  assert {
    condition = alltrue([for g in azurerm_container_group.worker :
    sum([for c in g.container : c.cpu]) > 0.999999 && sum([for c in g.container : c.memory]) > 0.999999])
    error_message = "Every worker group must request at least 1 vCPU and 1 GB in all (ACI's minimum per group)."
  }
}

run "defaults_with_the_sidecar_meet_acis_group_minimum" {
  command = plan
  variables {
    chaos_sidecar = {
      enabled = true
      image   = "crblobleadertest.azurecr.io/blobleader/chaos@sha256:89abcdef0123456789abcdef0123456789abcdef0123456789abcdef01234567"
    }
  }

  assert {
    condition = alltrue([for g in azurerm_container_group.worker :
    length(g.container) == 2 && sum([for c in g.container : c.cpu]) > 0.999999 && sum([for c in g.container : c.memory]) > 0.999999])
    error_message = "Every worker group with its sidecar must request at least 1 vCPU and 1 GB in all."
  }
}

run "a_group_below_one_vcpu" {
  command = plan
  variables {
    worker_cpu = 0.5
  }
  expect_failures = [var.worker_cpu]
}

run "a_group_below_one_gb" {
  command = plan
  variables {
    worker_memory_gb = 0.5
  }
  expect_failures = [var.worker_memory_gb]
}

run "a_group_with_its_sidecar_below_the_minimum" {
  command = plan
  variables {
    worker_cpu       = 0.7
    worker_memory_gb = 0.6
    chaos_sidecar = {
      enabled = true
      image   = "crblobleadertest.azurecr.io/blobleader/chaos@sha256:89abcdef0123456789abcdef0123456789abcdef0123456789abcdef01234567"
    }
  }
  expect_failures = [var.worker_cpu, var.worker_memory_gb]
}
