// SPDX-License-Identifier: Apache-2.0
// Markdown report of one bench/tpch/run.sh session, from the folder it wrote:
// meta.env (key=value), ember/qN.{status,times,metrics}, peers/qN/timings.json
// (../shared/peers/run-peers.mjs) and cmp/qN.{status,txt} (plans_compare.mjs).
//
// Times: each engine's median over the timed runs. Ember's is the whole
// process (start, plan parse, run, CSV to /dev/null), DuckDB's and Polars'
// are in-process query calls including materializing the result, so the
// ratio is slightly unfavourable to Ember; Ember's in-process time of the one
// --metrics run is shown beside it. Ratio = Ember / DuckDB (below 1: Ember is
// faster); the geometric mean and the sums cover the queries both ran.
//
// Profile: `ember run --metrics` prints, per plan node, the time spent in the
// operator including its children in the same pipeline (summed over tasks).
// Self time = that minus the direct children's, with the plan's own tree
// (the indented "+-"/":-" outline of EXPLAIN FORMATTED) giving the children.
// Nodes without metrics (ColumnarToRow, WholeStageCodegen markers) are
// transparent: their children count as the parent's. An exchange read
// (ShuffleRead, BroadcastRead) is a stage boundary: what lies below it ran in
// an earlier stage and is not subtracted. Self times are clamped at zero
// (timer granularity), so shares are of the summed self times.
//
// usage: node report.mjs RUN_DIR   (Markdown on stdout)
import fs from 'node:fs';
import path from 'node:path';

const dir = process.argv[2];
if (!dir) {
  console.error('usage: node report.mjs RUN_DIR');
  process.exit(2);
}
const read = (...p) => {
  const f = path.join(dir, ...p);
  return fs.existsSync(f) ? fs.readFileSync(f, 'utf8') : null;
};
const meta = Object.fromEntries(
  (read('meta.env') ?? '').split('\n').filter((l) => l.includes('='))
    .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  return n === 0 ? null : n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
};
const fmt = (ms) => (ms == null ? '-' : ms >= 100 ? ms.toFixed(0) : ms.toFixed(1));

// The plan's tree: node id -> ids of its direct children, from the outline(s)
// after "== Physical Plan ==" and after each "Subquery:N" header.
function planTree(text) {
  const children = new Map();
  let inTree = false;
  let stack = []; // [depth, id]
  for (const line of text.split('\n')) {
    if (/^== Physical Plan ==/.test(line) || /^Subquery:\d+/.test(line)) {
      inTree = true;
      stack = [];
      continue;
    }
    if (!inTree) continue;
    if (line.trim() === '') {
      if (stack.length) inTree = false; // the blank line after an outline ends it
      continue;
    }
    const m = line.match(/^([ :|+-]*?)(?:\* )?([A-Za-z][^()]*?(?:\([^)]*\))?[^()]*?) \((\d+)\)\s*$/);
    if (!m) continue;
    const prefix = m[1];
    const marker = Math.max(prefix.lastIndexOf('+-'), prefix.lastIndexOf(':-'));
    const depth = marker < 0 ? 0 : marker / 3 + 1;
    const id = Number(m[3]);
    while (stack.length && stack[stack.length - 1][0] >= depth) stack.pop();
    if (stack.length) {
      const parent = stack[stack.length - 1][1];
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(id);
    }
    stack.push([depth, id]);
  }
  return children;
}

// `ember run --metrics` stderr: the query line and the per-node table.
function parseMetrics(text) {
  const out = { query_s: null, nodes: new Map() };
  const q = text.match(/query: ([0-9.]+) s/);
  if (q) out.query_s = Number(q[1]);
  let inNodes = false;
  for (const line of text.split('\n')) {
    if (/^node\s+operator\s+tasks/.test(line)) {
      inNodes = true;
      continue;
    }
    if (!inNodes) continue;
    // "Name (id) [loreId=N]   Operator   tasks rows batches ms peakKiB"; names have spaces
    const m = line.match(/^(.*?) \((\d+)\)(?: \[loreId=\d+\])?\s+(.+?)\s+(\d+)\s+(\d+)\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s*$/);
    if (!m) continue;
    const id = Number(m[2]);
    const prev = out.nodes.get(id);
    const ms = Number(m[7]);
    if (prev) prev.ms += ms; // a node listed twice (e.g. a reused subquery): add up
    else out.nodes.set(id, { id, name: m[1].trim(), op: m[3], rows: Number(m[5]), ms });
  }
  return out;
}

