# Plan-only checks of the Azure Monitor alerts (infra/alerts.tf) against a
# mocked azurerm provider: they exist, they page the action group, and each
# threshold is the one the election timing implies
# (docs/operations.md, "Alerts").

mock_provider "azurerm" {
  override_during = plan

  mock_data "azurerm_client_config" {
    defaults = {
      subscription_id = "00000000-0000-0000-0000-000000000001"
      tenant_id       = "00000000-0000-0000-0000-000000000002"
      object_id       = "00000000-0000-0000-0000-000000000003"
    }
  }

  mock_resource "azurerm_log_analytics_workspace" {
    defaults = {
      id                 = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg-blobleader/providers/Microsoft.OperationalInsights/workspaces/log-blobleader"
      workspace_id       = "44444444-4444-4444-4444-444444444444"
      primary_shared_key = "mock-workspace-key"
    }
  }

  mock_resource "azurerm_monitor_action_group" {
    defaults = {
      id = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg-blobleader/providers/Microsoft.Insights/actionGroups/ag-blobleader"
    }
  }
}

variables {
  location     = "eastus"
  name_suffix  = "test"
  image_digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
  alerts = {
    email_receivers = ["oncall@example.com", "lead@example.com"]
  }
}

run "alerts_are_on_by_default_and_need_a_receiver" {
  command = plan

  variables {
    alerts = {}
  }

  expect_failures = [var.alerts]
}

run "receivers_must_be_email_addresses" {
  command = plan

  variables {
    alerts = { email_receivers = ["oncall"] }
  }

  expect_failures = [var.alerts]
}

run "every_alert_exists_and_pages_the_action_group" {
  command = plan

  assert {
    condition     = length(azurerm_monitor_action_group.alerts) == 1 && tolist([for r in azurerm_monitor_action_group.alerts[0].email_receiver : r.email_address]) == tolist(["oncall@example.com", "lead@example.com"])
    error_message = "The action group must e-mail exactly the receivers given, in order."
  }
  assert {
    condition     = toset(keys(azurerm_monitor_scheduled_query_rules_alert_v2.this)) == toset(["no_leader", "two_leaders", "flapping", "storage_forbidden", "unhealthy", "no_logs", "no_progress", "silent", "startup", "storage_failing"])
    error_message = "Expected the ten alert rules of the single-task mode: no_leader, two_leaders, flapping, storage_forbidden, unhealthy, no_logs, no_progress, silent, startup, storage_failing."
  }
  assert {
    condition = alltrue([for r in azurerm_monitor_scheduled_query_rules_alert_v2.this :
    r.action[0].action_groups == tolist([azurerm_monitor_action_group.alerts[0].id]) && r.enabled && r.scopes == tolist([azurerm_log_analytics_workspace.this.id])])
    error_message = "Every rule must be enabled, query the deployment's workspace and notify the action group."
  }
  assert {
    condition = alltrue([for k, r in azurerm_monitor_scheduled_query_rules_alert_v2.this :
      r.criteria[0].time_aggregation_method == "Count" && r.criteria[0].operator == "GreaterThan" && r.criteria[0].threshold == 0 &&
      strcontains(r.criteria[0].query, contains(["no_logs", "silent"], k) ?
        "ContainerInstanceLog\n| where ContainerName == \"worker\" and ContainerGroup in (dynamic([\"ci-blobleader-worker-01\",\"ci-blobleader-worker-02\",\"ci-blobleader-worker-03\"]))" :
    "let lines = ContainerInstanceLog\n| where ContainerName in (\"worker\", \"locks\") and ContainerGroup in (dynamic([\"ci-blobleader-worker-01\",\"ci-blobleader-worker-02\",\"ci-blobleader-worker-03\"]))")])
    error_message = "Every rule must fire on any row of a query over the blobleader containers' lines in the resource-specific ContainerInstanceLog (the silence rules: the workers' alone), with the filter kql_check.js renders for it."
  }
  assert {
    # A first deploy creates the rules right after the diagnostic settings,
    # before the first line can have arrived: Azure must not resolve the
    # table at creation (make verify-azure runs every query afterwards).
    condition     = alltrue([for r in azurerm_monitor_scheduled_query_rules_alert_v2.this : r.skip_query_validation])
    error_message = "Every rule must be created with skip_query_validation: its table may not exist before the first line is ingested."
  }
}

