// Sample rows for the alert queries (infra/alerts/*.kql), shaped like what
// the workers really log (docs/architecture.md#log-lines-the-alerts-read;
// worker/cmd/blobleader/alertlog.go) and how the diagnostic setting stores
// it in ContainerInstanceLog: one row per line, the JSON line in Message,
// TimeGenerated the ingestion time (here 90 s after the line). Every query
// has cases that must fire and cases that must stay quiet; kql_check.js
// runs them with the default timing's thresholds (L 15 s, D 10 s, renew
// 2 s, P 1 s: no-leader gap 35 s, forced-break overlap 4 s).
"use strict";

const T0 = Date.parse("2026-11-26T01:00:00Z");
const iso = (sec) => new Date(T0 + Math.round(sec * 1000)).toISOString().replace("Z", "123Z").replace(/\.(\d{3})123Z$/, ".$1456789Z");
const W = ["ci-blobleader-worker-01", "ci-blobleader-worker-02", "ci-blobleader-worker-03"];
const TERM = 1795361836602;

// A lock service replica's group (infra/locks.tf).
const LOCK = "blobleader-locks-01";

// line: one log line of a worker (or of another container of its group).
function line(sec, group, level, msg, fields, container = "worker") {
  const body = { time: iso(sec), level, msg, identity: group, ...fields };
  return { TimeGenerated: iso(sec + 90), ContainerGroup: group, ContainerName: container, Message: JSON.stringify(body) };
}
// lockLine: one line of a lock service replica (`blobleader locks`), which
// logs storage failures with the workers' events and fields
// (docs/architecture.md#log-lines-the-alerts-read) and carries no identity.
function lockLine(sec, level, msg, fields) {
  const body = { time: iso(sec), level, msg, ...fields };
  return { TimeGenerated: iso(sec + 90), ContainerGroup: LOCK, ContainerName: "locks", Message: JSON.stringify(body) };
}
const storageError = (sec, g, op, status, code, repeated = 0) =>
  line(sec, g, "WARN", "unexpected storage answer", { event: "storage_error", op, status, code, message: "The server is busy.", repeated });
const forbidden = (sec, g) => line(sec, g, "WARN", "storage request forbidden", { event: "storage_forbidden", op: "acquire", code: 403 });
const started = (sec, g, term) => line(sec, g, "INFO", "leadership", { event: "started_leading", term, valid_until: iso(sec + 10) });
const stopped = (sec, g, term, reason, until) => line(sec, g, "INFO", "leadership", { event: "stopped_leading", term, reason, valid_until: iso(until) });
const status = (sec, g, role, term, leader, healthy = true, starting = false) =>
  line(sec, g, healthy ? "INFO" : "WARN", "status", {
    event: "status", role, term, leader, valid_until: role === "leader" ? iso(sec + 10) : "", healthy,
    ...(healthy ? {} : { health: "leader task did not return within the shutdown grace" }), starting,
  });
// shards: the pool leader's line (docs/architecture.md#log-lines-the-alerts-read).
const shards = (sec, g, term, unowned, since) =>
  line(sec, g, unowned > 0 ? "WARN" : "INFO", "shards", { event: "shards", term, shards: 8, unowned, unowned_since: since });
const every = (from, to, step, f) => {
  const out = [];
  for (let s = from; s <= to; s += step) out.push(f(s));
  return out;
};
// leads: started_leading at from, then a leader status line every L (15 s).
const leads = (g, term, from, to) => [started(from, g, term), ...every(from + 15, to, 15, (s) => status(s, g, "leader", term, g))];
const follows = (g, from, to, term, leader) => every(from, to, 15, (s) => status(s, g, "follower", term, leader));
// starts: a process with no storage answer yet (a role still propagating),
// logging a status line every L.
const starts = (g, from, to) => every(from, to, 15, (s) => status(s, g, "follower", 0, "", true, true));
// Lines the alerts must not read: JSON of another container of the group (the
// chaos sidecar's own lines carry `sidecar`, never the worker's identity; one
// with an event value is the worst case) and a line that is not JSON.
const noise = [
  { TimeGenerated: iso(95), ContainerGroup: W[0], ContainerName: "chaos",
    Message: JSON.stringify({ time: iso(5), level: "INFO", msg: "plan applied", event: "started_leading", sidecar: W[0] }) },
  { TimeGenerated: iso(95), ContainerGroup: W[1], ContainerName: "worker", Message: "panic: not JSON at all" },
];

