# --- Alerts ----------------------------------------------------------------------
#
# Azure Monitor log alerts over the JSON log lines of the workers (and of the
# lock service replicas) in the Log Analytics workspace, from the table
# var.log_route names: ContainerInstanceLog, which the groups' diagnostic
# settings fill (main.tf), or ContainerInstanceLog_CL of the legacy
# integration; one row per line, the line in `Message` (the documented
# columns, with their source: alerts/tables.json). The lines and their
# fields are a contract: docs/architecture.md#log-lines-the-alerts-read.
# What each alert means and what to check first: docs/operations.md#alerts.
#
# Every threshold is derived from this deployment's own timing (L, D, renew
# interval, P) or from the role propagation allowance; the few counts that
# are not (min_stalls, silent_minutes, failing_minutes, silent_hours) are
# named below with their reason.
#
# A first `make deploy` must succeed on an empty subscription: nothing here
# reads the workspace at plan time (a table the same apply fills cannot be
# read before it exists), and the rules are created after the diagnostic
# settings with query validation skipped, so their creation never depends
# on ingestion. make verify-azure then runs every query, as deployed,
# against the workspace and names a table or column that is missing.

locals {
  alerts_enabled = var.alerts.enabled
  # Rules watch workers, so they exist only once the worker groups do (stage 2
  # of `make deploy`); the action group exists as soon as alerts are on.
  alert_rules_enabled = local.alerts_enabled && local.worker_count > 0

  # Every storage call carries this deadline (docs/architecture.md#the-election).
  alert_request_timeout_seconds = min(var.renew_interval_seconds, var.renew_deadline_seconds / 3)
  # L1: after a crash, a new leader starts within L + 1.1·P + ε of the crashed
  # leader's last successful renew; ε is one request timeout (the acquire and
  # the term write that make the new leader).
  alert_failover_bound_seconds = var.lease_duration_seconds + 1.1 * var.retry_period_seconds + local.alert_request_timeout_seconds
  # A leader says so at least once per status interval (L, checked every P):
  # the time between two lines that show a leader is at most the leaderless time
  # plus L + P. The no-leader alert fires on a longer gap, so it never fires on a
  # failover within the bound.
  alert_leader_gap_seconds = ceil(local.alert_failover_bound_seconds + var.lease_duration_seconds + var.retry_period_seconds)
  # After an operator's forced break the old holder learns at its next renew:
  # two claims may overlap by one renew interval plus one request timeout.
  alert_break_overlap_seconds = var.renew_interval_seconds + local.alert_request_timeout_seconds
  # The 403 query must look back further than the propagation time it waits
  # out: the first allowed window at least 5 minutes longer.
  alert_forbidden_window_minutes = [for w in [10, 15, 30, 45, 60] : w if w >= var.alerts.rbac_propagation_minutes + 5][0]
  # As the API spells it (an hour is PT1H, never PT60M).
  alert_forbidden_window = local.alert_forbidden_window_minutes == 60 ? "PT1H" : "PT${local.alert_forbidden_window_minutes}M"
  # Shard mode: the pool is balanced again within BalanceBound = SettleBound
  # (L + 3·1.1·P + view TTL 2·(1.1·P + request timeout) + 3 request timeouts)
  # + SuspectFor (L + 1.1·P + request timeout) of the last membership change
  # (docs/architecture.md#shards); shards unowned for longer are not moving.
  alert_poll_seconds          = 1.1 * var.retry_period_seconds
  alert_balance_bound_seconds = 2 * var.lease_duration_seconds + 6 * local.alert_poll_seconds + 6 * local.alert_request_timeout_seconds
  alert_unowned_seconds       = ceil(local.alert_balance_bound_seconds)
  # Leaderships ended by the stall watchdog (no progress) in the window
  # before the no-progress alert fires: one may be a storage blip.
  alert_min_stalls = 2

  # No line from any worker for this long is its own, lower alert (no_logs):
  # no lines is not no leader (a new deployment, the daily cap, a broken
  # diagnostic setting). Past no_logs' six-hour window, silence is the
  # silent alert's (a two-day window, not resolved automatically).
  alert_silent_minutes = 15
  alert_silent_hours   = 6
  # Unexpected storage answers in this many minutes of a 15-minute window
  # are a failure that lasts (each process logs one line per L per operation
  # and code while it lasts, L <= 60 s); one or two minutes are a blip.
  alert_failing_minutes = 10
  # A worker still starting (no storage answer) after role assignments had
  # time to propagate cannot start: the same allowance as the 403s'.
  alert_startup_seconds = var.alerts.rbac_propagation_minutes * 60

  # The KQL of the rules lives in alerts/*.kql (`make test-kql`: the Kusto
  # language service against the documented table schema of each route, and
  # each query run on sample rows that must fire and rows that must not);
  # every rule starts from the processes' lines (workers.kql) or, for the
  # silence rules, from the table itself.
  alert_worker_groups = sort([for w in local.workers : w.name])
  alert_lock_groups   = sort(values(local.lock_replicas))
  alert_groups        = jsonencode(local.alert_worker_groups)
  # Rows of this deployment's blobleader containers (the chaos sidecar's
  # share the worker groups; the legacy table cannot tell them apart, and
  # workers.kql keeps only lines that carry their group's identity).
  alert_filter_container = local.log_source.container_column == "" ? "" : "${local.log_source.container_column} in (\"worker\", \"locks\") and "
  alert_filter           = "${local.alert_filter_container}${local.log_source.group_column} in (dynamic(${jsonencode(concat(local.alert_worker_groups, local.alert_lock_groups))}))"
  alert_worker_filter    = "${local.log_source.container_column == "" ? "" : "${local.log_source.container_column} == \"worker\" and "}${local.log_source.group_column} in (dynamic(${local.alert_groups}))"
  alert_worker_lines = templatefile("${path.module}/alerts/workers.kql", {
    table         = local.log_table
    filter        = local.alert_filter
    group_column  = local.log_source.group_column
    worker_groups = local.alert_groups
  })

  alert_rules = merge(local.alert_rules_election, { for k, v in local.alert_rules_shards : k => v if var.shards > 0 })

  alert_rules_shards = {
    shards_unowned = {
      display_name = "blobleader: shards assigned but owned by nobody"
      description  = "The pool's leader has seen assigned shards with no lease held for more than ${local.alert_unowned_seconds} s (the balance bound, SettleBound + SuspectFor): their work is not being done. docs/operations.md#alert-shards-unowned"
      severity     = 0
      window       = "PT15M"
      frequency    = "PT5M"
      threshold    = local.alert_unowned_seconds
      auto_resolve = true
      query        = templatefile("${path.module}/alerts/shards_unowned.kql", { workers = local.alert_worker_lines, unowned_seconds = local.alert_unowned_seconds })
    }
  }

  alert_rules_election = {
    no_progress = {
      display_name = "blobleader: leaders step down without making progress"
      description  = "At least ${local.alert_min_stalls} leaderships in 15 minutes ended by the stall watchdog: the leader task got no work done for ${var.watchdog_timeout_seconds} s (e.g. every ledger append refused). docs/operations.md#alert-no-progress"
      severity     = 1
      window       = "PT15M"
      frequency    = "PT5M"
      threshold    = local.alert_min_stalls
      auto_resolve = true
      query        = templatefile("${path.module}/alerts/no_progress.kql", { workers = local.alert_worker_lines, min_stalls = local.alert_min_stalls })
    }
    no_leader = {
      display_name = "blobleader: no leader for longer than the failover bound"
      description  = "Workers logged, but none showed a leader for more than ${local.alert_leader_gap_seconds} s (failover bound L + 1.1·P + request timeout = ${local.alert_failover_bound_seconds} s, plus one status interval L + P). Start-up (no storage answer yet) is not counted: that is the startup alert; no lines at all is the no-logs alert. docs/operations.md#alert-no-leader"
      severity     = 0
      window       = "PT15M"
      frequency    = "PT5M"
      threshold    = local.alert_leader_gap_seconds
      auto_resolve = true
      query        = templatefile("${path.module}/alerts/no_leader.kql", { workers = local.alert_worker_lines, gap_limit = local.alert_leader_gap_seconds })
    }
    two_leaders = {
      display_name = "blobleader: two workers claim leadership"
      description  = "Two workers' claims of leadership overlapped, beyond what an operator's forced break explains (${local.alert_break_overlap_seconds} s: renew interval + request timeout). Must never happen. docs/operations.md#alert-two-leaders"
      severity     = 0
      window       = "PT15M"
      frequency    = "PT5M"
      threshold    = local.alert_break_overlap_seconds
      auto_resolve = true
      query        = templatefile("${path.module}/alerts/two_leaders.kql", { workers = local.alert_worker_lines, break_overlap = local.alert_break_overlap_seconds, skew = var.alerts.clock_skew_seconds })
    }
    flapping = {
      display_name = "blobleader: leadership flapping"
      description  = "More than ${var.alerts.flapping_handovers} leaders started within 15 minutes. docs/operations.md#alert-flapping"
      severity     = 2
      window       = "PT15M"
      frequency    = "PT5M"
      threshold    = var.alerts.flapping_handovers
      auto_resolve = true
      query        = templatefile("${path.module}/alerts/flapping.kql", { workers = local.alert_worker_lines, max_handovers = var.alerts.flapping_handovers })
    }
    storage_forbidden = {
      display_name = "blobleader: storage 403s outlast RBAC propagation"
      description  = "A worker's or a lock service replica's storage requests have been refused with 403 for more than ${var.alerts.rbac_propagation_minutes} minutes. docs/operations.md#alert-storage-forbidden"
      severity     = 1
      window       = local.alert_forbidden_window
      frequency    = "PT5M"
      threshold    = var.alerts.rbac_propagation_minutes * 60
      auto_resolve = true
      query        = templatefile("${path.module}/alerts/storage_forbidden.kql", { workers = local.alert_worker_lines, forbidden_seconds = var.alerts.rbac_propagation_minutes * 60 })
    }
    unhealthy = {
      display_name = "blobleader: a worker's health check fails"
      description  = "A worker logged a failing health (what /healthz answers with 503: the election loop made no progress for a lease duration, ${var.lease_duration_seconds} s, a cancelled task did not return, or storage refuses the term write). docs/operations.md#alert-unhealthy"
      severity     = 1
      window       = "PT5M"
      frequency    = "PT5M"
      threshold    = var.lease_duration_seconds
      auto_resolve = true
      query        = templatefile("${path.module}/alerts/unhealthy.kql", { workers = local.alert_worker_lines })
    }
    no_logs = {
      display_name = "blobleader: no log lines from any worker"
      description  = "No worker line reached the workspace (${local.log_table}) for ${local.alert_silent_minutes} minutes after earlier ones did: every worker is gone, the workspace's daily cap was hit, or the log route stopped delivering. Not by itself a missing leader. docs/operations.md#alert-no-logs"
      severity     = 2
      window       = "PT6H"
      frequency    = "PT15M"
      threshold    = local.alert_silent_minutes * 60
      auto_resolve = true
      query        = templatefile("${path.module}/alerts/no_logs.kql", { table = local.log_table, worker_filter = local.alert_worker_filter, silent_minutes = local.alert_silent_minutes })
    }
    silent = {
      display_name = "blobleader: no log lines from any worker for hours"
      description  = "No worker line reached the workspace (${local.log_table}) for more than ${local.alert_silent_hours} hours after earlier ones did (the no-logs alert resolves when its 6-hour window empties). Not resolved automatically: close it once lines arrive again. docs/operations.md#alert-silent"
      severity     = 1
      window       = "P2D"
      frequency    = "PT1H"
      threshold    = local.alert_silent_hours * 3600
      auto_resolve = false
      query        = templatefile("${path.module}/alerts/silent.kql", { table = local.log_table, worker_filter = local.alert_worker_filter, silent_hours = local.alert_silent_hours })
    }
    startup = {
      display_name = "blobleader: a worker cannot start (no storage answer)"
      description  = "A worker has said `starting` (no storage answer since its process started) in every status line for ${var.alerts.rbac_propagation_minutes} minutes or more, past the time role assignments take to propagate: its token, its role, or storage is not there. docs/operations.md#alert-startup"
      severity     = 1
      window       = local.alert_forbidden_window
      frequency    = "PT5M"
      threshold    = local.alert_startup_seconds
      auto_resolve = true
      query        = templatefile("${path.module}/alerts/startup.kql", { workers = local.alert_worker_lines, startup_seconds = local.alert_startup_seconds })
    }
    storage_failing = {
      display_name = "blobleader: storage keeps failing"
      description  = "A worker or a lock service replica got unexpected storage answers (5xx, 429, timeouts, refused connections, other 4xx but 403) in at least ${local.alert_failing_minutes} of the last 15 minutes. docs/operations.md#alert-storage-failing"
      severity     = 2
      window       = "PT15M"
      frequency    = "PT5M"
      threshold    = local.alert_failing_minutes
      auto_resolve = true
      query        = templatefile("${path.module}/alerts/storage_failing.kql", { workers = local.alert_worker_lines, failing_minutes = local.alert_failing_minutes })
    }
  }
}