run "default_timing_gives_the_default_thresholds" {
  command = plan

  # L = 15 s, D = 10 s, renew interval 2 s, P = 1 s: request timeout
  # min(2, 10/3) = 2 s; failover bound 15 + 1.1 + 2 = 18.1 s; leader-line gap
  # ceil(18.1 + 15 + 1) = 35 s; forced-break overlap 2 + 2 = 4 s.
  assert {
    condition     = output.alert_thresholds.failover_bound_seconds == 18.1 && output.alert_thresholds.no_leader_gap_seconds == 35
    error_message = "Default timing: failover bound 18.1 s and a no-leader gap of 35 s expected, got ${output.alert_thresholds.failover_bound_seconds} and ${output.alert_thresholds.no_leader_gap_seconds}."
  }
  assert {
    condition     = strcontains(azurerm_monitor_scheduled_query_rules_alert_v2.this["no_leader"].criteria[0].query, "let gap_limit = todouble(35);")
    error_message = "The no-leader query must fire on a gap longer than 35 s."
  }
  assert {
    condition     = strcontains(azurerm_monitor_scheduled_query_rules_alert_v2.this["two_leaders"].criteria[0].query, "let break_overlap = todouble(4);")
    error_message = "The two-leaders query must allow a forced break's 4 s overlap and no more."
  }
  assert {
    condition     = strcontains(azurerm_monitor_scheduled_query_rules_alert_v2.this["flapping"].criteria[0].query, "leaders_started > 4")
    error_message = "The flapping query must fire on more than 4 leaders started in its window."
  }
  assert {
    condition = (strcontains(azurerm_monitor_scheduled_query_rules_alert_v2.this["storage_forbidden"].criteria[0].query, ">= 900") &&
    azurerm_monitor_scheduled_query_rules_alert_v2.this["storage_forbidden"].window_duration == "PT30M")
    error_message = "The 403 query must fire on 403s spanning 15 minutes, looking back 30 minutes."
  }
  assert {
    condition     = azurerm_monitor_scheduled_query_rules_alert_v2.this["no_leader"].action[0].custom_properties["threshold"] == "35"
    error_message = "The notification must carry the no-leader threshold (35)."
  }
}

run "thresholds_follow_the_timing_variables" {
  command = plan

  variables {
    lease_duration_seconds = 30
    renew_deadline_seconds = 20
    renew_interval_seconds = 5
    retry_period_seconds   = 2
    # Above 2 x the 5 s request timeout (a ledger append's bound), or the
    # worker's own watchdog would step every leader down (variables.tf).
    watchdog_timeout_seconds = 15
    alerts = {
      email_receivers          = ["oncall@example.com"]
      flapping_handovers       = 7
      rbac_propagation_minutes = 40
    }
  }

  # Request timeout min(5, 20/3) = 5 s; failover bound 30 + 2.2 + 5 = 37.2 s;
  # gap ceil(37.2 + 30 + 2) = 70 s; forced-break overlap 5 + 5 = 10 s.
  assert {
    condition     = output.alert_thresholds.failover_bound_seconds == 37.2 && output.alert_thresholds.no_leader_gap_seconds == 70 && output.alert_thresholds.break_overlap_seconds == 10
    error_message = "Thresholds must follow L, D, renew interval and P: want 37.2, 70 and 10."
  }
  assert {
    condition     = strcontains(azurerm_monitor_scheduled_query_rules_alert_v2.this["no_leader"].criteria[0].query, "let gap_limit = todouble(70);")
    error_message = "The no-leader query must use the 70 s gap the timing implies."
  }
  assert {
    condition     = strcontains(azurerm_monitor_scheduled_query_rules_alert_v2.this["two_leaders"].criteria[0].query, "let break_overlap = todouble(10);")
    error_message = "The two-leaders query must use the 10 s overlap the timing implies."
  }
  assert {
    condition     = strcontains(azurerm_monitor_scheduled_query_rules_alert_v2.this["flapping"].criteria[0].query, "leaders_started > 7")
    error_message = "The flapping query must use alerts.flapping_handovers."
  }
  assert {
    condition = (strcontains(azurerm_monitor_scheduled_query_rules_alert_v2.this["storage_forbidden"].criteria[0].query, ">= 2400") &&
    azurerm_monitor_scheduled_query_rules_alert_v2.this["storage_forbidden"].window_duration == "PT45M")
    error_message = "A 40-minute propagation allowance must look back 45 minutes for 403s spanning 2400 s."
  }
  assert {
    condition     = strcontains(azurerm_monitor_scheduled_query_rules_alert_v2.this["unhealthy"].description, "30 s")
    error_message = "The health alert must state the lease duration the worker's health rule uses (30 s)."
  }
}

