# Early takeover (docs/failover.md#early-takeover): off by default; the fast
# profile reaches the worker through env twins; each rule fails at plan with
# the variable's own message.

mock_provider "azurerm" {}

variables {
  location     = "eastus"
  image_digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
  # Alerts are on by default and need a receiver (alerts.tftest.hcl).
  alerts = { email_receivers = ["oncall@example.com"] }
}

run "off_by_default" {
  command = plan

  assert {
    condition     = !contains(keys(azurerm_container_group.worker["01"].container[0].environment_variables), "BLOBLEADER_TAKEOVER_AFTER")
    error_message = "Early takeover must be off unless early_takeover.after_seconds is set."
  }
}

run "fast_profile" {
  command = plan

  variables {
    renew_deadline_seconds = 2
    renew_interval_seconds = 0.5
    retry_period_seconds   = 0.5
    early_takeover         = { after_seconds = 2, break_period_seconds = 4 }
  }

  assert {
    condition = (
      azurerm_container_group.worker["01"].container[0].environment_variables["BLOBLEADER_TAKEOVER_AFTER"] == "2s" &&
      azurerm_container_group.worker["01"].container[0].environment_variables["BLOBLEADER_BREAK_PERIOD"] == "4s"
    )
    error_message = "The fast profile's T and B must reach the worker as --takeover-after 2s and --break-period 4s."
  }
}

run "takeover_after_below_two_renew_intervals" {
  command = plan
  variables {
    renew_deadline_seconds = 2
    renew_interval_seconds = 0.5
    early_takeover         = { after_seconds = 0.9 }
  }
  expect_failures = [var.early_takeover]
}

run "break_period_below_deadline_plus_timeout" {
  command = plan
  variables {
    renew_deadline_seconds = 2
    renew_interval_seconds = 0.5
    early_takeover         = { after_seconds = 2, break_period_seconds = 2 }
  }
  expect_failures = [var.early_takeover]
}

# D + request timeout + 0.5 s exactly: no room for a break that storage ends
# up to a second early (it counts break periods in whole seconds).
run "break_period_without_rounding_room" {
  command = plan
  variables {
    renew_deadline_seconds = 2
    renew_interval_seconds = 0.5
    early_takeover         = { after_seconds = 2, break_period_seconds = 3 }
  }
  expect_failures = [var.early_takeover]
}

run "break_period_without_takeover" {
  command = plan
  variables {
    early_takeover = { break_period_seconds = 3 }
  }
  expect_failures = [var.early_takeover]
}

run "default_deadline_gains_nothing" {
  command = plan
  variables {
    early_takeover = { after_seconds = 4 }
  }
  expect_failures = [var.early_takeover]
}
