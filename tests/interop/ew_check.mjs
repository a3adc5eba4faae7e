// SPDX-License-Identifier: Apache-2.0
// Checks that DuckDB and Polars read the Parquet files Ember wrote with exactly
// the values Ember meant to write. For each DIR/NAME.parquet, DIR/NAME.json
// holds the column names, their Spark types and every row as canonical text
// (see tests/unit/test_parquet_write_peers.c). Each peer reads the file, its
// values are brought to the same canonical text (floats are compared as
// numbers, bit for bit, including NaN and -0), and the first difference ends
// the run with a non-zero exit. The column types each peer infers are checked
// too (e.g. timestamp must be UTC-adjusted, timestamp_ntz must not), and the
// row-group statistics DuckDB decodes (null counts, min/max).
//
// usage: PEERS_MODULES=... node ew_check.mjs DIR
import fs from 'node:fs';
import path from 'node:path';
import { duckConnect, polars } from './peers.mjs';

const dir = process.argv[2];
if (!dir) { console.error('usage: node ew_check.mjs DIR'); process.exit(2); }

function fail(msg) { console.error(`ew_check: ${msg}`); process.exit(1); }

function fmtDays(days) {
  return new Date(Number(days) * 86400000).toISOString().slice(0, 10);
}
function fmtMicros(text) {
  const us = BigInt(text);
  let secs = us / 1000000n, frac = us % 1000000n;
  if (frac < 0n) { frac += 1000000n; secs -= 1n; }
  const base = new Date(Number(secs) * 1000).toISOString().slice(0, 19).replace('T', ' ');
  return frac === 0n ? base : `${base}.${frac.toString().padStart(6, '0')}`;
}
const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');

// Canonical text comparison; floats by value.
function same(type, expected, got) {
  if (expected === null || got === null || got === undefined) return expected === (got ?? null);
  if (type === 'float' || type === 'double') {
    let want = Number(expected);
    if (type === 'float') want = Math.fround(want);
    return Object.is(want, Number(got));
  }
  return expected === got;
}

const duckTypes = {
  boolean: 'BOOLEAN', tinyint: 'TINYINT', smallint: 'SMALLINT', int: 'INTEGER', bigint: 'BIGINT',
  float: 'FLOAT', double: 'DOUBLE', string: 'VARCHAR', binary: 'BLOB', date: 'DATE',
  timestamp: 'TIMESTAMP WITH TIME ZONE', timestamp_ntz: 'TIMESTAMP', void: 'INTEGER',
};
const polarsTypes = {
  boolean: 'Bool', tinyint: 'Int8', smallint: 'Int16', int: 'Int32', bigint: 'Int64',
  float: 'Float32', double: 'Float64', string: 'String', binary: 'Binary', date: 'Date',
  timestamp: 'Datetime(us,UTC)', timestamp_ntz: 'Datetime(us,)', void: 'Int32',
};
const decimalType = (t, fmt) => {
  const m = /^decimal\((\d+),(\d+)\)$/.exec(t);
  return m ? fmt(m[1], m[2]) : null;
};

function compare(engine, exp, columns) {
  for (let c = 0; c < exp.columns.length; c++) {
    const got = columns[c];
    if (got.length !== exp.rows.length)
      fail(`${engine}: ${exp.file}: column ${exp.columns[c]}: ${got.length} rows, expected ${exp.rows.length}`);
    for (let r = 0; r < exp.rows.length; r++) {
      if (!same(exp.types[c], exp.rows[r][c], got[r]))
        fail(`${engine}: ${exp.file}: row ${r} column ${exp.columns[c]} (${exp.types[c]}): ` +
          `expected ${JSON.stringify(exp.rows[r][c])}, got ${JSON.stringify(got[r])}`);
    }
  }
}

