locals {
  # Globally unique names (storage account, registry) get a short, stable suffix
  # derived from the subscription, the prefix and the region unless one is given.
  name_suffix = coalesce(
    var.name_suffix,
    substr(sha256("${data.azurerm_client_config.current.subscription_id}/${var.name_prefix}/${var.location}"), 0, 8),
  )

  resource_group_name  = coalesce(var.resource_group_name, "rg-${var.name_prefix}")
  storage_account_name = "st${var.name_prefix}${local.name_suffix}"
  registry_name        = "cr${var.name_prefix}${local.name_suffix}"
  identity_name        = "id-${var.name_prefix}-worker"
  log_analytics_name   = "log-${var.name_prefix}"

  # The worker's contract (DESIGN §3): `--container` holds the lease blob and the
  # fenced ledger (`<blob>-ledger/…`); `--history blob` appends to `history`.
  # With the chaos sidecar (test suites only), a third container holds its
  # fault plans and states (chaos/sidecar).
  storage_containers = merge({
    leases  = var.lease_container_name
    history = "history"
  }, var.chaos_sidecar.enabled ? { chaos = "chaos" } : {})

  # The test harness writes plans (chaos) and breaks the lease (leases).
  chaos_controller_roles = var.chaos_sidecar.enabled ? {
    for pair in setproduct(var.chaos_sidecar.controller_principal_ids, ["leases", "chaos"]) :
    "${pair[1]}/${pair[0]}" => { principal_id = pair[0], container = pair[1] }
  } : {}

  operator_container_roles = {
    for pair in setproduct(var.operator_principal_ids, keys(local.storage_containers)) :
    "${pair[1]}/${pair[0]}" => { principal_id = pair[0], container = pair[1] }
  }

  # Stage 1 of `make deploy` has no digest yet: no container groups then.
  image_reference = var.image_digest == "" ? "" : "${azurerm_container_registry.this.login_server}/${var.image_repository}@${var.image_digest}"
  worker_count    = var.image_digest == "" ? 0 : var.worker_count

  # One group per zone, round-robin, where the region has zones.
  workers = {
    for i in range(local.worker_count) : format("%02d", i + 1) => {
      name = format("ci-%s-worker-%02d", var.name_prefix, i + 1)
      zone = length(var.zones) == 0 ? null : var.zones[i % length(var.zones)]
    }
  }

  worker_port = 8080

  # Where the groups' lines land for the alerts (var.log_route; both tables
  # and their columns, with sources: alerts/tables.json). The diagnostic
  # settings send the categories below to the resource-specific tables; the
  # legacy integration every group carries fills ContainerInstanceLog_CL,
  # which has no container-name column.
  log_sources = {
    diagnostic_setting = { table = "ContainerInstanceLog", group_column = "ContainerGroup", container_column = "ContainerName" }
    legacy             = { table = "ContainerInstanceLog_CL", group_column = "ContainerGroup_s", container_column = "" }
  }
  log_source     = local.log_sources[var.log_route]
  log_table      = local.log_source.table
  log_categories = ["ContainerInstanceLog", "ContainerEvent"]
  # The groups that get a diagnostic setting (main.tf, locks.tf).
  diagnostic_settings = var.log_route == "diagnostic_setting"

  # Flags through their env twins (BLOBLEADER_<FLAG>), DESIGN §3.
  worker_environment = merge(var.history_to_blob ? { BLOBLEADER_HISTORY = "blob" } : {}, var.shards > 0 ? { BLOBLEADER_SHARDS = tostring(var.shards) } : {}, var.chaos_sidecar.enabled ? {
    # Every election and ledger connection goes to the sidecar's loopback
    # proxy; TLS still verifies the storage host (worker --storage-dial).
    BLOBLEADER_STORAGE_DIAL = "127.0.0.1:${var.chaos_sidecar.listen_port}"
    # The sidecar asks the worker for a graceful stop here (POST /stop; the
    # worker SIGTERMs itself): ACI has no documented graceful stop.
    BLOBLEADER_CONTROL_LISTEN = "127.0.0.1:${var.chaos_sidecar.control_port}"
    } : {}, {
    AZURE_CLIENT_ID = azurerm_user_assigned_identity.worker.client_id
    # The one credential, named: DefaultAzureCredential then skips its 1 s
    # metadata-endpoint probe, which ACI's slow first answer can fail
    # (worker/election/bloblock/token.go).
    AZURE_TOKEN_CREDENTIALS     = "ManagedIdentityCredential"
    BLOBLEADER_ACCOUNT_URL      = azurerm_storage_account.this.primary_blob_endpoint
    BLOBLEADER_CONTAINER        = var.lease_container_name
    BLOBLEADER_BLOB             = var.lease_blob_name
    BLOBLEADER_LEASE_DURATION   = "${var.lease_duration_seconds}s"
    BLOBLEADER_RENEW_DEADLINE   = "${var.renew_deadline_seconds}s"
    BLOBLEADER_RENEW_INTERVAL   = "${var.renew_interval_seconds}s"
    BLOBLEADER_RETRY_PERIOD     = "${var.retry_period_seconds}s"
    BLOBLEADER_TICK             = "${var.tick_seconds}s"
    BLOBLEADER_LISTEN           = ":${local.worker_port}"
    BLOBLEADER_LOG_FORMAT       = "json"
    BLOBLEADER_WATCHDOG_TIMEOUT = "${var.watchdog_timeout_seconds}s"
    }, var.early_takeover.after_seconds > 0 ? {
    # Early takeover (docs/failover.md#early-takeover).
    BLOBLEADER_TAKEOVER_AFTER = "${var.early_takeover.after_seconds}s"
    BLOBLEADER_BREAK_PERIOD   = "${var.early_takeover.break_period_seconds}s"
  } : {})

  # The chaos sidecar's flags through their env twins (chaos/sidecar); each
  # group adds BLOBLEADER_CHAOS_NAME, the name of its plan.
  chaos_environment = {
    AZURE_CLIENT_ID                = azurerm_user_assigned_identity.worker.client_id
    AZURE_TOKEN_CREDENTIALS        = "ManagedIdentityCredential"
    BLOBLEADER_CHAOS_ACCOUNT_URL   = azurerm_storage_account.this.primary_blob_endpoint
    BLOBLEADER_CHAOS_CONTAINER     = "chaos"
    BLOBLEADER_CHAOS_LISTEN        = "127.0.0.1:${var.chaos_sidecar.listen_port}"
    BLOBLEADER_CHAOS_POLL          = "${var.chaos_sidecar.poll_seconds}s"
    BLOBLEADER_CHAOS_WORKER_STATUS = "http://127.0.0.1:${local.worker_port}/status"
    BLOBLEADER_CHAOS_WORKER_STOP   = "http://127.0.0.1:${var.chaos_sidecar.control_port}/stop"
  }

  tags = merge({ project = "blobleader" }, var.tags)
}