const now = (sec) => new Date(T0 + sec * 1000).toISOString();

module.exports = [
  // --- no_leader -----------------------------------------------------------
  {
    query: "no_leader", expect: "fire", name: "the leader died; the next leader line came 40 s after its last",
    now: now(600),
    rows: [...leads(W[0], TERM, 0, 90), ...follows(W[1], 0, 120, TERM, W[0]), ...follows(W[2], 0, 200, TERM, W[0]),
      ...leads(W[1], TERM + 1, 130, 200), ...noise],
  },
  {
    query: "no_leader", expect: "quiet", name: "a failover within the bound (18 s between leader lines)",
    now: now(600),
    rows: [...leads(W[0], TERM, 0, 90), ...follows(W[1], 0, 105, TERM, W[0]), ...follows(W[2], 0, 200, TERM, W[0]),
      ...leads(W[1], TERM + 1, 108, 200), ...noise],
  },
  {
    query: "no_leader", expect: "fire", name: "workers log for 2 minutes and none leads",
    now: now(600),
    rows: [...follows(W[0], 0, 120, TERM, ""), ...follows(W[1], 3, 120, TERM, "")],
  },
  {
    query: "no_leader", expect: "quiet", name: "no worker line at all (a new deployment, the daily cap: the no-logs alert's case)",
    now: now(600),
    rows: [noise[0]],
  },
  {
    query: "no_leader", expect: "quiet", name: "a steady leader for 10 minutes",
    now: now(600),
    rows: [...leads(W[0], TERM, 0, 600), ...follows(W[1], 0, 600, TERM, W[0]), ...noise],
  },
  {
    query: "no_leader", expect: "quiet", name: "a first deploy: 8 minutes of start-up (403 while roles propagate), then a leader",
    now: now(900),
    rows: [...starts(W[0], 0, 480), ...starts(W[1], 2, 490), ...starts(W[2], 4, 495), ...every(0, 480, 60, (s) => forbidden(s, W[0])),
      ...leads(W[0], TERM, 490, 900), ...follows(W[1], 505, 900, TERM, W[0]), ...follows(W[2], 510, 900, TERM, W[0])],
  },
  {
    query: "no_leader", expect: "fire", name: "every worker killed for 3 minutes: the restarted ones start, then lead 4 minutes after the last leader line",
    now: now(900),
    rows: [...leads(W[0], TERM, 0, 120), ...follows(W[1], 0, 120, TERM, W[0]), ...follows(W[2], 0, 120, TERM, W[0]),
      ...starts(W[0], 300, 355), ...starts(W[1], 301, 356), ...leads(W[1], TERM + 1, 360, 600), ...follows(W[0], 362, 600, TERM + 1, W[1])],
  },
  {
    query: "no_leader", expect: "fire", name: "storage lost after start-up: awake workers log 2 minutes without a leader",
    now: now(900),
    rows: [...leads(W[0], TERM, 0, 60), ...follows(W[1], 0, 200, TERM, ""), ...follows(W[2], 0, 200, TERM, "")],
  },

  // --- two_leaders ----------------------------------------------------------
  {
    query: "two_leaders", expect: "quiet", name: "an operator's forced break: the old holder learns 1.5 s after the new one leads",
    now: now(600),
    rows: [...leads(W[0], TERM, 0, 45), started(51.5, W[1], TERM + 1), ...every(66.5, 120, 15, (s) => status(s, W[1], "leader", TERM + 1, W[1])),
      stopped(53, W[0], TERM, "lease lost: renew: 409 LeaseIdMismatchWithLeaseOperation", 55)],
  },
  {
    query: "two_leaders", expect: "fire", name: "after a lost lease the old holder led on for 8.5 s, beyond a break's 4 s",
    now: now(600),
    rows: [...leads(W[0], TERM, 0, 45), started(51.5, W[1], TERM + 1), stopped(60, W[0], TERM, "lease lost: renew: 409 LeaseIdMismatchWithLeaseOperation", 62)],
  },
  {
    query: "two_leaders", expect: "fire", name: "two workers lead side by side for a minute, nothing lost",
    now: now(600),
    rows: [...leads(W[0], TERM, 0, 90), ...leads(W[1], TERM + 1, 40, 100)],
  },
  {
    query: "two_leaders", expect: "quiet", name: "a graceful handover (stopped 1 s before the next started)",
    now: now(600),
    rows: [...leads(W[0], TERM, 0, 45), stopped(50, W[0], TERM, "shutdown", 52), ...leads(W[1], TERM + 1, 51, 120)],
  },

  // --- flapping -----------------------------------------------------------------
  {
    query: "flapping", expect: "fire", name: "five leaders started in the window",
    now: now(900),
    rows: [0, 100, 200, 300, 400].flatMap((s, i) => leads(W[i % 3], TERM + i, s, s + 60)),
  },
  {
    query: "flapping", expect: "quiet", name: "four leaders started (two deploys)",
    now: now(900),
    rows: [0, 100, 200, 300].flatMap((s, i) => leads(W[i % 3], TERM + i, s, s + 60)),
  },

  // --- storage_forbidden -------------------------------------------------------
  {
    query: "storage_forbidden", expect: "fire", name: "one worker refused with 403 for 16 minutes",
    now: now(1800),
    rows: every(0, 960, 60, (s) => line(s, W[2], "WARN", "storage request forbidden", { event: "storage_forbidden", op: "acquire", code: 403 })),
  },
  {
    query: "storage_forbidden", expect: "fire", name: "a lock service replica refused with 403 for 16 minutes (its storage_error lines)",
    now: now(1800),
    rows: every(0, 960, 30, (s) => lockLine(s, "WARN", "unexpected storage answer", { event: "storage_error", op: "acquire", status: 403, code: "AuthorizationPermissionMismatch", message: "This request is not authorized to perform this operation using this permission.", repeated: 2 })),
  },
  {
    query: "storage_forbidden", expect: "quiet", name: "a lock service replica's 503s for 16 minutes are storage failing, not 403s",
    now: now(1800),
    rows: every(0, 960, 30, (s) => lockLine(s, "WARN", "unexpected storage answer", { event: "storage_error", op: "acquire", status: 503, code: "ServerBusy", message: "The server is busy.", repeated: 2 })),
  },
  {
    query: "storage_forbidden", expect: "quiet", name: "403s for 5 minutes while a role assignment propagates",
    now: now(1800),
    rows: every(0, 300, 60, (s) => line(s, W[2], "WARN", "storage request forbidden", { event: "storage_forbidden", op: "acquire", code: 403 })),
  },

  // --- unhealthy ------------------------------------------------------------------
  {
    query: "unhealthy", expect: "fire", name: "a status line with healthy false",
    now: now(300),
    rows: [...leads(W[0], TERM, 0, 60), status(75, W[0], "leader", TERM, W[0], false)],
  },
  {
    query: "unhealthy", expect: "quiet", name: "every status line healthy",
    now: now(300),
    rows: [...leads(W[0], TERM, 0, 240), ...follows(W[1], 0, 240, TERM, W[0])],
  },

  // --- no_progress ----------------------------------------------------------------
  {
    query: "no_progress", expect: "fire", name: "two leaders stepped down by their watchdog without progress (a poisoned ledger)",
    now: now(900),
    rows: [...leads(W[0], TERM, 0, 10), stopped(12, W[0], TERM, "watchdog: no progress for 10.2s", 20),
      ...leads(W[1], TERM + 1, 14, 24), stopped(26, W[1], TERM + 1, "watchdog: no progress for 10.1s", 34),
      ...leads(W[2], TERM + 2, 40, 300)],
  },
  {
    query: "no_progress", expect: "quiet", name: "one watchdog step-down (a storage blip) and other endings",
    now: now(900),
    rows: [...leads(W[0], TERM, 0, 10), stopped(12, W[0], TERM, "watchdog: no progress for 10.2s", 20),
      ...leads(W[1], TERM + 1, 14, 100), stopped(101, W[1], TERM + 1, "renew deadline exceeded", 101),
      ...leads(W[2], TERM + 2, 110, 200), stopped(201, W[2], TERM + 2, "task exited: ledger: fenced by a newer term", 205)],
  },

  // --- shards_unowned -------------------------------------------------------------
  {
    query: "shards_unowned", expect: "fire", name: "two shards unowned for 90 s by the leader's lines",
    now: now(600),
    rows: [...leads(W[0], TERM, 0, 300), shards(100, W[0], TERM, 0, ""),
      ...every(110, 200, 15, (s) => shards(s, W[0], TERM, 2, iso(110)))],
  },
  {
    query: "shards_unowned", expect: "quiet", name: "a crashed owner's shards unowned for 16 s, then owned",
    now: now(600),
    rows: [...leads(W[0], TERM, 0, 300), shards(100, W[0], TERM, 3, iso(100)), shards(115, W[0], TERM, 3, iso(100)),
      shards(116, W[0], TERM, 0, ""), ...every(131, 300, 15, (s) => shards(s, W[0], TERM, 0, ""))],
  },

  // --- no_logs --------------------------------------------------------------------
  {
    query: "no_logs", expect: "fire", name: "lines stopped 20 minutes ago (workers gone, or the daily cap)",
    now: now(40 * 60 + 90),
    rows: [...leads(W[0], TERM, 0, 20 * 60), ...follows(W[1], 0, 20 * 60, TERM, W[0])],
  },
  {
    query: "no_logs", expect: "quiet", name: "the last line 1 minute old",
    now: now(40 * 60 + 90),
    rows: [...leads(W[0], TERM, 0, 39 * 60)],
  },
  {
    query: "no_logs", expect: "quiet", name: "a new deployment whose first lines have not arrived (only the sidecar logs)",
    now: now(600),
    rows: [noise[0]],
  },
  // --- startup --------------------------------------------------------------------
  {
    query: "startup", expect: "fire", name: "a worker still starting after 16 minutes (its role never propagated)",
    now: now(3600),
    rows: [...starts(W[2], 0, 960), ...every(0, 960, 60, (s) => forbidden(s, W[2])), ...leads(W[0], TERM, 0, 960)],
  },
  {
    query: "startup", expect: "fire", name: "a worker restarting again and again without a token, 20 minutes",
    now: now(3600),
    rows: [...starts(W[1], 0, 170), ...starts(W[1], 185, 355), ...starts(W[1], 370, 540), ...starts(W[1], 555, 725),
      ...starts(W[1], 740, 910), ...starts(W[1], 925, 1200)],
  },
  {
    query: "startup", expect: "quiet", name: "a first deploy: 8 minutes of start-up, then answers",
    now: now(3600),
    rows: [...starts(W[0], 0, 480), ...leads(W[0], TERM, 490, 1800), ...starts(W[1], 0, 490), ...follows(W[1], 505, 1800, TERM, W[0])],
  },
  {
    query: "startup", expect: "quiet", name: "a restarted worker starts for 20 s among awake ones",
    now: now(3600),
    rows: [...leads(W[0], TERM, 0, 1800), ...follows(W[1], 0, 600, TERM, W[0]), ...starts(W[1], 615, 635), ...follows(W[1], 640, 1800, TERM, W[0])],
  },

  // --- storage_failing ------------------------------------------------------------
  {
    query: "storage_failing", expect: "fire", name: "a worker's acquire answered 503 for 12 minutes (one line per L)",
    now: now(900),
    rows: [...follows(W[1], 0, 720, TERM, ""), storageError(5, W[1], "acquire", 503, "ServerBusy"),
      ...every(20, 720, 15, (s) => storageError(s, W[1], "acquire", 503, "ServerBusy", 14))],
  },
  {
    query: "storage_failing", expect: "fire", name: "a lock service replica's requests timing out for 11 minutes",
    now: now(900),
    rows: every(0, 660, 30, (s) => lockLine(s, "WARN", "unexpected storage answer", { event: "storage_error", op: "renew", status: 0, code: "timeout", message: "context deadline exceeded", repeated: 3 })),
  },
  {
    query: "storage_failing", expect: "quiet", name: "a blip: two unexpected answers in one minute",
    now: now(900),
    rows: [...leads(W[0], TERM, 0, 600), storageError(100, W[0], "renew", 500, "InternalError"), storageError(110, W[0], "renew", 503, "ServerBusy")],
  },
  {
    query: "storage_failing", expect: "quiet", name: "403s for 12 minutes are the storage-forbidden alert's, not this one",
    now: now(900),
    rows: every(0, 720, 15, (s) => storageError(s, W[2], "acquire", 403, "AuthorizationPermissionMismatch", 14)),
  },

  // --- silent ---------------------------------------------------------------------
  {
    query: "silent", expect: "fire", name: "the last worker line 7 hours ago",
    now: now(8 * 3600),
    rows: [...leads(W[0], TERM, 0, 3600), ...follows(W[1], 0, 3600, TERM, W[0])],
  },
  {
    query: "silent", expect: "quiet", name: "the last worker line 5 hours ago (no-logs' case)",
    now: now(6 * 3600),
    rows: [...leads(W[0], TERM, 0, 3600)],
  },
  {
    query: "silent", expect: "quiet", name: "lines a minute old",
    now: now(3600 + 150),
    rows: [...leads(W[0], TERM, 0, 3600)],
  },
];