resource "azurerm_monitor_action_group" "alerts" {
  count = local.alerts_enabled ? 1 : 0

  name                = "ag-${var.name_prefix}"
  resource_group_name = azurerm_resource_group.this.name
  short_name          = substr("bl${var.name_prefix}", 0, 12)
  tags                = local.tags

  dynamic "email_receiver" {
    for_each = var.alerts.email_receivers
    content {
      name                    = "email-${email_receiver.key}"
      email_address           = email_receiver.value
      use_common_alert_schema = true
    }
  }
}

resource "azurerm_monitor_scheduled_query_rules_alert_v2" "this" {
  for_each = local.alert_rules_enabled ? local.alert_rules : {}

  location             = azurerm_resource_group.this.location
  name                 = "alert-${var.name_prefix}-${replace(each.key, "_", "-")}"
  resource_group_name  = azurerm_resource_group.this.name
  scopes               = [azurerm_log_analytics_workspace.this.id]
  severity             = each.value.severity
  evaluation_frequency = each.value.frequency
  window_duration      = each.value.window
  display_name         = each.value.display_name
  enabled              = true
  description          = each.value.description
  # Resolved when the query stops returning rows, so a healed fault clears
  # (all but the long-silence rule, whose window would empty by itself).
  auto_mitigation_enabled = each.value.auto_resolve
  # Created before the first line can have arrived (the table may not even
  # exist yet: the legacy one appears with its first line); make
  # verify-azure runs each query against the workspace instead.
  skip_query_validation = true
  tags                  = local.tags

  criteria {
    # Each query returns one row per violation; any row fires.
    query                   = each.value.query
    time_aggregation_method = "Count"
    operator                = "GreaterThan"
    threshold               = 0
  }

  action {
    action_groups = [azurerm_monitor_action_group.alerts[0].id]
    custom_properties = {
      threshold = tostring(each.value.threshold)
      runbook   = "docs/operations.md#alert-${replace(each.key, "_", "-")}"
    }
  }

  # After the routes that fill the table, never after a read of it.
  depends_on = [azurerm_monitor_diagnostic_setting.groups]
}
