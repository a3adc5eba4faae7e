// SPDX-License-Identifier: Apache-2.0
// Compares Ember's CSV result of a plan with DuckDB's for the same query.
//
// Values: equal text passes; numbers compare by value. A decimal printed
// with s fractional digits is exact at that scale, so it matches a value
// that rounds to it (|a - b| <= half a unit in its last place, e.g. Spark's
// avg as decimal(p+4, s+4) against DuckDB's double); other numbers (doubles)
// must agree within a relative 1e-9. Rows compare in order when the query
// orders its result (ORDER BY), otherwise both sides are sorted first.
// Rows that tie on every ORDER BY key may come in any order (Spark and
// DuckDB sort differently within ties), so the ordered comparison is by
// runs of equal keys, each run compared as a multiset; under a LIMIT the
// last run may have been cut at a different row, so only its keys count.
// Keys are the final ORDER BY's column names found in DuckDB's header; when
// one is not a plain output column the comparison stays row by row.
// Column names are not compared (Spark and DuckDB name expressions
// differently); column counts are.
//
// usage: node plans_compare.mjs EMBER.csv DUCKDB.csv QUERY.sql
// Prints "ok N rows" and exits 0, or prints the first difference and exits 1.
import fs from 'node:fs';

const [fa, fb, sqlFile] = process.argv.slice(2);
function parseCsv(text) {
  const rows = []; let row = []; let cell = ''; let q = false; let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (q) {
      if (c === '"') { if (text[i + 1] === '"') { cell += '"'; i += 2; continue; } q = false; i++; continue; }
      cell += c; i++; continue;
    }
    if (c === '"') { q = true; i++; continue; }
    if (c === ',') { row.push(cell); cell = ''; i++; continue; }
    if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(cell); rows.push(row); row = []; cell = ''; i++; continue;
    }
    cell += c; i++;
  }
  if (cell !== '' || row.length) { row.push(cell); rows.push(row); }
  return rows;
}
const DEC = /^[+-]?\d+(\.\d+)?$/;
const NUM = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const scale = (s) => (s.includes('.') ? s.length - s.indexOf('.') - 1 : 0);
function cellsEqual(a, b) {
  if (a === b) return true;
  if (!NUM.test(a) || !NUM.test(b)) return false;
  const x = Number(a), y = Number(b);
  const diff = Math.abs(x - y);
  const rel = 1e-9 * Math.max(1, Math.abs(x), Math.abs(y));
  if (diff <= rel) return true;
  // the coarser decimal is exact at its scale: the other must round to it
  let tol = 0;
  if (DEC.test(a) && DEC.test(b) && scale(a) !== scale(b)) tol = 0.5 * 10 ** -Math.min(scale(a), scale(b));
  else if (DEC.test(a) && !DEC.test(b)) tol = 0.5 * 10 ** -scale(a);
  else if (DEC.test(b) && !DEC.test(a)) tol = 0.5 * 10 ** -scale(b);
  else if (DEC.test(a) && DEC.test(b)) tol = 0.5 * 10 ** -Math.min(scale(a), scale(b));
  return diff <= tol * (1 + 1e-9) + rel;
}
const A = parseCsv(fs.readFileSync(fa, 'utf8'));
const B = parseCsv(fs.readFileSync(fb, 'utf8'));
const ordered = /\border\s+by\b/i.test(fs.readFileSync(sqlFile, 'utf8'));
const ha = A.shift() ?? [], hb = B.shift() ?? [];
function fail(msg) { console.log(msg); process.exit(1); }
if (ha.length !== hb.length) fail(`${ha.length} columns vs DuckDB's ${hb.length}`);
if (A.length !== B.length) fail(`${A.length} rows vs DuckDB's ${B.length}`);
function firstDiff(X, Y) {
  for (let r = 0; r < X.length; r++)
    for (let c = 0; c < X[r].length; c++)
      if (!cellsEqual(X[r][c], Y[r][c])) return `row ${r + 1} column ${c + 1} (${hb[c]}): ${X[r][c]} vs DuckDB's ${Y[r][c]}`;
  return null;
}
const key = (r) => r.map((c) => (NUM.test(c) ? Number(c).toPrecision(12) : c)).join('\u0001');
const sorted = (R) => [...R].sort((x, y) => (key(x) < key(y) ? -1 : key(x) > key(y) ? 1 : 0));
// The final ORDER BY's keys as column indexes, or null when one is an expression.
function orderKeys(sql) {
  const at = sql.search(/\border\s+by\b(?![\s\S]*\border\s+by\b)/i);
  if (at < 0) return null;
  let clause = sql.slice(at).replace(/^order\s+by/i, '');
  clause = clause.split(/\blimit\b|\)|;/i)[0];
  const cols = [];
  for (const part of clause.split(',')) {
    const name = part.trim().replace(/\s+(asc|desc)$/i, '').replace(/\s+nulls\s+(first|last)$/i, '').trim();
    const i = hb.findIndex((h) => h.toLowerCase() === name.toLowerCase());
    if (!/^\w+$/.test(name) || i < 0) return null;
    cols.push(i);
  }
  return cols.length ? cols : null;
}
function runsDiff(X, Y, cols, limited) {
  const sameKey = (r, t) => cols.every((c) => cellsEqual(r[c], t[c]));
  for (let r = 0; r < Y.length;) {
    let e = r + 1;
    while (e < Y.length && sameKey(Y[e], Y[r])) e++;
    for (let k = r; k < e; k++)
      if (!sameKey(X[k], Y[r])) return `row ${k + 1}: ORDER BY keys differ from DuckDB's (${cols.map((c) => `${X[k][c]} vs ${Y[r][c]}`).join(', ')})`;
    if (!(limited && e === Y.length)) {
      const d = firstDiff(sorted(X.slice(r, e)), sorted(Y.slice(r, e)));
      if (d) return `among rows ${r + 1}-${e} (tied on the ORDER BY keys): ${d}`;
    }
    r = e;
  }
  return null;
}
if (ordered) {
  const sql = fs.readFileSync(sqlFile, 'utf8');
  const cols = orderKeys(sql);
  const d = cols ? runsDiff(A, B, cols, /\blimit\s+\d+\s*;?\s*$/i.test(sql.trim())) : firstDiff(A, B);
  if (d) fail(firstDiff(sorted(A), sorted(B)) ? d : `same rows in another order: ${d}`);
} else {
  const d = firstDiff(sorted(A), sorted(B));
  if (d) fail(d);
}
console.log(`ok ${A.length} rows${ordered ? ' (ordered)' : ''}`);
