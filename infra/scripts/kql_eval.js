// kql_eval.js: a small evaluator for the subset of KQL the alert queries
// (infra/alerts/*.kql) use, so `make test-kql` can run each query on sample
// rows and see it fire (rows) or stay quiet (none), as the workspace would.
// It is not Kusto: anything outside the subset is an error naming it, never
// a silent guess. Supported: `let` (tabular, scalar, toscalar), the
// operators where, extend, project, summarize [by], order by, join
// kind=inner on, count, and print and union as sources; the functions
// (not, bin, …) and aggregates (dcount, sum, …) the queries call;
// Kusto's null semantics for comparisons and arithmetic.
"use strict";

class KDate {
  constructor(ms) {
    this.ms = ms;
  }
  toString() {
    return new Date(this.ms).toISOString();
  }
}

// --- lexer -------------------------------------------------------------------

const PUNCT = ["!startswith", "!in", "==", "!=", "<=", ">=", "=~", "(", ")", "[", "]", ",", "|", ";", "=", "<", ">", "+", "-", "*", "/", ".", ":"];

function lex(src) {
  const toks = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (/\s/.test(c)) {
      i++;
    } else if (src.startsWith("//", i)) {
      while (i < src.length && src[i] !== "\n") i++;
    } else if (c === '"' || c === "'") {
      let j = i + 1;
      let s = "";
      while (j < src.length && src[j] !== c) {
        if (src[j] === "\\") j++;
        s += src[j++];
      }
      toks.push({ k: "str", v: s });
      i = j + 1;
    } else if (/[0-9]/.test(c)) {
      const m = /^[0-9]+(\.[0-9]+)?(ms|s|m|h|d)?/.exec(src.slice(i));
      const n = parseFloat(m[0]);
      const unit = { ms: 1, s: 1000, m: 60000, h: 3600000, d: 86400000 }[m[2]];
      toks.push(unit ? { k: "dur", v: n * unit } : { k: "num", v: n });
      i += m[0].length;
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(src.slice(i));
      toks.push({ k: "id", v: m[0] });
      i += m[0].length;
    } else {
      const p = PUNCT.find((q) => src.startsWith(q, i) && !(/[a-z]$/.test(q) && /[A-Za-z0-9_]/.test(src[i + q.length] || "")));
      if (!p) throw new Error(`kql_eval: unexpected character ${JSON.stringify(c)} at ${i}`);
      toks.push({ k: "p", v: p });
      i += p.length;
    }
  }
  toks.push({ k: "eof" });
  return toks;
}

// --- parser --------------------------------------------------------------------

class Parser {
  constructor(src) {
    this.t = lex(src);
    this.i = 0;
  }
  peek(o = 0) {
    return this.t[this.i + o];
  }
  is(v, o = 0) {
    const t = this.peek(o);
    return (t.k === "p" || t.k === "id") && t.v === v;
  }
  next() {
    return this.t[this.i++];
  }
  expect(v) {
    const t = this.next();
    if (t.v !== v) throw new Error(`kql_eval: expected ${v}, got ${t.v === undefined ? t.k : t.v}`);
    return t;
  }
  ident() {
    const t = this.next();
    if (t.k !== "id") throw new Error(`kql_eval: expected a name, got ${t.v}`);
    return t.v;
  }

