// SPDX-License-Identifier: Apache-2.0
// Peers write, Ember reads: DuckDB and Polars write Parquet files covering every
// type Ember reads (nulls, an all-null column, empty strings, decimals of
// precisions 1..38 on INT32/INT64/FIXED_LEN_BYTE_ARRAY, dates, timestamps in
// ms/us/ns with and without time zone, unsigned integers, booleans), with each
// codec they can write, DuckDB's V2 pages (DELTA encodings, BYTE_STREAM_SPLIT,
// data page v2) and several row groups. Then DuckDB reads every file back and
// the values are written as Ember's canonical text (include/ember/value_text.h)
// to OUTDIR/expected.json: { "<file>": { "<column>": [text | null, ...] } }.
// unsupported_brotli.parquet is written beside them (a codec Ember refuses).
//
// Usage: node pw_make.mjs OUTDIR   (PEERS_MODULES must point at the peers' node_modules)
import fs from 'node:fs';
import path from 'node:path';
import { duckConnect, polars } from './peers.mjs';

const out = process.argv[2];
if (!out) { console.error('usage: node pw_make.mjs OUTDIR'); process.exit(2); }
fs.mkdirSync(out, { recursive: true });

const ROWS = 5000;
const conn = await duckConnect(2);
await conn.run("SET TimeZone = 'UTC'");

// The source table: every type, a null every 7th row in most columns.
const nul = (expr, k = 7) => `CASE WHEN i % ${k} = 3 THEN NULL ELSE ${expr} END`;
await conn.run(`CREATE TABLE src AS SELECT
  ${nul("i % 3 = 0")}::BOOLEAN AS b,
  (i % 3 = 1)::BOOLEAN AS b_nn,
  ${nul("((i * 37) % 256 - 128)")}::TINYINT AS i8,
  ${nul("((i * 7919) % 65536 - 32768)")}::SMALLINT AS i16,
  ${nul("CASE WHEN i = 1 THEN 2147483647 WHEN i = 2 THEN -2147483648 ELSE (i * 1000003) % 2000000000 - 1000000000 END")}::INTEGER AS i32,
  ${nul("CASE WHEN i = 1 THEN 9223372036854775807 WHEN i = 2 THEN -9223372036854775808 ELSE i::BIGINT * 3037000493 - 4000000000000 END")}::BIGINT AS i64,
  (i % 100)::INTEGER AS i32_dict,
  ${nul("(i * 13) % 256")}::UTINYINT AS u8,
  ${nul("(i * 7919) % 65536")}::USMALLINT AS u16,
  ${nul("CASE WHEN i = 1 THEN 4294967295 ELSE (i::BIGINT * 2654435761) % 4294967296 END")}::UINTEGER AS u32,
  ${nul("CASE WHEN i = 1 THEN 18446744073709551615::UBIGINT ELSE ((i::HUGEINT * 11400714819323198485) % 18446744073709551616)::UBIGINT END")} AS u64,
  ${nul("CASE WHEN i = 4 THEN 'NaN'::FLOAT WHEN i = 5 THEN 'inf'::FLOAT WHEN i = 6 THEN '-inf'::FLOAT WHEN i = 8 THEN -0.0::FLOAT ELSE (i * 1.37 - 1000)::FLOAT / 7 END")}::FLOAT AS f,
  ${nul("CASE WHEN i = 4 THEN 'NaN'::DOUBLE WHEN i = 5 THEN 1e300 WHEN i = 6 THEN -5e-324 WHEN i = 8 THEN -0.0 ELSE (i * 3.14159 - 4000) / 3 END")}::DOUBLE AS d,
  ${nul("CASE WHEN i % 11 = 0 THEN '' ELSE 'str' || (i % 50)::VARCHAR || repeat('x', i % 5) END")} AS s,
  ${nul("'unique-' || i::VARCHAR || '-' || md5(i::VARCHAR)")} AS s_uniq,
  ${nul("CASE WHEN i % 13 = 0 THEN ''::BLOB ELSE ('\\x00\\xFF' || (i % 9)::VARCHAR)::BLOB END")} AS bin,
  ${nul("DATE '1970-01-01' + INTERVAL (i * 37 - 40000) DAY")}::DATE AS dt,
  ${nul("TIMESTAMP '2001-02-03 04:05:06.123456' + INTERVAL (i * 7777777) SECOND + INTERVAL (i * 13) MICROSECOND - INTERVAL 1000000000 SECOND")}::TIMESTAMP AS ts,
  ${nul("TIMESTAMP '1969-12-31 23:59:59' + INTERVAL (i * 123457) MILLISECOND")}::TIMESTAMP_MS AS ts_ms,
  ${nul("make_timestamp_ns(1700000000000000000 + i::BIGINT * 1234567891)")} AS ts_ns,
  ${nul("TIMESTAMPTZ '2020-06-01 12:00:00+00' + INTERVAL (i * 9999) SECOND")} AS tstz,
  ${nul("((i % 19) - 9)")}::DECIMAL(1,0) AS dec1,
  ${nul("((i * 7) % 10000 - 5000) / 100")}::DECIMAL(4,2) AS dec4,
  ${nul("((i * 7919) % 1000000000 - 500000000) / 1000")}::DECIMAL(9,3) AS dec9,
  ${nul("(i::BIGINT * 123456789 % 10000000000 - 5000000000) / 100")}::DECIMAL(10,2) AS dec10,
  ${nul("(i::HUGEINT * 1234567890123 % 1000000000000000000 - 500000000000000000) / 1000000")}::DECIMAL(18,6) AS dec18,
  ${nul("(i::HUGEINT * 98765432109876543 % 10000000000000000000 - 5000000000000000000) / 10000")}::DECIMAL(19,4) AS dec19,
  ${nul("(i::HUGEINT * 1234567890123456789012345 % 100000000000000000000000000000000000000 - 50000000000000000000000000000000000000) / 10000000000")}::DECIMAL(38,10) AS dec38,
  NULL::INTEGER AS all_null,
  CASE WHEN i % 2 = 0 THEN '' ELSE NULL END AS empty_or_null
FROM range(${ROWS}) t(i)`);

