// kql_check.js: parse and analyse the Azure alert queries (infra/alerts/*.kql)
// with the Kusto language service (@kusto/language-service-next, pinned in
// package.json), against the tables and columns Microsoft documents for them
// (infra/alerts/tables.json, each with its source): a column a query names
// that the documentation does not list is an error here, as it is in the
// workspace. Terraform fills each template's ${...} placeholders
// (infra/alerts.tf); this check fills them with values of the same types,
// then fails on any error the language service reports (syntax, unknown
// names, wrong types).
//
// Then it runs every query on sample rows shaped like the workers' lines
// (testdata/kql/cases.js) with kql_eval.js: each must fire on the cases
// that should fire and stay quiet on the others, as the promtool tests do
// for the Prometheus rules.
//
// Usage: node infra/scripts/kql_check.js [DIR]   (DIR defaults to infra/alerts)
// Exit 0: every query is clean; 1: a diagnostic (printed); 2: bad usage.
"use strict";
const fs = require("fs");
const path = require("path");

require("@kusto/language-service-next/bridge.js");
require("@kusto/language-service-next/Kusto.Language.Bridge.js");
const K = global.Kusto.Language;

// The documented tables, declared exactly as infra/alerts/tables.json lists them.
function schema(dir) {
  const file = path.join(dir, "tables.json");
  const doc = JSON.parse(fs.readFileSync(file, "utf8"));
  const tables = [];
  for (const [name, t] of Object.entries(doc.tables || {})) {
    if (!t.source || !t.columns || Object.keys(t.columns).length === 0) {
      throw new Error(`${file}: table ${name} needs a source and its documented columns`);
    }
    const cols = Object.entries(t.columns).map(([c, type]) => `${c}:${type}`).join(", ");
    tables.push(K.Symbols.TableSymbol.From(`(${cols})`).WithName(name));
  }
  if (tables.length === 0) {
    throw new Error(`${file}: no tables`);
  }
  return K.GlobalState.Default.WithDatabase(new K.Symbols.DatabaseSymbol.ctor("workspace", tables));
}

// The deployment the examples stand for: three worker groups and one lock
// service replica.
const WORKERS = ["ci-blobleader-worker-01", "ci-blobleader-worker-02", "ci-blobleader-worker-03"];
const LOCKS = ["blobleader-locks-01"];

// The two log routes var.log_route chooses (infra/locals.tf): the table, its
// group column, and the row filters infra/alerts.tf renders from them
// (infra/tests/unit/alerts.tftest.hcl pins the same text).
const ROUTES = {
  diagnostic_setting: { table: "ContainerInstanceLog", group_column: "ContainerGroup", container_column: "ContainerName" },
  legacy: { table: "ContainerInstanceLog_CL", group_column: "ContainerGroup_s", container_column: "" },
};

function routeValues(route) {
  const r = ROUTES[route];
  const container = (test) => (r.container_column ? `${r.container_column} ${test} and ` : "");
  return {
    table: r.table,
    group_column: r.group_column,
    worker_groups: JSON.stringify(WORKERS),
    filter: `${container('in ("worker", "locks")')}${r.group_column} in (dynamic(${JSON.stringify([...WORKERS, ...LOCKS])}))`,
    worker_filter: `${container('== "worker"')}${r.group_column} in (dynamic(${JSON.stringify(WORKERS)}))`,
  };
}

// Values of the types Terraform passes (numbers may be fractional).
const values = {
  gap_limit: "34.1",
  silent_minutes: "15",
  silent_hours: "6",
  break_overlap: "5.333333333333333",
  skew: "1",
  max_handovers: "4",
  forbidden_seconds: "900",
  startup_seconds: "900",
  failing_minutes: "10",
  unowned_seconds: "49",
  min_stalls: "2",
};

function render(text, extra) {
  return text.replace(/\$\{([a-z_]+)\}/g, (m, name) => {
    const v = name in extra ? extra[name] : values[name];
    if (v === undefined) {
      throw new Error(`placeholder \${${name}} has no example value in kql_check.js`);
    }
    return v;
  });
}

function diagnostics(query, globals) {
  const code = K.KustoCode.ParseAndAnalyze(query, globals);
  const list = code.GetDiagnostics();
  const out = [];
  for (let i = 0; i < list.Count; i++) {
    const d = list.getItem(i);
    if (String(d.Severity) === "Error") {
      const line = query.slice(0, d.Start).split("\n").length;
      out.push(`line ${line}: ${d.Message}`);
    }
  }
  return out;
}

// The thresholds the default timing gives (infra/tests/unit/alerts.tftest.hcl):
// what the sample cases are judged with.
const defaults = { ...values, gap_limit: "35", break_overlap: "4", skew: "1", max_handovers: "4", forbidden_seconds: "900", silent_minutes: "15" };

