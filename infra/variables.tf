variable "location" {
  type        = string
  description = <<-EOT
    Azure region for every resource, e.g. `eastus` or `swedencentral`
    (`az account list-locations -o table`). Pick one with availability zones to
    spread the workers over zones (see `zones`).
  EOT
  nullable    = false

  validation {
    condition     = can(regex("^[a-z][a-z0-9]{2,29}$", var.location))
    error_message = "location must be an Azure region name in lower case without spaces, e.g. \"eastus\" (list them with `az account list-locations -o table`)."
  }
}

variable "chaos_sidecar" {
  type = object({
    enabled                  = bool
    image                    = optional(string, "")
    cpu                      = optional(number, 0.2)
    memory_gb                = optional(number, 0.3)
    listen_port              = optional(number, 10443)
    control_port             = optional(number, 8081)
    poll_seconds             = optional(number, 1)
    controller_principal_ids = optional(list(string), [])
  })
  default     = { enabled = false }
  description = <<-EOT
    The chaos sidecar of the Azure test suite (`test/azure`,
    docs/testing-on-azure.md). Off by default; never enable it in production.
    When enabled, each worker group gets a second container `chaos` running
    `image` (chaos/sidecar/cmd/chaos-sidecar): a toxiproxy proxy on
    127.0.0.1:`listen_port` only (no port is exposed; the group has no IP)
    forwarding to the storage account on 443. The worker runs with
    `BLOBLEADER_STORAGE_DIAL=127.0.0.1:<listen_port>`, so its election and
    ledger traffic (not its history) goes through the proxy while TLS still
    verifies the storage host. The sidecar reads its fault plan from the
    blob `plans/<group>.json` in a third container `chaos` every
    `poll_seconds`, and writes its state (and the worker's /status) to
    `state/<group>.json`.
    - `enabled`: add the sidecar, the `chaos` container and its roles.
    - `image`: the sidecar image, pinned by digest (required when enabled).
    - `cpu`, `memory_gb`: its resource requests, each a multiple of 0.1
      (ACI's step; default 0.2 vCPU and 0.3 GB).
    - `listen_port`: the loopback port of the proxy (1024-65535, not 8080).
    - `control_port`: the worker's loopback control endpoint
      (`BLOBLEADER_CONTROL_LISTEN`), where the sidecar asks it for a graceful
      stop (POST /stop; the worker SIGTERMs itself). 1024-65535, not 8080 and
      not `listen_port`.
    - `poll_seconds`: plan poll period (0.1-60).
    - `controller_principal_ids`: Entra object ids of the test harness:
      Storage Blob Data Contributor on the `chaos` container (to write plans)
      and on the lease container (the operator's BreakLease fault).
  EOT
  nullable    = false

  validation {
    condition     = !var.chaos_sidecar.enabled || can(regex("^[^@\\s]+@sha256:[0-9a-f]{64}$", var.chaos_sidecar.image))
    error_message = "chaos_sidecar.image must be set to an image reference pinned by digest (<registry>/<repo>@sha256:<64 hex>) when chaos_sidecar.enabled is true."
  }
  validation {
    condition     = var.chaos_sidecar.cpu > 0 && var.chaos_sidecar.cpu <= 1 && var.chaos_sidecar.memory_gb > 0 && var.chaos_sidecar.memory_gb <= 2
    error_message = "chaos_sidecar.cpu must be in (0, 1] and chaos_sidecar.memory_gb in (0, 2]."
  }
  validation {
    # ACI takes requests in steps of 0.1; compared with a tolerance, since 0.3 is not exact in binary.
    condition     = abs(var.chaos_sidecar.cpu * 10 - floor(var.chaos_sidecar.cpu * 10 + 0.5)) < 0.000001 && abs(var.chaos_sidecar.memory_gb * 10 - floor(var.chaos_sidecar.memory_gb * 10 + 0.5)) < 0.000001
    error_message = "chaos_sidecar.cpu (${var.chaos_sidecar.cpu}) and chaos_sidecar.memory_gb (${var.chaos_sidecar.memory_gb}) must be multiples of 0.1: Azure Container Instances refuses other requests when it creates the group, e.g. use 0.2 or 0.3, not 0.25."
  }
  validation {
    condition     = var.chaos_sidecar.listen_port >= 1024 && var.chaos_sidecar.listen_port <= 65535 && floor(var.chaos_sidecar.listen_port) == var.chaos_sidecar.listen_port && var.chaos_sidecar.listen_port != 8080
    error_message = "chaos_sidecar.listen_port must be a whole number from 1024 to 65535 other than 8080 (the worker's HTTP port)."
  }
  validation {
    condition     = var.chaos_sidecar.control_port >= 1024 && var.chaos_sidecar.control_port <= 65535 && floor(var.chaos_sidecar.control_port) == var.chaos_sidecar.control_port && var.chaos_sidecar.control_port != 8080 && var.chaos_sidecar.control_port != var.chaos_sidecar.listen_port
    error_message = "chaos_sidecar.control_port must be a whole number from 1024 to 65535 other than 8080 (the worker's HTTP port) and other than chaos_sidecar.listen_port."
  }
  validation {
    condition     = var.chaos_sidecar.poll_seconds >= 0.1 && var.chaos_sidecar.poll_seconds <= 60
    error_message = "chaos_sidecar.poll_seconds must be between 0.1 and 60."
  }
  validation {
    condition     = alltrue([for id in var.chaos_sidecar.controller_principal_ids : can(regex("^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", id))])
    error_message = "chaos_sidecar.controller_principal_ids must be Entra object ids (GUIDs)."
  }
  validation {
    condition     = !var.chaos_sidecar.enabled || var.lease_container_name != "chaos"
    error_message = "lease_container_name must not be \"chaos\" when chaos_sidecar.enabled is true (the sidecar's control container has that name)."
  }
}

variable "history_to_blob" {
  type        = bool
  default     = true
  description = <<-EOT
    Run the workers with `BLOBLEADER_HISTORY=blob`: each appends its election
    events to the `history` container. False leaves history off (events still
    appear in the logs).
  EOT
  nullable    = false
}

variable "image_digest" {
  type        = string
  default     = ""
  description = <<-EOT
    Digest of the worker image in the registry, `sha256:<64 hex>`; the groups
    pin the image by it. Empty (stage 1 of `make deploy`) creates everything
    except the container groups; `make deploy` pushes the image and sets it.
  EOT
  nullable    = false

  validation {
    condition     = var.image_digest == "" || can(regex("^sha256:[0-9a-f]{64}$", var.image_digest))
    error_message = "image_digest must be empty or \"sha256:\" followed by 64 lower-case hex digits (the digest `make image` prints), not a tag."
  }
}

variable "image_repository" {
  type        = string
  default     = "blobleader/worker"
  description = "Repository of the worker image in the registry (`make deploy` pushes it there)."
  nullable    = false

  validation {
    condition     = can(regex("^[a-z0-9]+([._-][a-z0-9]+)*(/[a-z0-9]+([._-][a-z0-9]+)*)*$", var.image_repository))
    error_message = "image_repository must be a lower-case OCI repository path such as \"blobleader/worker\" (letters, digits, '.', '_', '-' and '/')."
  }
}

variable "lease_blob_name" {
  type        = string
  default     = "leader"
  description = "Name of the lease blob the workers elect on (`--blob`); the fenced ledger lives beside it as `<name>-ledger/`."
  nullable    = false

  validation {
    condition     = can(regex("^[A-Za-z0-9]([A-Za-z0-9._-]{0,98}[A-Za-z0-9_-])?$", var.lease_blob_name))
    error_message = "lease_blob_name must be 1-100 characters of letters, digits, '.', '_' or '-', starting with a letter or digit and not ending with '.' (Azure drops a trailing dot from a blob name; no '/': the ledger prefix is derived from it)."
  }
}

variable "lease_container_name" {
  type        = string
  default     = "leases"
  description = "Blob container holding the lease blob and the ledger (`--container`)."
  nullable    = false

  validation {
    condition     = can(regex("^[a-z0-9](-?[a-z0-9])+$", var.lease_container_name)) && length(var.lease_container_name) >= 3 && length(var.lease_container_name) <= 63 && var.lease_container_name != "history"
    error_message = "lease_container_name must be a valid container name (3-63 lower-case letters, digits and single hyphens, starting and ending with a letter or digit) and not \"history\" (used for the history)."
  }
}

variable "lease_duration_seconds" {
  type        = number
  default     = 15
  description = "Lease duration L in seconds (`--lease-duration`). Azure accepts 15-60 s; infinite leases are refused because a crashed holder would block forever."
  nullable    = false

  validation {
    condition     = var.lease_duration_seconds >= 15 && var.lease_duration_seconds <= 60 && floor(var.lease_duration_seconds) == var.lease_duration_seconds
    error_message = "lease_duration_seconds must be a whole number of seconds from 15 to 60 (Azure's lease range), got ${var.lease_duration_seconds}."
  }
}

variable "lock_service" {
  type = object({
    enabled   = optional(bool, false)
    replicas  = optional(number, 2)
    subnet_id = optional(string)
    store     = optional(string, "lockstore")
    cpu       = optional(number, 1)
    memory_gb = optional(number, 1)
  })
  default     = {}
  description = <<-EOT
    The named resource lock service (`blobleader locks`: Dapr's lock API plus a fencing term; docs/architecture.md,
    Resource locks) beside the workers. Off by default. When enabled, `replicas` (1–10) stateless container groups
    serve it on port 3500 of private IPs in `subnet_id` (an ACI-delegated subnet: required), on the lease container;
    `store` is the {store} in the API paths; `cpu` and `memory_gb` (default 1 and 1) are the replica's requests,
    multiples of 0.1 and at least ACI's minimum for a container group, 1 vCPU and 1 GB. Requires lock_service_token.
  EOT
  nullable    = false

  validation {
    condition     = var.lock_service.replicas >= 1 && var.lock_service.replicas <= 10 && floor(var.lock_service.replicas) == var.lock_service.replicas
    error_message = "lock_service.replicas must be a whole number from 1 to 10, got ${var.lock_service.replicas}."
  }
  validation {
    condition     = !var.lock_service.enabled || try(length(var.lock_service.subnet_id) > 0, false)
    error_message = "lock_service.enabled needs lock_service.subnet_id: the service listens on a private IP in that subnet (never a public one)."
  }
  validation {
    condition     = length(var.lock_service.store) > 0
    error_message = "lock_service.store must not be empty."
  }
  validation {
    # ACI's minimum per container group (Microsoft Learn, Container groups in Azure Container Instances),
    # in its steps of 0.1; compared with a tolerance (0.3 is not exact in binary).
    condition = (var.lock_service.cpu > 0.999999 && var.lock_service.cpu <= 4 && var.lock_service.memory_gb > 0.999999 && var.lock_service.memory_gb <= 16 &&
      abs(var.lock_service.cpu * 10 - floor(var.lock_service.cpu * 10 + 0.5)) < 0.000001 &&
    abs(var.lock_service.memory_gb * 10 - floor(var.lock_service.memory_gb * 10 + 0.5)) < 0.000001)
    error_message = "lock_service.cpu (${var.lock_service.cpu}) and lock_service.memory_gb (${var.lock_service.memory_gb}) must be multiples of 0.1 from 1 to 4 vCPU and from 1 to 16 GB: a replica is a container group of its own, and Azure Container Instances allocates at least 1 vCPU and 1 GB to a container group."
  }
}

variable "lock_service_token" {
  type        = string
  default     = ""
  sensitive   = true
  description = <<-EOT
    The lock service's bearer token (clients send `Authorization: Bearer <token>` or `dapr-api-token`), at least 32
    characters when lock_service.enabled; passed as a secure environment variable. Set it from a secret store
    (TF_VAR_lock_service_token), never in a committed file.
  EOT
  nullable    = false
}

variable "log_daily_quota_gb" {
  type        = number
  default     = 1
  description = "Daily ingestion cap of the Log Analytics workspace in GB (-1 = no cap). Three workers log far less than this."
  nullable    = false

  validation {
    condition     = var.log_daily_quota_gb == -1 || var.log_daily_quota_gb > 0
    error_message = "log_daily_quota_gb must be -1 (no cap) or a positive number of GB."
  }
}

variable "log_retention_days" {
  type        = number
  default     = 30
  description = "Days Log Analytics keeps the container logs (30 is included in the ingestion price)."
  nullable    = false

  validation {
    condition     = var.log_retention_days >= 30 && var.log_retention_days <= 730 && floor(var.log_retention_days) == var.log_retention_days
    error_message = "log_retention_days must be a whole number from 30 to 730."
  }
}

variable "log_route" {
  type        = string
  default     = "diagnostic_setting"
  description = <<-EOT
    How the container groups' log lines reach the table the alerts read (docs/deploy.md, "Logs and
    the diagnostic-settings preview"):
    - `diagnostic_setting` (default): a diagnostic setting on each group sends its lines to the
      resource-specific table ContainerInstanceLog. Microsoft documents diagnostic settings for
      Container Instances as a preview enabled per subscription; `make deploy`'s preflight and
      `make verify-azure` check it.
    - `legacy`: no diagnostic settings; the alerts read ContainerInstanceLog_CL, which every group's
      legacy integration (workspace id and key) fills either way: for a subscription without the
      preview. That table exists only after its first line, and it has no container-name column.
  EOT
  nullable    = false

  validation {
    condition     = contains(["diagnostic_setting", "legacy"], var.log_route)
    error_message = "log_route must be \"diagnostic_setting\" (the resource-specific table, needs ACI diagnostic settings in the subscription) or \"legacy\" (the groups' workspace integration, table ContainerInstanceLog_CL), got \"${var.log_route}\"."
  }
}

variable "name_prefix" {
  type        = string
  default     = "blobleader"
  description = "Prefix of every resource name (lower-case letters and digits, 2-10 characters); change it to run two deployments in one subscription."
  nullable    = false

  validation {
    condition     = can(regex("^[a-z][a-z0-9]{1,9}$", var.name_prefix))
    error_message = "name_prefix must be 2-10 lower-case letters or digits starting with a letter (it is part of the storage account name, which allows nothing else)."
  }
}

variable "name_suffix" {
  type        = string
  default     = null
  description = "Suffix that makes the storage account and registry names globally unique. Null derives 8 stable hex characters from the subscription, prefix and region."

  validation {
    condition     = var.name_suffix == null || can(regex("^[a-z0-9]{4,12}$", var.name_suffix))
    error_message = "name_suffix must be null or 4-12 lower-case letters or digits."
  }
}

variable "operator_principal_ids" {
  type        = list(string)
  default     = []
  description = <<-EOT
    Entra object ids granted Storage Blob Data Reader on the two containers (not
    the account), so an operator can watch the lease and read the ledger and
    history. `make deploy` adds the principal that runs it.
  EOT
  nullable    = false

  validation {
    condition     = alltrue([for id in var.operator_principal_ids : can(regex("^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", id))])
    error_message = "operator_principal_ids must be Entra object ids (GUIDs), e.g. from `az ad signed-in-user show --query id -o tsv`."
  }
}

variable "registry_sku" {
  type        = string
  default     = "Premium"
  description = <<-EOT
    Container registry SKU. Microsoft's guide for pulling into Container
    Instances with a managed identity lists a Premium registry with trusted
    services as the prerequisite, so Premium is the default; Basic or Standard
    cost less and are not what that guide documents (docs/deploy.md, Costs).
  EOT
  nullable    = false

  validation {
    condition     = contains(["Basic", "Standard", "Premium"], var.registry_sku)
    error_message = "registry_sku must be one of \"Basic\", \"Standard\" or \"Premium\"."
  }
}

variable "renew_deadline_seconds" {
  type        = number
  default     = 10
  description = "Renew deadline D in seconds (`--renew-deadline`): a leader steps down when no renew succeeded for D. Must be below L - 2 s (clock-rate and transit margin)."
  nullable    = false

  validation {
    condition     = var.renew_deadline_seconds > 0 && var.renew_deadline_seconds < var.lease_duration_seconds - 2
    error_message = "renew_deadline_seconds must be > 0 and < lease_duration_seconds - 2 (got D=${var.renew_deadline_seconds}, L=${var.lease_duration_seconds}): lower D below ${var.lease_duration_seconds - 2} or raise the lease duration."
  }
}

variable "renew_interval_seconds" {
  type        = number
  default     = 2
  description = "Seconds between a leader's renews (`--renew-interval`); at most D / 3 so at least three renews fit in a deadline."
  nullable    = false

  validation {
    condition     = var.renew_interval_seconds > 0 && var.renew_interval_seconds <= var.renew_deadline_seconds / 3
    error_message = "renew_interval_seconds must be > 0 and <= renew_deadline_seconds / 3 (got ${var.renew_interval_seconds} with D=${var.renew_deadline_seconds}): use at most ${floor(var.renew_deadline_seconds * 1000 / 3) / 1000}."
  }
  validation {
    condition     = min(var.renew_interval_seconds, var.renew_deadline_seconds / 3) >= 0.5
    error_message = "renew_interval_seconds and renew_deadline_seconds give a request timeout min(renew_interval_seconds, renew_deadline_seconds / 3) = ${min(var.renew_interval_seconds, var.renew_deadline_seconds / 3)} s; it must be at least 0.5 s: every storage call (acquire, term write, renew, the first token fetch) must fit in it, and Azure Storage takes up to 2 s (its SLA). Raise both."
  }
}

variable "resource_group_name" {
  type        = string
  default     = null
  description = "Name of the resource group to create. Null means `rg-<name_prefix>`."

  validation {
    condition     = var.resource_group_name == null || can(regex("^[-\\w._()]{1,89}[-\\w_()]$", var.resource_group_name))
    error_message = "resource_group_name must be 1-90 letters, digits, '-', '_', '.', '(' or ')' and must not end with '.'."
  }
}

variable "retry_period_seconds" {
  type        = number
  default     = 1
  description = "Follower poll period P in seconds (`--retry-period`, jittered by 10 %), at least 0.5. Failover after a crash is bounded by L + 1.1 P."
  nullable    = false

  validation {
    condition     = var.retry_period_seconds >= 0.5 && var.retry_period_seconds <= 60
    error_message = "retry_period_seconds must be at least 0.5 (every follower polls the one lock blob, and storage throttles a blob past 500 requests a second, the leader's renews included) and at most 60 (beyond which failover takes minutes), got ${var.retry_period_seconds}."
  }
}

variable "shards" {
  type        = number
  default     = 0
  description = <<-EOT
    Leader-Followers mode (`--shards`): the elected worker assigns this many work shards to the live workers,
    balanced (each owns floor(N/M) or ceil(N/M)) and sticky, and each worker works a shard only while it holds
    the shard's own blob lease. 0 keeps the single-task mode (the leader alone appends to the ledger).
    Each owned shard renews its own lease and appends to its own ledger: storage operations grow with N
    (docs/architecture.md, Shards).
  EOT
  nullable    = false

  validation {
    condition     = var.shards >= 0 && var.shards <= 1024 && floor(var.shards) == var.shards
    error_message = "shards must be a whole number from 1 to 1024, or 0 for the single-task mode (the worker's --shards range), got ${var.shards}."
  }
}

variable "storage_replication_type" {
  type        = string
  default     = "ZRS"
  description = <<-EOT
    Replication of the storage account. ZRS keeps the lease available when one zone fails; use LRS in a region without zones.
    Geo-replicated types (GRS, GZRS, RAGRS, RAGZRS) replicate asynchronously: after an account failover the lock's term and
    the ledger are as they were up to the replication lag earlier. Terms stay unique across that only because every new term
    is above the wall-clock millisecond (worker/election/doc.go, Non-guarantees): keep the workers' clocks NTP-synced, and after
    a failover let no worker whose clock ran ahead of the others stamp first. The ledger's newest entries are lost with it.
  EOT
  nullable    = false

  validation {
    condition     = contains(["LRS", "ZRS", "GRS", "GZRS", "RAGRS", "RAGZRS"], var.storage_replication_type)
    error_message = "storage_replication_type must be one of LRS, ZRS, GRS, GZRS, RAGRS, RAGZRS."
  }
}

variable "tags" {
  type        = map(string)
  default     = {}
  description = "Tags added to every resource (besides `project = blobleader`)."
  nullable    = false
}

variable "tick_seconds" {
  type        = number
  default     = 1
  description = "Period of the reference leader task in seconds (`--tick`): each tick appends one fenced ledger entry, a billed blob write (docs/deploy.md, Costs)."
  nullable    = false

  validation {
    condition     = var.tick_seconds >= 0.01 && var.tick_seconds <= 3600
    error_message = "tick_seconds must be between 0.01 and 3600 (the worker's --tick range, 10ms to 1h), got ${var.tick_seconds}."
  }
}

variable "watchdog_timeout_seconds" {
  type        = number
  default     = 10
  description = "Stall watchdog of the leader task in seconds (`--watchdog-timeout`); 0 turns it off."
  nullable    = false

  validation {
    condition     = var.watchdog_timeout_seconds == 0 || var.watchdog_timeout_seconds >= var.renew_interval_seconds
    error_message = "watchdog_timeout_seconds must be 0 (off) or at least renew_interval_seconds (${var.renew_interval_seconds}), got ${var.watchdog_timeout_seconds}."
  }
  validation {
    condition     = var.watchdog_timeout_seconds == 0 || var.tick_seconds + 2 * min(var.renew_interval_seconds, var.renew_deadline_seconds / 3) < var.watchdog_timeout_seconds
    error_message = "watchdog_timeout_seconds (${var.watchdog_timeout_seconds}) must be 0 (off) or greater than tick_seconds + 2 x request timeout = ${var.tick_seconds + 2 * min(var.renew_interval_seconds, var.renew_deadline_seconds / 3)}: the leader task reports progress once per ledger append that lands, one per tick, each up to 2 x the request timeout min(renew_interval_seconds, renew_deadline_seconds / 3), or its own watchdog steps every leader down. Lower tick_seconds or raise watchdog_timeout_seconds."
  }
  validation {
    condition     = var.shards == 0 || var.watchdog_timeout_seconds == 0 || 1.1 * var.retry_period_seconds + 2 * min(var.renew_interval_seconds, var.renew_deadline_seconds / 3) <= var.watchdog_timeout_seconds
    error_message = "With shards > 0, watchdog_timeout_seconds (${var.watchdog_timeout_seconds}) must be 0 (off) or at least 1.1 x retry_period_seconds + 2 x request timeout = ${1.1 * var.retry_period_seconds + 2 * min(var.renew_interval_seconds, var.renew_deadline_seconds / 3)}: the shard coordinator reports progress once per pass that confirms or publishes the assignment, one pass per poll period. Lower retry_period_seconds or raise watchdog_timeout_seconds."
  }
}

variable "worker_count" {
  type        = number
  default     = 3
  description = "Number of worker container groups, spread over `zones` round-robin."
  nullable    = false

  validation {
    condition     = var.worker_count >= 1 && var.worker_count <= 20 && floor(var.worker_count) == var.worker_count
    error_message = "worker_count must be a whole number from 1 to 20, got ${var.worker_count}."
  }
}

variable "worker_cpu" {
  type        = number
  default     = 1
  description = <<-EOT
    vCPU requested by each worker container, a multiple of 0.1 (ACI bills requested vCPU-seconds).
    ACI allocates at least 1 vCPU and 1 GB to a container group (Microsoft Learn, "Container groups
    in Azure Container Instances", Minimum and maximum allocation): the worker, plus the chaos sidecar
    where it is enabled, must request at least that together.
  EOT
  nullable    = false

  validation {
    condition     = var.worker_cpu >= 0.1 && var.worker_cpu <= 4
    error_message = "worker_cpu must be between 0.1 and 4 vCPU."
  }
  validation {
    condition     = abs(var.worker_cpu * 10 - floor(var.worker_cpu * 10 + 0.5)) < 0.000001
    error_message = "worker_cpu must be a multiple of 0.1 vCPU (Azure Container Instances refuses other requests when it creates the group), got ${var.worker_cpu}."
  }
  validation {
    # Compared with a tolerance: 0.8 + 0.2 is not exactly 1 in binary.
    condition     = var.worker_cpu + (var.chaos_sidecar.enabled ? var.chaos_sidecar.cpu : 0) > 0.999999
    error_message = "Each worker container group requests worker_cpu (${var.worker_cpu})${var.chaos_sidecar.enabled ? " + chaos_sidecar.cpu (${var.chaos_sidecar.cpu})" : ""} = ${var.worker_cpu + (var.chaos_sidecar.enabled ? var.chaos_sidecar.cpu : 0)} vCPU; Azure Container Instances allocates at least 1 vCPU to a container group (Microsoft Learn, Container groups in Azure Container Instances), so it would refuse the group or bill 1 vCPU anyway: raise worker_cpu to at least ${1 - (var.chaos_sidecar.enabled ? var.chaos_sidecar.cpu : 0)}."
  }
}

variable "worker_memory_gb" {
  type        = number
  default     = 1
  description = <<-EOT
    Memory in GB requested by each worker container, a multiple of 0.1 (ACI bills requested GB-seconds).
    With the chaos sidecar's memory it must reach ACI's 1 GB minimum per container group (see worker_cpu).
  EOT
  nullable    = false

  validation {
    condition     = var.worker_memory_gb >= 0.1 && var.worker_memory_gb <= 16
    error_message = "worker_memory_gb must be between 0.1 and 16 GB."
  }
  validation {
    condition     = abs(var.worker_memory_gb * 10 - floor(var.worker_memory_gb * 10 + 0.5)) < 0.000001
    error_message = "worker_memory_gb must be a multiple of 0.1 GB (Azure Container Instances refuses other requests when it creates the group), got ${var.worker_memory_gb}."
  }
  validation {
    condition     = var.worker_memory_gb + (var.chaos_sidecar.enabled ? var.chaos_sidecar.memory_gb : 0) > 0.999999
    error_message = "Each worker container group requests worker_memory_gb (${var.worker_memory_gb})${var.chaos_sidecar.enabled ? " + chaos_sidecar.memory_gb (${var.chaos_sidecar.memory_gb})" : ""} = ${var.worker_memory_gb + (var.chaos_sidecar.enabled ? var.chaos_sidecar.memory_gb : 0)} GB; Azure Container Instances allocates at least 1 GB to a container group (Microsoft Learn, Container groups in Azure Container Instances), so it would refuse the group or bill 1 GB anyway: raise worker_memory_gb to at least ${1 - (var.chaos_sidecar.enabled ? var.chaos_sidecar.memory_gb : 0)}."
  }
}

variable "zones" {
  type        = list(string)
  default     = ["1", "2", "3"]
  description = "Availability zones to place the worker groups in, round-robin. Use [] in a region without zones."
  nullable    = false

  validation {
    condition     = alltrue([for z in var.zones : contains(["1", "2", "3"], z)]) && length(distinct(var.zones)) == length(var.zones)
    error_message = "zones must be a list of distinct values from \"1\", \"2\", \"3\", or [] for a region without zones."
  }
}

variable "early_takeover" {
  type = object({
    after_seconds        = optional(number, 0)
    break_period_seconds = optional(number, 0)
  })
  default     = {}
  description = <<-EOT
    Early takeover (`--takeover-after`, `--break-period`; docs/failover.md#early-takeover):
    a follower that reads the leader's heartbeat unchanged for after_seconds (T) breaks its
    lease with a break period of break_period_seconds (B) and leads once B has passed, instead
    of waiting out the lease after a host loss. after_seconds = 0 (the default) is off.
    T >= 2 x renew interval and renew interval + 2 x request timeout; B whole seconds <= 60 and >= D + min(renew interval, D/3)
    + 1.5 s (0.5 s of clock margin, 1 s because storage counts break periods in whole seconds; 0: that minimum);
    T + B < lease_duration_seconds. Only short renew deadlines gain from it: README's fast profile is D 2 s,
    renew 0.5 s, retry 0.5 s, T 2 s, B 4 s.
  EOT
  nullable    = false

  validation {
    condition     = var.early_takeover.after_seconds >= 0 && var.early_takeover.break_period_seconds >= 0
    error_message = "early_takeover.after_seconds and break_period_seconds must be >= 0 (after_seconds 0: off; break_period_seconds 0: the shortest the rule allows)."
  }
  validation {
    condition     = var.early_takeover.after_seconds > 0 || var.early_takeover.break_period_seconds == 0
    error_message = "early_takeover.break_period_seconds must be 0 while after_seconds is 0 (early takeover off)."
  }
  validation {
    condition     = var.early_takeover.after_seconds == 0 || var.early_takeover.after_seconds >= max(2 * var.renew_interval_seconds, var.renew_interval_seconds + 2 * min(var.renew_interval_seconds, var.renew_deadline_seconds / 3))
    error_message = "early_takeover.after_seconds must be at least 2 x renew_interval_seconds and renew interval + 2 x request timeout (${max(2 * var.renew_interval_seconds, var.renew_interval_seconds + 2 * min(var.renew_interval_seconds, var.renew_deadline_seconds / 3))}), got ${var.early_takeover.after_seconds}: a healthy leader on slow storage writes its heartbeat at least that often."
  }
  validation {
    condition = var.early_takeover.break_period_seconds == 0 || (
      floor(var.early_takeover.break_period_seconds) == var.early_takeover.break_period_seconds &&
      var.early_takeover.break_period_seconds <= 60 &&
      var.early_takeover.break_period_seconds >= var.renew_deadline_seconds + min(var.renew_interval_seconds, var.renew_deadline_seconds / 3) + 1.5
    )
    error_message = "early_takeover.break_period_seconds must be whole seconds, at most 60, and at least renew_deadline_seconds + request timeout + 1.5 (${var.renew_deadline_seconds + min(var.renew_interval_seconds, var.renew_deadline_seconds / 3) + 1.5}: 0.5 s of clock margin and 1 s because storage counts break periods in whole seconds), got ${var.early_takeover.break_period_seconds}: the holder must have stopped before anyone can acquire."
  }
  validation {
    condition = var.early_takeover.after_seconds == 0 || (
      var.early_takeover.after_seconds + max(var.early_takeover.break_period_seconds, ceil(var.renew_deadline_seconds + min(var.renew_interval_seconds, var.renew_deadline_seconds / 3) + 1.5)) < var.lease_duration_seconds
    )
    error_message = "early_takeover.after_seconds + the break period must be less than lease_duration_seconds (${var.lease_duration_seconds}): otherwise the lease expires before an early takeover could end it; lower renew_deadline_seconds (the break period needs D + request timeout + 1.5 s)."
  }
}

# --- Alerts (infra/alerts.tf) ----------------------------------------------------

variable "alerts" {
  type = object({
    enabled                  = optional(bool, true)
    email_receivers          = optional(list(string), [])
    flapping_handovers       = optional(number, 4)
    rbac_propagation_minutes = optional(number, 15)
    clock_skew_seconds       = optional(number, 1)
  })
  default     = {}
  description = <<-EOT
    Azure Monitor log alerts on the workers' log lines (infra/alerts.tf;
    docs/operations.md, "Alerts"). On by default, and then they need someone
    to tell: an action group e-mails `email_receivers`. The rules exist once
    the worker groups do (`image_digest` set). Their thresholds follow from
    the election timing (lease_duration_seconds, renew_deadline_seconds,
    renew_interval_seconds, retry_period_seconds); these fields set only what
    the timing cannot:
    - `enabled`: create the action group and the alert rules.
    - `email_receivers`: e-mail addresses the action group notifies (at least
      one while enabled; distinct).
    - `flapping_handovers`: the flapping alert fires when more leaders than
      this start within 15 minutes (1-100).
    - `rbac_propagation_minutes`: how long storage 403s are expected after a
      deploy while role assignments propagate; 403s that last longer fire
      (5-55 minutes).
    - `clock_skew_seconds`: how far the worker hosts' clocks may differ; two
      claims of leadership that overlap by less are not reported (0-5).
  EOT
  nullable    = false

  validation {
    condition     = !var.alerts.enabled || length(var.alerts.email_receivers) > 0
    error_message = "alerts.email_receivers must name at least one e-mail address while alerts.enabled is true (no alert without a receiver): set alerts = { email_receivers = [\"oncall@example.com\"] }, or alerts = { enabled = false } to deploy without alerts."
  }
  validation {
    condition     = alltrue([for e in var.alerts.email_receivers : can(regex("^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$", e))]) && length(distinct(var.alerts.email_receivers)) == length(var.alerts.email_receivers)
    error_message = "alerts.email_receivers must be distinct e-mail addresses (name@domain.tld)."
  }
  validation {
    condition     = var.alerts.flapping_handovers >= 1 && var.alerts.flapping_handovers <= 100 && floor(var.alerts.flapping_handovers) == var.alerts.flapping_handovers
    error_message = "alerts.flapping_handovers must be a whole number between 1 and 100."
  }
  validation {
    condition     = var.alerts.rbac_propagation_minutes >= 5 && var.alerts.rbac_propagation_minutes <= 55 && floor(var.alerts.rbac_propagation_minutes) == var.alerts.rbac_propagation_minutes
    error_message = "alerts.rbac_propagation_minutes must be a whole number of minutes between 5 and 55."
  }
  validation {
    condition     = var.alerts.clock_skew_seconds >= 0 && var.alerts.clock_skew_seconds <= 5
    error_message = "alerts.clock_skew_seconds must be between 0 and 5."
  }
}
