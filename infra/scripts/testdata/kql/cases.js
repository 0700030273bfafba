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

// line: one log line of a worker (or of another container of its group).
function line(sec, group, level, msg, fields, container = "worker") {
  const body = { time: iso(sec), level, msg, identity: group, ...fields };
  return { TimeGenerated: iso(sec + 90), ContainerGroup: group, ContainerName: container, Message: JSON.stringify(body) };
}
const started = (sec, g, term) => line(sec, g, "INFO", "leadership", { event: "started_leading", term, valid_until: iso(sec + 10) });
const stopped = (sec, g, term, reason, until) => line(sec, g, "INFO", "leadership", { event: "stopped_leading", term, reason, valid_until: iso(until) });
const status = (sec, g, role, term, leader, healthy = true) =>
  line(sec, g, healthy ? "INFO" : "WARN", "status", {
    event: "status", role, term, leader, valid_until: role === "leader" ? iso(sec + 10) : "", healthy,
    ...(healthy ? {} : { health: "leader task did not return within the shutdown grace" }),
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
// Lines the alerts must not read: the chaos sidecar's JSON and a line that is not JSON.
const noise = [
  line(5, W[0], "INFO", "plan applied", { event: "started_leading", sidecar: W[0] }, "chaos"),
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
];