  // query := (let name = (tabular | scalar) ;)* tabular
  query() {
    const lets = [];
    while (this.is("let")) {
      this.next();
      const name = this.ident();
      this.expect("=");
      lets.push({ name, expr: this.pipeOrScalar() });
      this.expect(";");
    }
    const body = this.pipeOrScalar();
    if (this.peek().k !== "eof") throw new Error(`kql_eval: unexpected ${this.peek().v} after the query`);
    return { lets, body };
  }
  pipeOrScalar() {
    const e = this.expr();
    if (!this.is("|")) return e;
    const ops = [];
    while (this.is("|")) {
      this.next();
      ops.push(this.operator());
    }
    return { k: "pipe", source: e, ops };
  }
  operator() {
    const op = this.ident();
    switch (op) {
      case "where":
        return { op, e: this.expr() };
      case "extend":
      case "project":
        return { op, cols: this.assignments() };
      case "summarize": {
        const aggs = this.assignments();
        let by = [];
        if (this.is("by")) {
          this.next();
          by = this.assignments();
        }
        return { op, aggs, by };
      }
      case "order":
      case "sort": {
        this.expect("by");
        const keys = [];
        do {
          if (keys.length) this.next();
          const e = this.expr();
          let desc = true;
          if (this.is("asc") || this.is("desc")) desc = this.next().v === "desc";
          keys.push({ e, desc });
        } while (this.is(","));
        return { op: "order", keys };
      }
      case "join": {
        this.expect("kind");
        this.expect("=");
        const kind = this.ident();
        if (kind !== "inner") throw new Error(`kql_eval: join kind=${kind} is not supported`);
        this.expect("(");
        const right = this.pipeOrScalar();
        this.expect(")");
        this.expect("on");
        const on = this.ident();
        return { op, right, on };
      }
      case "count":
        return { op };
      default:
        throw new Error(`kql_eval: operator ${op} is not supported`);
    }
  }
  assignments() {
    const out = [];
    do {
      if (out.length) this.next();
      if (this.peek().k === "id" && this.is("=", 1)) {
        const name = this.ident();
        this.next();
        out.push({ name, e: this.expr() });
      } else {
        const e = this.expr();
        out.push({ name: defaultName(e), e });
      }
    } while (this.is(","));
    return out;
  }

  // Scalar expressions, lowest precedence first.
  expr() {
    return this.or();
  }
  or() {
    let l = this.and();
    while (this.is("or")) {
      this.next();
      l = { k: "bin", op: "or", l, r: this.and() };
    }
    return l;
  }
  and() {
    let l = this.cmp();
    while (this.is("and")) {
      this.next();
      l = { k: "bin", op: "and", l, r: this.cmp() };
    }
    return l;
  }
  cmp() {
    let l = this.add();
    for (;;) {
      const t = this.peek();
      const op = t.v;
      if (t.k === "p" && ["==", "!=", "<", ">", "<=", ">=", "!startswith", "!in"].includes(op)) {
        this.next();
        l = op === "!in" ? { k: "in", neg: true, l, set: this.list() } : { k: "bin", op, l, r: this.add() };
      } else if (t.k === "id" && op === "in") {
        this.next();
        l = { k: "in", neg: false, l, set: this.list() };
      } else if (t.k === "id" && op === "startswith") {
        this.next();
        l = { k: "bin", op, l, r: this.add() };
      } else {
        return l;
      }
    }
  }
  list() {
    this.expect("(");
    const items = [];
    while (!this.is(")")) {
      if (items.length) this.expect(",");
      items.push(this.expr());
    }
    this.expect(")");
    return items;
  }
  add() {
    let l = this.mul();
    while (this.is("+") || this.is("-")) {
      const op = this.next().v;
      l = { k: "bin", op, l, r: this.mul() };
    }
    return l;
  }
  mul() {
    let l = this.unary();
    while (this.is("*") || this.is("/")) {
      const op = this.next().v;
      l = { k: "bin", op, l, r: this.unary() };
    }
    return l;
  }
  unary() {
    if (this.is("-")) {
      this.next();
      return { k: "bin", op: "-", l: { k: "lit", v: 0 }, r: this.unary() };
    }
    return this.postfix();
  }
  postfix() {
    let e = this.primary();
    for (;;) {
      if (this.is(".")) {
        this.next();
        e = { k: "member", e, name: this.ident() };
      } else if (this.is("[")) {
        this.next();
        const key = this.next();
        if (key.k !== "str") throw new Error("kql_eval: only ['name'] indexing is supported");
        this.expect("]");
        e = { k: "member", e, name: key.v };
      } else {
        return e;
      }
    }
  }
  primary() {
    const t = this.next();
    if (t.k === "num" || t.k === "str") return { k: "lit", v: t.v };
    if (t.k === "dur") return { k: "lit", v: { dur: t.v } };
    if (t.k === "p" && t.v === "(") {
      const e = this.pipeOrScalar();
      this.expect(")");
      return e;
    }
    if (t.k !== "id") throw new Error(`kql_eval: unexpected ${t.v === undefined ? t.k : t.v}`);
    if (t.v === "true" || t.v === "false") return { k: "lit", v: t.v === "true" };
    if (t.v === "print") return { k: "print", cols: this.assignments() };
    if (t.v === "union") {
      const legs = [];
      do {
        if (legs.length) this.next();
        legs.push(this.ident());
      } while (this.is(","));
      return { k: "union", legs };
    }
    if (t.v === "dynamic") {
      this.expect("(");
      const start = this.i;
      let depth = 1;
      const parts = [];
      while (depth > 0) {
        const x = this.next();
        if (x.v === "(") depth++;
        if (x.v === ")") depth--;
        if (depth > 0) parts.push(x.k === "str" ? JSON.stringify(x.v) : x.v);
        if (x.k === "eof") throw new Error("kql_eval: unterminated dynamic()");
      }
      void start;
      return { k: "lit", v: JSON.parse(parts.join("")) };
    }
    if (this.is("(")) {
      if (t.v === "toscalar") {
        this.next();
        const q = this.pipeOrScalar();
        this.expect(")");
        return { k: "toscalar", q };
      }
      return { k: "call", f: t.v, args: this.list() };
    }
    return { k: "ref", name: t.v };
  }
}

