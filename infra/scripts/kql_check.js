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

// Values of the types Terraform passes (numbers may be fractional).
const values = {
  groups: JSON.stringify(["ci-blobleader-worker-01", "ci-blobleader-worker-02"]),
  table: "ContainerInstanceLog",
  gap_limit: "34.1",
  silent_minutes: "15",
  break_overlap: "5.333333333333333",
  skew: "1",
  max_handovers: "4",
  forbidden_seconds: "900",
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
const defaults = { ...values, groups: JSON.stringify(["ci-blobleader-worker-01", "ci-blobleader-worker-02", "ci-blobleader-worker-03"]), gap_limit: "35", break_overlap: "4", skew: "1", max_handovers: "4", forbidden_seconds: "900", silent_minutes: "15" };

// samples runs every case of testdata/kql/cases.js through its query on
// the evaluator: a case that must fire needs rows, one that must stay quiet
// none; every query needs at least one case of each.
function samples(dir, casesFile) {
  const { evaluate } = require("./kql_eval.js");
  const cases = require(casesFile);
  const workers = render(fs.readFileSync(path.join(dir, "workers.kql"), "utf8"), defaults);
  let failed = 0;
  const seen = {};
  for (const c of cases) {
    const query = render(fs.readFileSync(path.join(dir, c.query + ".kql"), "utf8"), { ...defaults, workers });
    let rows;
    try {
      rows = evaluate(query, { ContainerInstanceLog: c.rows }, c.now);
    } catch (e) {
      failed++;
      console.log(`FAIL ${c.query} ${c.expect}s: ${c.name}: ${e.message}`);
      continue;
    }
    const fired = rows.length > 0;
    seen[c.query] = seen[c.query] || { fire: 0, quiet: 0 };
    seen[c.query][c.expect]++;
    if (fired === (c.expect === "fire")) {
      console.log(`ok   ${c.query} ${c.expect === "fire" ? "fires" : "stays quiet"}: ${c.name}${fired ? ` (${rows.length} row${rows.length > 1 ? "s" : ""})` : ""}`);
    } else {
      failed++;
      console.log(`FAIL ${c.query} should ${c.expect === "fire" ? "fire" : "stay quiet"}: ${c.name}; rows: ${JSON.stringify(rows)}`);
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
  return { count: cases.length, failed };
}

function main() {
  const args = process.argv.slice(2);
  if (args.length > 1) {
    console.error("usage: node infra/scripts/kql_check.js [DIR]");
    process.exit(2);
  }
  const dir = args[0] || path.join(__dirname, "..", "alerts");
  const globals = schema(dir);
  const workers = render(fs.readFileSync(path.join(dir, "workers.kql"), "utf8"), {});
  const files = fs.readdirSync(dir).filter((f) => f.endsWith(".kql") && f !== "workers.kql").sort();
  if (files.length === 0) {
    console.error(`kql_check: no queries in ${dir}`);
    process.exit(1);
  }
  let failed = 0;
  for (const f of files) {
    const query = render(fs.readFileSync(path.join(dir, f), "utf8"), { workers });
    const errs = diagnostics(query, globals);
    // Azure Monitor refuses log alert rules that use search or union (other
    // than cross-resource queries): Microsoft Learn, "Optimize log search
    // alert queries", Log query constraints.
    for (const op of ["union", "search"]) {
      if (new RegExp(`(^|[|(;\\s])${op}\\b`).test(query.replace(/\/\/.*$/gm, ""))) {
        errs.push(`uses ${op}, which Azure Monitor refuses in a log alert rule`);
      }
    }
    if (errs.length > 0) {
      failed++;
      console.log(`FAIL ${f}\n  ${errs.join("\n  ")}`);
    } else {
      console.log(`ok   ${f}`);
    }
  }
  const s = samples(dir, path.join(__dirname, "testdata", "kql", "cases.js"));
  const total = files.length + s.count;
  failed += s.failed;
  console.log(`${total - failed} passed, ${failed} failed`);
  process.exit(failed > 0 ? 1 : 0);
}

main();