async function checkDuck(con, exp) {
  const file = exp.file.replace(/'/g, "''");
  const desc = (await con.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${file}')`)).getRows();
  const exprs = exp.columns.map((name, c) => {
    const t = exp.types[c];
    const want = duckTypes[t] ?? decimalType(t, (p, s) => `DECIMAL(${p},${s})`);
    if (!desc[c] || desc[c][0] !== name || String(desc[c][1]) !== want)
      fail(`duckdb: ${exp.file}: column ${c} is ${desc[c]?.[0]} ${desc[c]?.[1]}, expected ${name} ${want}`);
    const q = `"${name}"`;
    if (t === 'float' || t === 'double') return q;
    if (t === 'binary') return `lower(hex(${q}))`;
    if (t === 'timestamp' || t === 'timestamp_ntz') return `CAST(epoch_us(${q}) AS VARCHAR)`;
    return `CAST(${q} AS VARCHAR)`;
  });
  const reader = await con.runAndReadAll(`SELECT ${exprs.join(', ')} FROM read_parquet('${file}')`);
  const rows = reader.getRows();
  const columns = exp.columns.map((_, c) => rows.map((row) => {
    const v = row[c];
    if (v === null) return null;
    const t = exp.types[c];
    if (t === 'timestamp' || t === 'timestamp_ntz') return fmtMicros(v);
    if (t === 'float' || t === 'double') return v;
    // DuckDB prints decimals below one without the leading zero (".5").
    return t.startsWith('decimal') ? String(v).replace(/^(-?)\./, '$10.') : String(v);
  }));
  compare('duckdb', exp, columns);
}

// Statistics as DuckDB decodes them (parquet_metadata), per row group: the
// null count of every column, and min/max of the types whose order is simple
// to restate here (integers, decimals, dates, strings, booleans).
const asBig = (t, v) => (t.startsWith('decimal') ? BigInt(v.replace('.', '')) : BigInt(v));
function order(t, a, b) {
  if (t === 'string') return Buffer.compare(Buffer.from(a), Buffer.from(b));
  if (t === 'date' || t === 'boolean') return a < b ? -1 : a > b ? 1 : 0;
  const x = asBig(t, a), y = asBig(t, b);
  return x < y ? -1 : x > y ? 1 : 0;
}
const ORDERED = new Set(['tinyint', 'smallint', 'int', 'bigint', 'date', 'string', 'boolean']);

async function checkDuckStats(con, exp) {
  if (!exp.statistics) return;
  const file = exp.file.replace(/'/g, "''");
  const meta = (await con.runAndReadAll(
    `SELECT row_group_id, row_group_num_rows, column_id, stats_min_value, stats_max_value, ` +
    `stats_null_count FROM parquet_metadata('${file}') ORDER BY row_group_id, column_id`)).getRows();
  let first = 0, group = -1, groupRows = 0;
  for (const [g, n, c, lo, hi, nulls] of meta) {
    if (Number(g) !== group) { first += groupRows; group = Number(g); groupRows = Number(n); }
    const t = exp.types[Number(c)], name = exp.columns[Number(c)];
    const vals = exp.rows.slice(first, first + groupRows).map((r) => r[Number(c)]);
    const want = vals.filter((v) => v === null).length;
    if (nulls === null || Number(nulls) !== want)
      fail(`duckdb: ${exp.file}: row group ${g} column ${name}: null count ${nulls}, expected ${want}`);
    if (!ORDERED.has(t) && !t.startsWith('decimal')) continue;
    const present = vals.filter((v) => v !== null);
    if (present.length === 0) {
      if (lo !== null || hi !== null) fail(`duckdb: ${exp.file}: ${name}: bounds on an all-null chunk`);
      continue;
    }
    const min = present.reduce((a, b) => (order(t, b, a) < 0 ? b : a));
    const max = present.reduce((a, b) => (order(t, b, a) > 0 ? b : a));
    const norm = (v) => (v === null ? null : t.startsWith('decimal') ? String(v).replace(/^(-?)\./, '$10.') : String(v));
    if (norm(lo) !== min || norm(hi) !== max)
      fail(`duckdb: ${exp.file}: row group ${g} column ${name}: statistics [${norm(lo)}, ${norm(hi)}], ` +
        `expected [${min}, ${max}]`);
  }
}

async function checkPolars(pl, exp) {
  const df = pl.readParquet(exp.file);
  if (df.height !== exp.rows.length)
    fail(`polars: ${exp.file}: ${df.height} rows, expected ${exp.rows.length}`);
  if (df.width !== exp.columns.length)
    fail(`polars: ${exp.file}: ${df.width} columns, expected ${exp.columns.length}`);
  const columns = exp.columns.map((name, c) => {
    const t = exp.types[c];
    const s = df.getColumn(name);
    let dtype;
    try { dtype = String(s.dtype).replace(/^DataType\((.*)\)$/, '$1'); } catch { dtype = 'Binary'; }
    const want = polarsTypes[t] ?? decimalType(t, (p, sc) => `Decimal(${p},${sc})`);
    if (dtype !== want) fail(`polars: ${exp.file}: column ${name} is ${dtype}, expected ${want}`);
    if (t === 'float' || t === 'double') return s.toArray();
    if (t === 'binary') return s.cast(pl.List(pl.UInt8)).toArray().map((v) => (v === null ? null : hex(v)));
    if (t === 'date') return s.cast(pl.Int32).toArray().map((v) => (v === null ? null : fmtDays(v)));
    if (t === 'timestamp' || t === 'timestamp_ntz')
      return s.cast(pl.Int64).cast(pl.Utf8).toArray().map((v) => (v === null ? null : fmtMicros(v)));
    return s.cast(pl.Utf8).toArray();
  });
  compare('polars', exp, columns);
}

const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
if (files.length === 0) fail(`no expected-value files in ${dir}`);
const con = await duckConnect(2);
const pl = await polars();
let cells = 0;
for (const f of files) {
  const exp = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
  if (!fs.existsSync(exp.file)) fail(`${exp.file} does not exist`);
  await checkDuck(con, exp);
  await checkDuckStats(con, exp);
  await checkPolars(pl, exp);
  cells += exp.rows.length * exp.columns.length;
  console.log(`ok ${path.basename(exp.file)}: ${exp.rows.length} rows x ${exp.columns.length} columns, DuckDB and Polars agree`);
}
const duckVersion = (await con.runAndReadAll('SELECT version()')).getRows()[0][0];
console.log(`ew_check: ${files.length} files, ${cells} values checked in each peer ` +
  `(DuckDB ${duckVersion}, nodejs-polars ${pl.version ?? '?'})`);