// asRoute turns sample rows (shaped as ContainerInstanceLog holds them) into
// the route's table: the legacy table has ContainerGroup_s and no container
// name, so a sidecar's line sits among its worker's.
function asRoute(route, rows) {
  if (route === "diagnostic_setting") return rows;
  return rows.map((r) => ({ TimeGenerated: r.TimeGenerated, ContainerGroup_s: r.ContainerGroup, Message: r.Message }));
}

// samples runs every case of testdata/kql/cases.js through its query on
// the evaluator, on each route's table: a case that must fire needs rows,
// one that must stay quiet none; every query needs at least one case of each.
function samples(dir, casesFile) {
  const { evaluate } = require("./kql_eval.js");
  const cases = require(casesFile);
  let failed = 0;
  let count = 0;
  const seen = {};
  for (const route of Object.keys(ROUTES)) {
    const v = { ...defaults, ...routeValues(route) };
    const workers = render(fs.readFileSync(path.join(dir, "workers.kql"), "utf8"), v);
    for (const c of cases) {
      count++;
      const query = render(fs.readFileSync(path.join(dir, c.query + ".kql"), "utf8"), { ...v, workers });
      const tag = route === "legacy" ? "[legacy] " : "";
      let rows;
      try {
        rows = evaluate(query, { [ROUTES[route].table]: asRoute(route, c.rows) }, c.now);
      } catch (e) {
        failed++;
        console.log(`FAIL ${tag}${c.query} ${c.expect}s: ${c.name}: ${e.message}`);
        continue;
      }
      const fired = rows.length > 0;
      seen[c.query] = seen[c.query] || { fire: 0, quiet: 0 };
      seen[c.query][c.expect]++;
      if (fired === (c.expect === "fire")) {
        console.log(`ok   ${tag}${c.query} ${c.expect === "fire" ? "fires" : "stays quiet"}: ${c.name}${fired ? ` (${rows.length} row${rows.length > 1 ? "s" : ""})` : ""}`);
      } else {
        failed++;
        console.log(`FAIL ${tag}${c.query} should ${c.expect === "fire" ? "fire" : "stay quiet"}: ${c.name}; rows: ${JSON.stringify(rows)}`);
      }
    }
  }
  const queries = fs.readdirSync(dir).filter((f) => f.endsWith(".kql") && f !== "workers.kql").map((f) => f.slice(0, -4));
  for (const q of queries) {
    const s = seen[q] || { fire: 0, quiet: 0 };
    if (s.fire === 0 || s.quiet === 0) {
      failed++;
      console.log(`FAIL ${q}: needs sample cases that fire and that stay quiet (has ${s.fire} and ${s.quiet}) in ${casesFile}`);
    }
  }
  return { count, failed };
}

function main() {
  const args = process.argv.slice(2);
  if (args.length > 1) {
    console.error("usage: node infra/scripts/kql_check.js [DIR]");
    process.exit(2);
  }
  const dir = args[0] || path.join(__dirname, "..", "alerts");
  const globals = schema(dir);
  const files = fs.readdirSync(dir).filter((f) => f.endsWith(".kql") && f !== "workers.kql").sort();
  if (files.length === 0) {
    console.error(`kql_check: no queries in ${dir}`);
    process.exit(1);
  }
  let failed = 0;
  let checked = 0;
  for (const route of Object.keys(ROUTES)) {
    for (const f of files) {
      checked++;
      const rv = routeValues(route);
      const workers = render(fs.readFileSync(path.join(dir, "workers.kql"), "utf8"), rv);
      const query = render(fs.readFileSync(path.join(dir, f), "utf8"), { ...rv, workers });
      const errs = diagnostics(query, globals);
      // Azure Monitor refuses log alert rules that use search or union (other
      // than cross-resource queries): Microsoft Learn, "Optimize log search
      // alert queries", Log query constraints.
      for (const op of ["union", "search"]) {
        if (new RegExp(`(^|[|(;\\s])${op}\\b`).test(query.replace(/\/\/.*$/gm, ""))) {
          errs.push(`uses ${op}, which Azure Monitor refuses in a log alert rule`);
        }
      }
      const tag = route === "legacy" ? "[legacy] " : "";
      if (errs.length > 0) {
        failed++;
        console.log(`FAIL ${tag}${f}\n  ${errs.join("\n  ")}`);
      } else {
        console.log(`ok   ${tag}${f} (${ROUTES[route].table})`);
      }
    }
  }
  const s = samples(dir, path.join(__dirname, "testdata", "kql", "cases.js"));
  const total = checked + s.count;
  failed += s.failed;
  console.log(`${total - failed} passed, ${failed} failed`);
  process.exit(failed > 0 ? 1 : 0);
}

main();