const files = [];
const duck = async (name, opts) => {
  const file = path.join(out, name);
  await conn.run(`COPY src TO '${file}' (FORMAT PARQUET, ${opts})`);
  files.push(name);
};
for (const codec of ['uncompressed', 'snappy', 'gzip', 'zstd', 'lz4_raw'])
  await duck(`duckdb_${codec}.parquet`, `COMPRESSION '${codec}', ROW_GROUP_SIZE 2048`);
for (const codec of ['uncompressed', 'snappy', 'zstd'])
  await duck(`duckdb_v2_${codec}.parquet`, `COMPRESSION '${codec}', PARQUET_VERSION 'V2', ROW_GROUP_SIZE 2048`);
await duck('duckdb_one_group.parquet', `COMPRESSION 'snappy', ROW_GROUP_SIZE 100000`);

// A NOT NULL table (DuckDB still writes OPTIONAL columns, but never a null).
await conn.run(`CREATE TABLE req (a INTEGER NOT NULL, s VARCHAR NOT NULL, d DOUBLE NOT NULL, dec DECIMAL(12,3) NOT NULL)`);
await conn.run(`INSERT INTO req SELECT i, 'r' || (i % 17)::VARCHAR, i / 8, (i * 1001 - 70000) / 1000 FROM range(${ROWS}) t(i)`);
for (const v of ['V1', 'V2']) {
  const name = `duckdb_required_${v}.parquet`;
  await conn.run(`COPY req TO '${path.join(out, name)}' (FORMAT PARQUET, PARQUET_VERSION '${v}', ROW_GROUP_SIZE 1000)`);
  files.push(name);
}

// Polars: read the DuckDB file and write it again with each of its codecs.
const pl = await polars();
const df = pl.readParquet(path.join(out, 'duckdb_snappy.parquet'));
for (const codec of ['uncompressed', 'snappy', 'gzip', 'lz4', 'zstd']) {
  const name = `polars_${codec}.parquet`;
  df.writeParquet(path.join(out, name), { compression: codec });
  files.push(name);
}