run "the_longest_propagation_allowance_looks_back_an_hour" {
  command = plan

  variables {
    alerts = {
      email_receivers          = ["oncall@example.com"]
      rbac_propagation_minutes = 55
    }
  }

  assert {
    condition     = azurerm_monitor_scheduled_query_rules_alert_v2.this["storage_forbidden"].window_duration == "PT1H"
    error_message = "55 minutes of propagation allowance need the one-hour window, spelt PT1H."
  }
}

run "no_rules_before_the_workers_exist" {
  command = plan

  variables {
    image_digest = ""
  }

  assert {
    condition     = length(azurerm_monitor_action_group.alerts) == 1 && length(azurerm_monitor_scheduled_query_rules_alert_v2.this) == 0
    error_message = "Stage 1 (no image yet, no worker groups): the action group but no rule (there is nothing to watch)."
  }
}

run "alerts_off_creates_nothing_and_needs_no_receiver" {
  command = plan

  variables {
    alerts = { enabled = false }
  }

  assert {
    condition     = length(azurerm_monitor_action_group.alerts) == 0 && length(azurerm_monitor_scheduled_query_rules_alert_v2.this) == 0 && output.alert_action_group_id == null
    error_message = "alerts.enabled = false must create no action group and no rule."
  }
  assert {
    condition     = toset(keys(output.alert_queries)) == toset(["no_leader", "two_leaders", "flapping", "storage_forbidden", "unhealthy", "no_logs", "no_progress", "silent", "startup", "storage_failing"]) && output.alert_queries["no_logs"].window == "PT6H"
    error_message = "The alert_queries output (what make verify-azure runs) must carry every rule's query and window, also with alerts off (the Azure suite)."
  }
}

run "no_logs_is_its_own_lower_rule" {
  command = plan

  # No lines is not no leader: a new deployment, the daily cap, a broken
  # diagnostic setting. The no-leader rule does not page on it; no_logs
  # warns (severity 2) once lines stop for 15 minutes.
  assert {
    condition = (azurerm_monitor_scheduled_query_rules_alert_v2.this["no_logs"].severity == 2 &&
      azurerm_monitor_scheduled_query_rules_alert_v2.this["no_logs"].severity > azurerm_monitor_scheduled_query_rules_alert_v2.this["no_leader"].severity &&
      azurerm_monitor_scheduled_query_rules_alert_v2.this["no_logs"].window_duration == "PT6H" &&
      azurerm_monitor_scheduled_query_rules_alert_v2.this["no_logs"].evaluation_frequency == "PT15M" &&
    strcontains(azurerm_monitor_scheduled_query_rules_alert_v2.this["no_logs"].criteria[0].query, "last_line < ago(15m)"))
    error_message = "no_logs must be a severity-2 rule over 6 hours, every 15 minutes, firing when the last worker line is older than 15 minutes."
  }
  assert {
    condition     = !strcontains(azurerm_monitor_scheduled_query_rules_alert_v2.this["no_leader"].criteria[0].query, "now()")
    error_message = "no_leader must not measure a gap against now(): with no lines at all it would page severity 0."
  }
}

run "logs_reach_the_alerts_table_through_a_diagnostic_setting" {
  command = plan

  assert {
    condition = length(azurerm_monitor_diagnostic_setting.groups) == 3 && alltrue([for k, d in azurerm_monitor_diagnostic_setting.groups :
      d.log_analytics_destination_type == "Dedicated" && d.log_analytics_workspace_id == azurerm_log_analytics_workspace.this.id &&
      toset([for l in d.enabled_log : l.category]) == toset(["ContainerInstanceLog", "ContainerEvent"])
    ])
    error_message = "Each worker group needs a diagnostic setting sending ContainerInstanceLog and ContainerEvent to the workspace's resource-specific tables (Dedicated)."
  }
  assert {
    condition     = output.log_analytics_workspace_guid == "44444444-4444-4444-4444-444444444444" && output.log_table == "ContainerInstanceLog" && output.log_route == { route = "diagnostic_setting", group_column = "ContainerGroup", container_column = "ContainerName", diagnostic_setting = "diag-blobleader-logs" }
    error_message = "The outputs must give the workspace GUID (what az monitor log-analytics query -w takes), not only its ARM id, the log table and its route."
  }
  assert {
    condition     = alltrue([for g in azurerm_container_group.worker : g.diagnostics[0].log_analytics[0].log_type == null || g.diagnostics[0].log_analytics[0].log_type == ""])
    error_message = "The legacy integration keeps Microsoft's documented form: no log_type."
  }
}

