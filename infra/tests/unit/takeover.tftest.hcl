# Early takeover (docs/failover.md#early-takeover) and the timing profile:
# off by default; profile = "fast" reaches the worker as BLOBLEADER_PROFILE
# (the worker's bundle sets every timing flag), explicit early takeover as
# env twins; each rule fails at plan with the variable's own message.

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
    condition = (
      !contains(keys(azurerm_container_group.worker["01"].container[0].environment_variables), "BLOBLEADER_TAKEOVER_AFTER") &&
      !contains(keys(azurerm_container_group.worker["01"].container[0].environment_variables), "BLOBLEADER_PROFILE") &&
      azurerm_container_group.worker["01"].container[0].environment_variables["BLOBLEADER_RENEW_DEADLINE"] == "10s"
    )
    error_message = "Early takeover must be off, and the timing the variables', unless a profile or early_takeover.after_seconds is set."
  }
}

run "fast_profile" {
  command = plan

  variables {
    profile = "fast"
  }

  assert {
    condition = (
      azurerm_container_group.worker["01"].container[0].environment_variables["BLOBLEADER_PROFILE"] == "fast" &&
      !contains(keys(azurerm_container_group.worker["01"].container[0].environment_variables), "BLOBLEADER_RENEW_DEADLINE") &&
      !contains(keys(azurerm_container_group.worker["01"].container[0].environment_variables), "BLOBLEADER_TAKEOVER_AFTER") &&
      !contains(keys(azurerm_container_group.worker["01"].container[0].environment_variables), "BLOBLEADER_BREAK_PERIOD")
    )
    error_message = "profile = \"fast\" must reach the worker as BLOBLEADER_PROFILE=fast, with no timing env twin to override it."
  }
}

run "fast_profile_with_a_timing_variable" {
  command = plan
  variables {
    profile              = "fast"
    retry_period_seconds = 2
  }
  expect_failures = [var.profile]
}

run "unknown_profile" {
  command = plan
  variables {
    profile = "quick"
  }
  expect_failures = [var.profile]
}

run "explicit_fast_timing" {
  command = plan

  variables {
    renew_deadline_seconds = 1.5
    renew_interval_seconds = 0.5
    retry_period_seconds   = 0.5
    early_takeover         = { after_seconds = 2.25 }
  }

  assert {
    condition = (
      azurerm_container_group.worker["01"].container[0].environment_variables["BLOBLEADER_TAKEOVER_AFTER"] == "2.25s" &&
      !contains(keys(azurerm_container_group.worker["01"].container[0].environment_variables), "BLOBLEADER_BREAK_PERIOD")
    )
    error_message = "Early takeover's T must reach the worker as --takeover-after 2.25s, and no break period."
  }
}

# D 1.5 s + request timeout 0.5 s + 0.25 s = 2.25 s: 2 s is too early.
run "takeover_after_below_the_horizon" {
  command = plan
  variables {
    renew_deadline_seconds = 1.5
    renew_interval_seconds = 0.5
    retry_period_seconds   = 0.5
    early_takeover         = { after_seconds = 2 }
  }
  expect_failures = [var.early_takeover]
}

run "a_break_period_belongs_to_the_previous_design" {
  command = plan
  variables {
    renew_deadline_seconds = 1.5
    renew_interval_seconds = 0.5
    early_takeover         = { after_seconds = 2.25, break_period_seconds = 4 }
  }
  expect_failures = [var.early_takeover]
}

# With the default D 10 s the horizon is 12.25 s: allowed, if late.
run "default_deadline_takes_over_late" {
  command = plan
  variables {
    early_takeover = { after_seconds = 12.25 }
  }
}

run "takeover_after_not_below_the_lease" {
  command = plan
  variables {
    early_takeover = { after_seconds = 15 }
  }
  expect_failures = [var.early_takeover]
}