function defaultName(e) {
  if (e.k === "ref") return e.name;
  if (e.k === "call") {
    if (e.f === "count") return "count_";
    const a = e.args[0];
    return a && a.k === "ref" ? `${e.f}_${a.name}` : `${e.f}_`;
  }
  return "Column1";
}

// --- evaluation ------------------------------------------------------------------

const isNull = (v) => v === null || v === undefined;

function cmpValues(a, b) {
  if (a instanceof KDate && b instanceof KDate) return a.ms - b.ms;
  if (typeof a === "number" && typeof b === "number") return a - b;
  if (typeof a === "string" && typeof b === "string") return a < b ? -1 : a > b ? 1 : 0;
  throw new Error(`kql_eval: cannot compare ${typeof a} with ${typeof b}`);
}

function equal(a, b) {
  if (a instanceof KDate && b instanceof KDate) return a.ms === b.ms;
  return a === b;
}

function tostring(v) {
  if (isNull(v)) return "";
  if (v instanceof KDate) return v.toString();
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

function tonumber(v, int) {
  if (isNull(v) || v === "") return null;
  const n = typeof v === "number" ? v : typeof v === "string" && /^-?[0-9.]+$/.test(v) ? Number(v) : NaN;
  if (Number.isNaN(n)) return null;
  return int ? Math.trunc(n) : n;
}

function todatetime(v) {
  if (v instanceof KDate) return v;
  if (typeof v !== "string" || v === "") return null;
  const ms = Date.parse(v);
  return Number.isNaN(ms) ? null : new KDate(ms);
}

const PERIOD = { millisecond: 1, second: 1000, minute: 60000, hour: 3600000, day: 86400000 };

class Evaluator {
  constructor(tables, now) {
    this.tables = tables; // name -> rows
    this.now = now; // KDate
  }

  run(q) {
    const env = {};
    for (const l of q.lets) {
      env[l.name] = this.value(l.expr, env);
    }
    const out = this.value(q.body, env);
    if (!Array.isArray(out)) throw new Error("kql_eval: the query does not end in a table");
    return out;
  }

  // value is a table (array of rows) for a tabular expression, else a scalar.
  value(e, env) {
    if (e.k === "pipe") return this.pipe(e, env);
    if (e.k === "print") {
      const o = {};
      for (const c of e.cols) o[c.name] = this.scalar(c.e, o, env);
      return [o];
    }
    if (e.k === "union") return e.legs.flatMap((l) => this.value({ k: "ref", name: l }, env));
    if (e.k === "ref" && (e.name in env || e.name in this.tables)) {
      const v = e.name in env ? env[e.name] : this.tables[e.name];
      return Array.isArray(v) ? v.map((r) => ({ ...r })) : v;
    }
    return this.scalar(e, {}, env);
  }

  pipe(e, env) {
    let rows = this.value(e.source, env);
    if (!Array.isArray(rows)) throw new Error("kql_eval: a pipe must start with a table");
    for (const op of e.ops) rows = this.apply(op, rows, env);
    return rows;
  }

  apply(op, rows, env) {
    switch (op.op) {
      case "where":
        return rows.filter((r) => this.scalar(op.e, r, env) === true);
      case "extend":
        return rows.map((r) => {
          const o = { ...r };
          for (const c of op.cols) o[c.name] = this.scalar(c.e, o, env);
          return o;
        });
      case "project":
        return rows.map((r) => {
          const o = {};
          for (const c of op.cols) o[c.name] = this.scalar(c.e, r, env);
          return o;
        });
      case "order":
        return rows
          .map((r, i) => ({ r, i }))
          .sort((a, b) => {
            for (const k of op.keys) {
              const x = this.scalar(k.e, a.r, env);
              const y = this.scalar(k.e, b.r, env);
              if (isNull(x) || isNull(y)) {
                if (isNull(x) !== isNull(y)) return isNull(x) === k.desc ? 1 : -1;
                continue;
              }
              const c = cmpValues(x, y);
              if (c !== 0) return k.desc ? -c : c;
            }
            return a.i - b.i;
          })
          .map((x, i, all) => ({ ...x.r, __prev: i > 0 ? all[i - 1].r : null }));
      case "summarize":
        return this.summarize(op, rows, env);
      case "join": {
        const right = this.value(op.right, env);
        const out = [];
        for (const l of rows)
          for (const r of right) {
            if (!equal(l[op.on], r[op.on])) continue;
            const o = { ...l };
            for (const [k, v] of Object.entries(r)) o[k in o && k !== op.on ? k + "1" : k] = v;
            out.push(o);
          }
        return out;
      }
      case "count":
        return [{ Count: rows.length }];
    }
    throw new Error(`kql_eval: operator ${op.op}`);
  }

  summarize(op, rows, env) {
    const groups = new Map();
    for (const r of rows) {
      const key = op.by.map((b) => this.scalar(b.e, r, env));
      const k = JSON.stringify(key.map((v) => (v instanceof KDate ? { d: v.ms } : v)));
      if (!groups.has(k)) groups.set(k, { key, rows: [] });
      groups.get(k).rows.push(r);
    }
    // Without `by`, an empty input still yields one row (count 0, nulls).
    if (op.by.length === 0 && groups.size === 0) groups.set("[]", { key: [], rows: [] });
    const out = [];
    for (const g of groups.values()) {
      const o = {};
      op.by.forEach((b, i) => (o[b.name] = g.key[i]));
      for (const a of op.aggs) o[a.name] = this.aggregate(a.e, g.rows, env);
      out.push(o);
    }
    return out;
  }

  aggregate(e, rows, env) {
    if (e.k !== "call") throw new Error("kql_eval: summarize needs aggregate calls");
    const arg = (i, r) => this.scalar(e.args[i], r, env);
    const pick = (pred) => rows.filter((r) => pred === undefined || this.scalar(pred, r, env) === true);
    const extreme = (rs, sign) => {
      let best = null;
      for (const r of rs) {
        const v = arg(0, r);
        if (!isNull(v) && (best === null || sign * cmpValues(v, best) > 0)) best = v;
      }
      return best;
    };
    switch (e.f) {
      case "count":
        return rows.length;
      case "countif":
        return pick(e.args[0]).length;
      case "min":
        return extreme(rows, -1);
      case "max":
        return extreme(rows, 1);
      case "minif":
        return extreme(pick(e.args[1]), -1);
      case "maxif":
        return extreme(pick(e.args[1]), 1);
      case "take_any": {
        const r = rows.find((x) => !isNull(arg(0, x)));
        return r ? arg(0, r) : null;
      }
      case "take_anyif": {
        const r = pick(e.args[1]).find((x) => !isNull(arg(0, x)));
        return r ? arg(0, r) : null;
      }
      case "dcount": {
        const seen = new Set();
        for (const r of rows) {
          const v = arg(0, r);
          if (!isNull(v)) seen.add(v instanceof KDate ? `d${v.ms}` : JSON.stringify(v));
        }
        return seen.size;
      }
      case "sum": {
        let total = 0;
        for (const r of rows) {
          const v = arg(0, r);
          if (isNull(v)) continue;
          if (typeof v !== "number") throw new Error(`kql_eval: sum() of ${typeof v}`);
          total += v;
        }
        return total;
      }
      case "make_set": {
        const s = [];
        for (const r of rows) {
          const v = arg(0, r);
          if (!isNull(v) && !s.includes(v)) s.push(v);
        }
        return s;
      }
    }
    throw new Error(`kql_eval: aggregate ${e.f} is not supported`);
  }

  scalar(e, row, env) {
    switch (e.k) {
      case "lit":
        return e.v;
      case "ref":
        if (e.name in row) return row[e.name];
        if (e.name in env && !Array.isArray(env[e.name])) return env[e.name];
        throw new Error(`kql_eval: unknown name ${e.name}`);
      case "member": {
        const o = this.scalar(e.e, row, env);
        return o !== null && typeof o === "object" && !(o instanceof KDate) && e.name in o ? o[e.name] : null;
      }
      case "toscalar": {
        const t = this.value(e.q, env);
        if (!Array.isArray(t)) return t;
        if (t.length === 0) return null;
        const first = Object.keys(t[0]).filter((k) => k !== "__prev")[0];
        return t[0][first];
      }
      case "in": {
        const v = this.scalar(e.l, row, env);
        let set = [];
        for (const s of e.set) {
          const x = this.scalar(s, row, env);
          set = set.concat(Array.isArray(x) ? x : [x]);
        }
        const found = set.some((x) => equal(x, v));
        return e.neg ? !found : found;
      }
      case "bin":
        return this.binary(e, row, env);
      case "call":
        return this.call(e, row, env);
      case "pipe":
        throw new Error("kql_eval: a table where a value is expected");
    }
    throw new Error(`kql_eval: expression ${e.k}`);
  }

  binary(e, row, env) {
    const l = this.scalar(e.l, row, env);
    if (e.op === "and") return l === true && this.scalar(e.r, row, env) === true;
    if (e.op === "or") return l === true || this.scalar(e.r, row, env) === true;
    const r = this.scalar(e.r, row, env);
    switch (e.op) {
      case "==":
        return isNull(l) || isNull(r) ? false : equal(l, r);
      case "!=":
        return isNull(l) || isNull(r) ? false : !equal(l, r);
      case "<":
      case ">":
      case "<=":
      case ">=": {
        if (isNull(l) || isNull(r)) return false;
        const c = cmpValues(l, r);
        return { "<": c < 0, ">": c > 0, "<=": c <= 0, ">=": c >= 0 }[e.op];
      }
      case "startswith":
        return tostring(l).toLowerCase().startsWith(tostring(r).toLowerCase());
      case "!startswith":
        return !tostring(l).toLowerCase().startsWith(tostring(r).toLowerCase());
    }
    if (isNull(l) || isNull(r)) return null;
    const num = (x) => (x && x.dur !== undefined ? x.dur : x);
    if (l instanceof KDate && r && r.dur !== undefined) return new KDate(e.op === "+" ? l.ms + r.dur : l.ms - r.dur);
    const a = num(l);
    const b = num(r);
    if (typeof a !== "number" || typeof b !== "number") throw new Error(`kql_eval: ${e.op} on ${typeof a} and ${typeof b}`);
    return { "+": a + b, "-": a - b, "*": a * b, "/": a / b }[e.op];
  }

  call(e, row, env) {
    const a = (i) => this.scalar(e.args[i], row, env);
    switch (e.f) {
      case "parse_json": {
        const s = a(0);
        if (typeof s !== "string") return s;
        try {
          return JSON.parse(s);
        } catch {
          return s;
        }
      }
      case "tostring":
        return tostring(a(0));
      case "tolong":
        return tonumber(a(0), true);
      case "todouble":
        return tonumber(a(0), false);
      case "todatetime":
        return todatetime(a(0));
      case "isnull":
        return isNull(a(0));
      case "isnotnull":
        return !isNull(a(0));
      case "isempty":
        return isNull(a(0)) || a(0) === "";
      case "isnotempty":
        return !(isNull(a(0)) || a(0) === "");
      case "iff":
        return a(0) === true ? a(1) : a(2);
      case "case": {
        for (let i = 0; i + 1 < e.args.length; i += 2) if (a(i) === true) return a(i + 1);
        return a(e.args.length - 1);
      }
      case "not": {
        const v = a(0);
        return isNull(v) ? null : v !== true;
      }
      case "bin": {
        const v = a(0);
        const size = a(1);
        const step = size && size.dur !== undefined ? size.dur : size;
        if (isNull(v)) return null;
        if (typeof step !== "number" || step <= 0) throw new Error("kql_eval: bin() needs a positive size");
        if (v instanceof KDate) return new KDate(Math.floor(v.ms / step) * step);
        if (typeof v === "number") return Math.floor(v / step) * step;
        throw new Error(`kql_eval: bin() of ${typeof v}`);
      }
      case "now":
        return this.now;
      case "ago": {
        const d = a(0);
        if (!d || d.dur === undefined) throw new Error("kql_eval: ago() needs a timespan");
        return new KDate(this.now.ms - d.dur);
      }
      case "datetime_diff": {
        const unit = PERIOD[a(0)];
        const x = a(1);
        const y = a(2);
        if (!unit) throw new Error(`kql_eval: datetime_diff period ${a(0)}`);
        if (isNull(x) || isNull(y)) return null;
        return Math.trunc((x.ms - y.ms) / unit);
      }
      case "prev": {
        if (!("__prev" in row)) throw new Error("kql_eval: prev() needs a serialized (ordered) table");
        const p = row.__prev;
        return p === null ? null : this.scalar(e.args[0], p, env);
      }
    }
    throw new Error(`kql_eval: function ${e.f} is not supported`);
  }
}

// evaluate runs query over tables ({name: rows}, each row an object of
// column values; datetime columns as ISO strings) at the instant now (ISO).
function evaluate(query, tables, now) {
  const conv = {};
  for (const [name, rows] of Object.entries(tables)) {
    conv[name] = rows.map((r) => {
      const o = {};
      for (const [k, v] of Object.entries(r)) o[k] = k === "TimeGenerated" ? todatetime(v) : v;
      return o;
    });
  }
  const out = new Evaluator(conv, new KDate(Date.parse(now))).run(new Parser(query).query());
  return out.map((r) => {
    const o = { ...r };
    delete o.__prev;
    return o;
  });
}

module.exports = { evaluate };