run "shard_mode_adds_the_unowned_shards_alert" {
  command = plan

  variables {
    shards = 8
  }

  # Default timing: balance bound 2·15 + 6·1.1 + 6·2 = 48.6 s, rounded up.
  assert {
    condition     = contains(keys(azurerm_monitor_scheduled_query_rules_alert_v2.this), "shards_unowned") && output.alert_thresholds.shards_unowned_seconds == 49
    error_message = "Shard mode must add the shards_unowned rule with a 49 s threshold (the balance bound), got ${output.alert_thresholds.shards_unowned_seconds}."
  }
  assert {
    condition = (strcontains(azurerm_monitor_scheduled_query_rules_alert_v2.this["shards_unowned"].criteria[0].query, "datetime_diff('second', t, since) > 49") &&
    strcontains(azurerm_monitor_scheduled_query_rules_alert_v2.this["shards_unowned"].criteria[0].query, "event == \"shards\""))
    error_message = "The unowned-shards query must read the leader's shards lines and fire past 49 s."
  }
  assert {
    condition     = strcontains(azurerm_monitor_scheduled_query_rules_alert_v2.this["no_progress"].criteria[0].query, "stalls >= 2")
    error_message = "The no-progress query must fire on two watchdog step-downs without progress in its window."
  }
}

run "legacy_route_reads_the_legacy_table_without_diagnostic_settings" {
  command = plan

  # For a subscription without ACI's diagnostic-settings preview: every group
  # keeps its legacy integration, and the alerts read what it fills.
  variables {
    log_route = "legacy"
  }

  assert {
    condition     = length(azurerm_monitor_diagnostic_setting.groups) == 0 && output.log_table == "ContainerInstanceLog_CL" && output.log_route.group_column == "ContainerGroup_s" && output.log_route.container_column == "" && output.log_route.diagnostic_setting == ""
    error_message = "log_route = legacy: no diagnostic setting, and the alerts' table is ContainerInstanceLog_CL grouped by ContainerGroup_s."
  }
  assert {
    condition = alltrue([for k, r in azurerm_monitor_scheduled_query_rules_alert_v2.this :
      strcontains(r.criteria[0].query, contains(["no_logs", "silent"], k) ?
        "ContainerInstanceLog_CL\n| where ContainerGroup_s in (dynamic([\"ci-blobleader-worker-01\",\"ci-blobleader-worker-02\",\"ci-blobleader-worker-03\"]))" :
    "let lines = ContainerInstanceLog_CL\n| where ContainerGroup_s in (dynamic([\"ci-blobleader-worker-01\",\"ci-blobleader-worker-02\",\"ci-blobleader-worker-03\"]))") && r.skip_query_validation])
    error_message = "With the legacy route every rule must read ContainerInstanceLog_CL by ContainerGroup_s (the filter kql_check.js renders), created without query validation (the table appears with its first line)."
  }
  assert {
    condition     = alltrue([for g in azurerm_container_group.worker : g.diagnostics[0].log_analytics[0].workspace_id == "44444444-4444-4444-4444-444444444444"])
    error_message = "Every worker group must keep the legacy integration (the workspace's GUID)."
  }
}

run "log_route_must_be_known" {
  command = plan

  variables {
    log_route = "eventhub"
  }

  expect_failures = [var.log_route]
}