function selfTimes(metrics, tree) {
  const effective = (id, seen = new Set()) => {
    const res = [];
    for (const c of tree.get(id) ?? []) {
      if (seen.has(c)) continue;
      seen.add(c);
      if (metrics.nodes.has(c)) res.push(c);
      else res.push(...effective(c, seen));
    }
    return res;
  };
  const rows = [];
  for (const n of metrics.nodes.values()) {
    const boundary = /Read$/.test(n.op);
    const kids = boundary ? [] : effective(n.id);
    const sub = kids.reduce((s, c) => s + metrics.nodes.get(c).ms, 0);
    rows.push({ ...n, self: Math.max(0, n.ms - sub) });
  }
  return rows;
}

const qs = [];
for (let n = 1; n <= 22; n++) if (read('ember', `q${n}.status`) != null) qs.push(`q${n}`);
const engines = (meta.engines ?? 'duckdb,polars').split(',');
const rows = [];
const byOp = new Map();
let opTotal = 0;
for (const q of qs) {
  const status = read('ember', `${q}.status`).trim();
  const times = (read('ember', `${q}.times`) ?? '').split('\n').filter(Boolean).map(Number);
  const mt = read('ember', `${q}.metrics`);
  const plan = meta.plans ? path.join(meta.plans, `${q}.txt`) : null;
  const r = { q, status, ember: status === 'ok' ? median(times) : null, peers: {} };
  const pj = read('peers', q, 'timings.json');
  const pt = pj ? JSON.parse(pj) : null;
  if (pt) {
    r.versions = pt.engines;
    for (const e of engines) {
      const x = pt.queries?.[q]?.[e];
      r.peers[e] = x ?? { status: 'not run' };
    }
  }
  // Spark folded q6 to an empty LocalTableScan for DECIMAL(10,0) money (the
  // discount range can never match): Ember runs no query at all, so that
  // ratio measures nothing and stays out of the totals. On DECIMAL(15,2) data
  // the folded plan cannot give the query's answer either.
  const planText = plan && fs.existsSync(plan) ? fs.readFileSync(plan, 'utf8') : '';
  r.folded = /LocalTableScan/.test(planText) && !/Scan parquet/.test(planText);
  r.cmp = (read('cmp', `${q}.status`) ?? '').trim() || null;
  r.cmpText = (read('cmp', `${q}.txt`) ?? '').trim().split('\n')[0];
  if (status === 'ok' && mt) {
    const m = parseMetrics(mt);
    r.query_ms = m.query_s == null ? null : m.query_s * 1000;
    const tree = planTree(planText);
    const st = selfTimes(m, tree);
    const total = st.reduce((s, x) => s + x.self, 0);
    r.top = st.sort((a, b) => b.self - a.self).slice(0, 3)
      .filter((x) => x.self > 0)
      .map((x) => `${x.name} (${x.id}) ${total ? Math.round((100 * x.self) / total) : 0}%`);
    for (const x of st) {
      const a = byOp.get(x.op) ?? { ms: 0, queries: new Set() };
      a.ms += x.self;
      if (x.self > 0) a.queries.add(q);
      byOp.set(x.op, a);
      opTotal += x.self;
    }
  }
  rows.push(r);
}