// ---- canonical text of what DuckDB reads back ------------------------------
function pyLayout(neg, digits, exp) {
  const sign = neg ? '-' : '';
  if (exp >= -4 && exp < 16) {
    let ip, fp;
    if (exp >= 0) {
      ip = digits.slice(0, exp + 1).padEnd(exp + 1, '0');
      fp = digits.slice(exp + 1) || '0';
    } else {
      ip = '0';
      fp = '0'.repeat(-exp - 1) + digits;
    }
    return `${sign}${ip}.${fp}`;
  }
  const mant = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  return `${sign}${mant}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
}
function shortest(x, isFloat) {
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return 'Infinity';
  if (x === -Infinity) return '-Infinity';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const a = Math.abs(x);
  let y = a;
  if (isFloat) {
    for (let p = 1; p <= 9; p++) {
      const c = Number(a.toPrecision(p));
      if (Math.fround(c) === a) { y = c; break; }
    }
  }
  const [m, e] = y.toExponential().split('e');
  return pyLayout(x < 0, m.replace('.', ''), Number(e));
}
function civil(days) {
  let z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  const y = yoe + era * 400 + (m <= 2 ? 1 : 0);
  const ys = y < 0 ? '-' + String(-y).padStart(4, '0') : String(y).padStart(4, '0');
  return `${ys}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`;
}
function tsText(us) { // us: BigInt microseconds
  const D = 86400000000n;
  let day = us / D;
  if (us % D < 0n) day -= 1n;
  const rem = us - day * D;
  const secs = rem / 1000000n, frac = rem % 1000000n;
  const hh = String(secs / 3600n).padStart(2, '0'), mm = String((secs / 60n) % 60n).padStart(2, '0'),
    ss = String(secs % 60n).padStart(2, '0');
  return `${civil(Number(day))} ${hh}:${mm}:${ss}` + (frac ? '.' + String(frac).padStart(6, '0') : '');
}

const expected = {};
for (const name of files) {
  const file = path.join(out, name);
  const desc = (await conn.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${file}')`)).getRows();
  const exprs = [], kinds = [];
  for (const [col, type] of desc) {
    const q = `"${col}"`;
    let e = `CAST(${q} AS VARCHAR)`, k = 'text';
    if (type === 'FLOAT' || type === 'DOUBLE') { e = q; k = type === 'FLOAT' ? 'float' : 'double'; }
    else if (type === 'BLOB') e = `lower(hex(${q}))`;
    else if (type === 'DATE') { e = `date_diff('day', DATE '1970-01-01', ${q})`; k = 'date'; }
    else if (type === 'TIMESTAMP_NS') { e = `epoch_ns(${q})`; k = 'ns'; }
    else if (type.startsWith('TIMESTAMP')) { e = `epoch_us(${q})`; k = 'us'; }
    exprs.push(e);
    kinds.push(k);
  }
  const cols = (await conn.runAndReadAll(`SELECT ${exprs.join(', ')} FROM read_parquet('${file}')`)).getColumns();
  const obj = {};
  desc.forEach(([col], j) => {
    obj[col] = cols[j].map((v) => {
      if (v === null) return null;
      switch (kinds[j]) {
        case 'float': return shortest(v, true);
        case 'double': return shortest(v, false);
        case 'date': return civil(Number(v));
        case 'us': return tsText(BigInt(v));
        case 'ns': { const n = BigInt(v); let q = n / 1000n; if (n % 1000n < 0n) q -= 1n; return tsText(q); }
        default: return String(v);
      }
    });
  });
  expected[name] = obj;
}
fs.writeFileSync(path.join(out, 'expected.json'), JSON.stringify(expected));

// A codec Ember does not read (no Debian C library is used for it): Ember must
// refuse it with EM_ERR_UNSUPPORTED naming the codec, not misread it.
await conn.run(`COPY src TO '${path.join(out, 'unsupported_brotli.parquet')}' (FORMAT PARQUET, COMPRESSION 'brotli')`);
console.log(`pw_make: ${files.length} files in ${out}`);