run "new_rules_wait_for_start_up_and_cover_storage_and_silence" {
  command = plan

  # Default timing and allowance: a worker starting for 15 minutes (the
  # propagation allowance) fires startup; unexpected answers in 10 of 15
  # minutes fire storage_failing; silence past 6 hours fires silent, which
  # stays fired until closed.
  assert {
    condition = (azurerm_monitor_scheduled_query_rules_alert_v2.this["startup"].window_duration == "PT30M" &&
      strcontains(azurerm_monitor_scheduled_query_rules_alert_v2.this["startup"].criteria[0].query, "starting_lines == status_lines and datetime_diff('second', last_seen, first_seen) >= 900") &&
    output.alert_thresholds.startup_seconds == 900)
    error_message = "startup must fire on a worker starting for the 15-minute propagation allowance (900 s), looking back 30 minutes."
  }
  assert {
    condition = (azurerm_monitor_scheduled_query_rules_alert_v2.this["storage_failing"].window_duration == "PT15M" &&
      strcontains(azurerm_monitor_scheduled_query_rules_alert_v2.this["storage_failing"].criteria[0].query, "where minutes >= 10") &&
    strcontains(azurerm_monitor_scheduled_query_rules_alert_v2.this["storage_failing"].criteria[0].query, "tolong(j.status) != 403"))
    error_message = "storage_failing must fire on unexpected answers other than 403 in 10 of 15 minutes."
  }
  assert {
    condition = (azurerm_monitor_scheduled_query_rules_alert_v2.this["silent"].window_duration == "P2D" &&
      azurerm_monitor_scheduled_query_rules_alert_v2.this["silent"].evaluation_frequency == "PT1H" &&
      !azurerm_monitor_scheduled_query_rules_alert_v2.this["silent"].auto_mitigation_enabled &&
      azurerm_monitor_scheduled_query_rules_alert_v2.this["silent"].severity == 1 &&
      strcontains(azurerm_monitor_scheduled_query_rules_alert_v2.this["silent"].criteria[0].query, "last_line < ago(6h)") &&
    alltrue([for k, r in azurerm_monitor_scheduled_query_rules_alert_v2.this : r.auto_mitigation_enabled if k != "silent"]))
    error_message = "silent must look back two days every hour for a last line older than 6 hours, at severity 1, and stay fired until closed; every other rule resolves itself."
  }
  assert {
    condition     = strcontains(azurerm_monitor_scheduled_query_rules_alert_v2.this["no_leader"].criteria[0].query, "event in (\"status\", \"started_leading\", \"stopped_leading\") and not(starting)")
    error_message = "no_leader must not count the lines of a process still starting (start-up is not a time without a leader)."
  }
}

run "lock_service_is_logged_and_alerted_like_the_workers" {
  command = plan

  variables {
    lock_service       = { enabled = true, replicas = 2, subnet_id = "/subscriptions/0/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/aci" }
    lock_service_token = "0123456789abcdef0123456789abcdef"
  }

  assert {
    condition = length(azurerm_monitor_diagnostic_setting.groups) == 5 && alltrue([for k in ["locks-01", "locks-02"] :
      azurerm_monitor_diagnostic_setting.groups[k].log_analytics_destination_type == "Dedicated" &&
      toset([for l in azurerm_monitor_diagnostic_setting.groups[k].enabled_log : l.category]) == toset(["ContainerInstanceLog", "ContainerEvent"])
    ])
    error_message = "Each lock service group needs the workers' diagnostic setting."
  }
  assert {
    condition     = alltrue([for g in azurerm_container_group.locks : g.diagnostics[0].log_analytics[0].log_type == null || g.diagnostics[0].log_analytics[0].log_type == ""])
    error_message = "The lock service groups keep Microsoft's documented legacy form, as the workers do: no log_type (it was ContainerInsights)."
  }
  assert {
    condition = alltrue([for k in ["storage_forbidden", "storage_failing"] :
    strcontains(azurerm_monitor_scheduled_query_rules_alert_v2.this[k].criteria[0].query, "ContainerName in (\"worker\", \"locks\") and ContainerGroup in (dynamic([\"ci-blobleader-worker-01\",\"ci-blobleader-worker-02\",\"ci-blobleader-worker-03\",\"blobleader-locks-01\",\"blobleader-locks-02\"]))")])
    error_message = "The storage alerts must read the lock service replicas' lines too."
  }
  assert {
    condition     = alltrue([for g in azurerm_container_group.locks : g.container[0].readiness_probe[0].http_get[0].path == "/readyz" && g.container[0].liveness_probe[0].http_get[0].path == "/healthz"])
    error_message = "A lock replica's storage is readiness (/readyz), its liveness /healthz."
  }
  assert {
    condition     = output.lock_group_names == ["blobleader-locks-01", "blobleader-locks-02"]
    error_message = "The outputs must name the lock service groups (make verify-azure checks their lines)."
  }
}