const L = [];
const when = meta.started ? meta.started.slice(0, 10) : '';
L.push(`# TPC-H SF ${meta.sf}: Ember vs ${engines.map((e) => (e === 'duckdb' ? 'DuckDB' : e === 'polars' ? 'Polars' : e)).join(' and ')} (${when})`);
L.push('');
const vers = rows.find((r) => r.versions)?.versions ?? {};
L.push(`- Plans: Spark ${meta.spark_version} (\`${meta.plans}\`); data: \`ember gen tpch\`, ${meta.schema} schema${meta.schema === 'standard' ? ' (DECIMAL(15,2)), plans run with --retype' : " (Spark's DECIMAL(10,0)), plans run as printed"}.`);
L.push(`- ${meta.threads} threads for every engine; ${meta.warmup} warm-up + median of ${meta.runs} runs.`);
L.push(`- Ember: source tree at ${meta.ember_commit} when the run started, binary \`${meta.ember}\`; ${Object.entries(vers).map(([k, v]) => `${k}: ${v}`).join('; ')}.`);
L.push(`- Machine: ${meta.cores} cores, ${meta.cpu}; load average (1, 5, 15 min) ${meta.load_before} at the start, ${meta.load_after} at the end (${meta.started} to ${meta.finished}). The machine is shared: other work ran at the same time.`);
L.push("- Ember's time is the whole process (start, plan parse, run, CSV out to /dev/null); \"in-proc\" is the query time `--metrics` reports for its one profiled run. DuckDB's and Polars' are in-process query calls including materializing the result.");
L.push('');
const peerCols = engines.map((e) => (e === 'duckdb' ? 'DuckDB ms' : e === 'polars' ? 'Polars ms' : `${e} ms`));
L.push(`| query | Ember ms | in-proc ms | ${peerCols.join(' | ')} | Ember/DuckDB | = DuckDB | rows | Ember's top operators (self time) |`);
L.push(`|---|---:|---:|${engines.map(() => '---:').join('|')}|---:|---|---:|---|`);
const ratios = [];
let sumE = 0, sumD = 0, nBoth = 0, nEq = 0, nEmber = 0;
const peerSums = Object.fromEntries(engines.map((e) => [e, { ms: 0, n: 0 }]));
for (const r of rows) {
  const d = r.peers.duckdb;
  const dms = d?.status === 'ok' ? d.median_ms : null;
  const cells = engines.map((e) => {
    const x = r.peers[e];
    if (!x) return '-';
    if (x.status === 'ok') {
      peerSums[e].ms += x.median_ms;
      peerSums[e].n++;
      return fmt(x.median_ms);
    }
    return x.status;
  });
  let ratio = null;
  if (r.ember != null) nEmber++;
  if (r.ember != null && dms) {
    ratio = r.ember / dms;
  }
  if (ratio != null && !r.folded) {
    ratios.push(ratio);
    sumE += r.ember;
    sumD += dms;
    nBoth++;
  }
  if (r.cmp === 'ok') nEq++;
  const eq = r.cmp === 'ok' ? 'yes' : r.cmp === 'differs' ? `**no**: ${r.cmpText.slice(0, 80).replace(/\|/g, '\\|')}` : '-';
  const ember = r.ember != null ? fmt(r.ember) : `error`;
  const rowsN = d?.rows ?? '-';
  L.push(`| ${r.q}${r.folded ? ' (folded)' : ''} | ${ember} | ${fmt(r.query_ms)} | ${cells.join(' | ')} | ${ratio == null ? '-' : ratio.toFixed(2)} | ${eq} | ${rowsN} | ${(r.top ?? []).join(', ')} |`);
}
const geo = ratios.length ? Math.exp(ratios.reduce((s, x) => s + Math.log(x), 0) / ratios.length) : null;
L.push('');
L.push(`- Queries Ember ran: ${nEmber} of ${rows.length}; results equal to DuckDB's: ${nEq} of ${rows.length}.`);
L.push(`- Both Ember and DuckDB ran ${nBoth}: Ember ${fmt(sumE)} ms, DuckDB ${fmt(sumD)} ms in sum (ratio of sums ${sumD ? (sumE / sumD).toFixed(2) : '-'}); geometric mean of the per-query ratios **${geo == null ? '-' : geo.toFixed(2)}**.`);
for (const e of engines) L.push(`- ${e}: ${peerSums[e].n} queries ran, ${fmt(peerSums[e].ms)} ms in sum.`);
if (rows.some((r) => r.folded)) {
  L.push(`- ${rows.filter((r) => r.folded).map((r) => r.q).join(', ')} (folded): Spark folded the plan to an empty LocalTableScan (printed for DECIMAL(10,0) money, where the discount range can never match), so Ember executes nothing while DuckDB and Polars scan lineitem; left out of the Ember/DuckDB sums and the geometric mean.${meta.schema === 'standard' ? ' On DECIMAL(15,2) data the folded plan cannot give the answer, so it differs from DuckDB (an expected failure in tests/interop/tpch_plans.sh).' : ''}`);
}
const failed = rows.filter((r) => r.status !== 'ok');
if (failed.length) {
  L.push('');
  L.push('Ember errors:');
  for (const r of failed) L.push(`- ${r.q}: ${r.status.slice(0, 300)}`);
}
const peerErr = rows.flatMap((r) => engines.filter((e) => r.peers[e] && r.peers[e].status !== 'ok')
  .map((e) => `- ${r.q} ${e}: ${r.peers[e].status}${r.peers[e].error ? `: ${String(r.peers[e].error).slice(0, 160)}` : ''}`));
if (peerErr.length) {
  L.push('');
  L.push('Peers not run:');
  L.push(...peerErr);
}
L.push('');
L.push('## Where the time goes (Ember, from --metrics)');
L.push('');
L.push('Self time per operator kind over all queries (summed over tasks and threads, so it can exceed wall time):');
L.push('');
L.push('| operator | self ms | share | queries where it spends time |');
L.push('|---|---:|---:|---:|');
for (const [op, a] of [...byOp.entries()].sort((x, y) => y[1].ms - x[1].ms)) {
  if (a.ms <= 0) continue;
  L.push(`| ${op} | ${fmt(a.ms)} | ${opTotal ? ((100 * a.ms) / opTotal).toFixed(1) : 0}% | ${a.queries.size} |`);
}
console.log(L.join('\n'));
