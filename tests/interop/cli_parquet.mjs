// SPDX-License-Identifier: Apache-2.0
// DuckDB side of tests/interop/cli_parquet.sh: writes the small Parquet files
// the test inspects, and checks `ember parquet` output against what DuckDB
// reads from the same files (parquet_schema, parquet_metadata, parquet_file_metadata
// and SELECT ... LIMIT n). Each check prints one line per mismatch and exits 1
// when there is any, so the shell script only counts verdicts.
//
//   node cli_parquet.mjs make DIR
//   node cli_parquet.mjs check-csv FILE N OUT [col,col...] OUT = `head --format csv` output
//   node cli_parquet.mjs check-json FILE N OUT [cols]     OUT = `head --format json` output
//   node cli_parquet.mjs check-schema FILE OUT
//   node cli_parquet.mjs check-meta FILE OUT
//   node cli_parquet.mjs check-stats FILE OUT
//   node cli_parquet.mjs check-table FILE N OUT           OUT = `head` (table) output
//
// Values are compared as text in the form `ember parquet` prints them:
// integers and decimals exactly, dates YYYY-MM-DD, timestamps in UTC as
// YYYY-MM-DD HH:MM:SS plus .ffffff when there are microseconds, binary as
// lowercase hex, booleans true/false (ember/value_text.h). Floating point is
// compared as numbers.
import fs from 'node:fs';
import { duckConnect } from './peers.mjs';

const sqlString = (s) => `'${s.replace(/'/g, "''")}'`;
const ident = (s) => `"${s.replace(/"/g, '""')}"`;

// The files: every type the CLI prints, nulls, awkward strings, several row
// groups, two codecs, and a file without rows.
async function make(dir) {
  const con = await duckConnect(1);
  const types = `SELECT * FROM (VALUES
      (1, true, 1::TINYINT, 100::SMALLINT, 10000000000::BIGINT, 1.5::FLOAT, 2.25::DOUBLE,
       12.34::DECIMAL(15,2), 123456789012345678.0123456789::DECIMAL(38,10), 'plain', '\\x00\\xFF'::BLOB,
       DATE '2024-02-29', TIMESTAMP '2024-02-29 13:14:15.5', TIMESTAMPTZ '1970-01-01 00:00:00+00'),
      (2, false, (-128)::TINYINT, (-32768)::SMALLINT, (-9223372036854775808)::BIGINT, -0.25::FLOAT, -1e10::DOUBLE,
       -0.05::DECIMAL(15,2), -1::DECIMAL(38,10), 'comma, "quote"', ''::BLOB,
       DATE '1969-12-31', TIMESTAMP '1969-12-31 23:59:59.999999', TIMESTAMPTZ '2000-01-01 00:00:00.000001+00'),
      (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
      (4, true, 127::TINYINT, 32767::SMALLINT, 9223372036854775807::BIGINT, 0::FLOAT, 3::DOUBLE,
       0::DECIMAL(15,2), 0.0000000001::DECIMAL(38,10), 'line1' || chr(10) || 'line2', '\\x41'::BLOB,
       DATE '0001-01-01', TIMESTAMP '2038-01-19 03:14:08', TIMESTAMPTZ '2024-06-30 12:00:00+00'),
      (5, false, 0::TINYINT, 0::SMALLINT, 0::BIGINT, 1e6::FLOAT, 0.1::DOUBLE,
       99.99::DECIMAL(15,2), 1.5::DECIMAL(38,10), '', '\\x0a'::BLOB,
       DATE '9999-12-31', TIMESTAMP '2001-09-09 01:46:40', TIMESTAMPTZ '1999-12-31 23:59:59+00'),
      (6, true, 5::TINYINT, 6::SMALLINT, 7::BIGINT, 8::FLOAT, 9::DOUBLE,
       10::DECIMAL(15,2), 11::DECIMAL(38,10), 'üñïçødé ✓', '\\x01\\x02'::BLOB,
       DATE '2000-01-01', TIMESTAMP '2000-01-01 00:00:00', TIMESTAMPTZ '2000-01-01 00:00:00+00')
    ) t(id, b, i8, i16, i64, f, d, dec, dec38, s, bin, dt, ts, tstz)`;
  await con.run(`SET TimeZone = 'UTC'`);
  await con.run(`COPY (${types}) TO ${sqlString(`${dir}/types.parquet`)} (FORMAT parquet)`);
  const multi = `SELECT i::BIGINT AS k, (i * 7 % 1000)::INT AS v, 'row ' || i AS name,
      CASE WHEN i % 5 = 0 THEN NULL ELSE (i % 100)::DECIMAL(15,2) / 4 END AS price,
      DATE '2020-01-01' + (i % 365)::INT AS day FROM range(10000) r(i)`;
  await con.run(`COPY (${multi}) TO ${sqlString(`${dir}/multi.parquet`)} (FORMAT parquet, COMPRESSION snappy, ROW_GROUP_SIZE 2048)`);
  await con.run(`COPY (${multi}) TO ${sqlString(`${dir}/multi_zstd.parquet`)} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 4096)`);
  await con.run(`COPY (SELECT 1::INT AS a, 'x' AS b WHERE false) TO ${sqlString(`${dir}/empty_rows.parquet`)} (FORMAT parquet)`);
}

const UNIT = { s: 1000000n, d: 86400000000n };

function civil(days) {
  // days since 1970-01-01 -> [y, m, d], proleptic Gregorian
  const dt = new Date(Number(days) * 86400000);
  return [dt.getUTCFullYear(), dt.getUTCMonth() + 1, dt.getUTCDate()];
}
const pad = (n, w) => String(n).padStart(w, '0');
function dateText(days) {
  const [y, m, d] = civil(days);
  return `${pad(y, 4)}-${pad(m, 2)}-${pad(d, 2)}`;
}
function tsText(us) {
  us = BigInt(us);
  let days = us / UNIT.d, rem = us % UNIT.d;
  if (rem < 0n) { rem += UNIT.d; days -= 1n; }
  const secs = Number(rem / UNIT.s), frac = Number(rem % UNIT.s);
  let t = `${dateText(days)} ${pad(Math.floor(secs / 3600), 2)}:${pad(Math.floor(secs / 60) % 60, 2)}:${pad(secs % 60, 2)}`;
  if (frac) t += '.' + pad(frac, 6);
  return t;
}

// Column descriptions from DuckDB: name, DuckDB type, how to select it as text.
async function columns(con, file, only) {
  const rows = (await con.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet(${sqlString(file)})`)).getRows();
  let cols = rows.map((r) => ({ name: r[0], type: String(r[1]) }));
  if (only) cols = only.map((n) => cols.find((c) => c.name === n) ?? { name: n, type: 'MISSING' });
  return cols.map((c) => {
    const q = ident(c.name);
    let sel = `${q}::VARCHAR`, kind = 'text';
    if (c.type === 'BOOLEAN') { sel = `CASE WHEN ${q} THEN 'true' ELSE 'false' END`; kind = 'bool'; }
    else if (c.type.startsWith('TIMESTAMP')) { sel = `epoch_us(${q})::VARCHAR`; kind = 'ts'; }
    else if (c.type === 'BLOB') sel = `lower(hex(${q}))`;
    else if (c.type === 'FLOAT' || c.type === 'DOUBLE') { sel = `${q}::DOUBLE::VARCHAR`; kind = 'float'; }
    else if (/INT|DECIMAL/.test(c.type)) kind = 'number';
    return { ...c, sel: `CASE WHEN ${q} IS NULL THEN NULL ELSE ${sel} END`, kind };
  });
}

// First n rows as text (null for NULL), in file order.
async function expectRows(con, file, n, only) {
  const cols = await columns(con, file, only);
  const r = await con.runAndReadAll(`SELECT ${cols.map((c) => c.sel).join(', ')} FROM read_parquet(${sqlString(file)}) LIMIT ${n}`);
  const rows = r.getRows().map((row) => row.map((v, i) => {
    if (v === null) return null;
    if (cols[i].kind === 'ts') return tsText(v);
    return String(v);
  }));
  return { cols, rows };
}

// RFC 4180 reader: rows of { text, quoted } fields; throws on malformed quoting.
function parseCsv(text) {
  const rows = [];
  let row = [], field = '', quoted = false, i = 0, atStart = true;
  const endField = () => { row.push({ text: field, quoted }); field = ''; quoted = false; atStart = true; };
  while (i < text.length) {
    const ch = text[i];
    if (atStart && ch === '"') {
      quoted = true; atStart = false; i++;
      for (;;) {
        if (i >= text.length) throw new Error('unterminated quoted field');
        if (text[i] === '"') {
          if (text[i + 1] === '"') { field += '"'; i += 2; continue; }
          i++; break;
        }
        field += text[i++];
      }
      if (i < text.length && text[i] !== ',' && text[i] !== '\n') throw new Error(`text after closing quote at ${i}`);
      continue;
    }
    atStart = false;
    if (ch === ',') { endField(); i++; continue; }
    if (ch === '\n') { endField(); rows.push(row); row = []; i++; continue; }
    if (ch === '"') throw new Error(`quote inside unquoted field at ${i}`);
    field += ch; i++;
  }
  if (field !== '' || row.length) throw new Error('last line lacks its newline');
  return rows;
}

async function checkCsv(con, file, n, out, only) {
  const { cols, rows } = await expectRows(con, file, n, only);
  let got;
  try { got = parseCsv(readOut(out)); } catch (e) { fail(`not RFC 4180 CSV: ${e.message}`); return; }
  if (got.length !== rows.length + 1) fail(`${got.length} CSV lines, expected ${rows.length + 1} (header + rows)`);
  const header = (got[0] ?? []).map((f) => f.text).join(',');
  if (header !== cols.map((c) => c.name).join(',')) fail(`header '${header}'`);
  rows.forEach((row, r) => {
    const line = got[r + 1] ?? [];
    if (line.length !== cols.length) fail(`row ${r} has ${line.length} fields`);
    row.forEach((want, c) => {
      const f = line[c] ?? { text: '?', quoted: false };
      let ok;
      if (want === null) ok = f.text === '' && !f.quoted;
      else if (want === '') ok = f.text === '' && f.quoted;
      else if (cols[c].kind === 'float') ok = sameNumber(f.text, want);
      else ok = f.text === want;
      // a field that needs quoting must be quoted
      if (ok && /[",\r\n]/.test(f.text) && !f.quoted) ok = false;
      if (!ok) fail(`row ${r} column ${cols[c].name}: ${JSON.stringify(f)}, expected ${JSON.stringify(want)}`);
    });
  });
}

// The shortest text that reads back as the same double, as the CLI prints it.
function sameNumber(text, expected) {
  return Number(text) === Number(expected) || (Number.isNaN(Number(text)) && Number.isNaN(Number(expected)));
}

const problems = [];
const fail = (msg) => problems.push(msg);

function readOut(out) { return fs.readFileSync(out, 'utf8'); }

// `ember parquet head` table: header, rule of dashes, rows, "(n of m rows)".
async function checkTable(con, file, n, out) {
  const { cols, rows } = await expectRows(con, file, n);
  const lines = readOut(out).split('\n').filter((l) => l !== '');
  if (lines.length !== rows.length + 3) fail(`table has ${lines.length} lines, expected ${rows.length + 3}`);
  if (!/^[- ]+$/.test(lines[1] ?? '')) fail(`second line is not a rule: '${lines[1]}'`);
  const total = Number((await con.runAndReadAll(`SELECT count(*) FROM read_parquet(${sqlString(file)})`)).getRows()[0][0]);
  if (lines.at(-1) !== `(${rows.length} of ${total} rows)`) fail(`last line '${lines.at(-1)}'`);
  // Every cell sits within its column: the rule's dash runs give the column extents.
  const runs = ruleRuns(lines[1] ?? '');
  if (runs.length !== cols.length) fail(`rule has ${runs.length} runs for ${cols.length} columns`);
  const header = cellsAt(lines[0] ?? '', runs);
  if (header.join(',') !== cols.map((c) => c.name).join(',')) fail(`header cells ${header.join(',')}`);
  rows.forEach((row, r) => {
    const got = cellsAt(lines[r + 2] ?? '', runs);
    row.forEach((v, c) => {
      if (!runs[c]) return;
      const cell = got[c];
      const want = v === null ? 'NULL' : v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\r/g, '\\r').replace(/\t/g, '\\t');
      const ok = cols[c].kind === 'float' && v !== null ? sameNumber(cell, want) : cell === want.trim();
      if (!ok) fail(`row ${r} column ${cols[c].name}: '${cell}', expected '${want}'`);
    });
  });
}

async function checkJson(con, file, n, out, only) {
  const { cols, rows } = await expectRows(con, file, n, only);
  const lines = readOut(out).split('\n').filter((l) => l !== '');
  if (lines.length !== rows.length) fail(`${lines.length} JSON lines, expected ${rows.length}`);
  lines.forEach((line, r) => {
    let obj;
    try { obj = JSON.parse(line); } catch (e) { fail(`line ${r} is not JSON: ${e.message}: ${line}`); return; }
    const keys = Object.keys(obj);
    if (keys.join(',') !== cols.map((c) => c.name).join(',')) fail(`line ${r} keys ${keys}`);
    cols.forEach((c, i) => {
      const want = rows[r]?.[i], got = obj[c.name];
      let ok;
      if (want === null || want === undefined) ok = got === null;
      else if (c.kind === 'bool') ok = got === (want === 'true');
      else if (c.kind === 'number' || c.kind === 'float') ok = typeof got === 'number' ? sameNumber(String(got), want) : (typeof got === 'string' && sameNumber(got, want) && !Number.isFinite(Number(want)));
      else ok = got === want;
      if (!ok) fail(`line ${r} ${c.name}: ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
    });
  });
}

// Spark type that a Parquet column with this DuckDB type reads as.
function sparkType(duck) {
  const m = { BOOLEAN: 'boolean', TINYINT: 'tinyint', SMALLINT: 'smallint', INTEGER: 'int', BIGINT: 'bigint',
    FLOAT: 'float', DOUBLE: 'double', VARCHAR: 'string', BLOB: 'binary', DATE: 'date',
    TIMESTAMP: 'timestamp_ntz', 'TIMESTAMP WITH TIME ZONE': 'timestamp' };
  const d = /^DECIMAL\((\d+),(\d+)\)$/.exec(duck);
  return d ? `decimal(${d[1]},${d[2]})` : m[duck] ?? `? ${duck}`;
}

// Splits an aligned report line into cells (for lines whose cells are never
// empty and never hold two spaces in a row).
const cells = (line) => line.trim().split(/ {2,}/);
// Column extents [start, end) in code points from a rule line of dashes, and
// the trimmed cells of a line at those extents.
const ruleRuns = (rule) => [...[...rule].join('').matchAll(/-+/g)].map((m) => [m.index, m.index + m[0].length]);
const cellsAt = (line, runs) => { const ch = [...line]; return runs.map(([a, b]) => ch.slice(a, b).join('').trim()); };

async function checkSchema(con, file, out) {
  const text = readOut(out);
  const rows = (await con.runAndReadAll(`SELECT name, type, repetition_type, duckdb_type FROM parquet_schema(${sqlString(file)}) WHERE num_children IS NULL`)).getRows();
  const nrows = Number((await con.runAndReadAll(`SELECT num_rows FROM parquet_file_metadata(${sqlString(file)})`)).getRows()[0][0]);
  if (!text.includes(`columns: ${rows.length}\n`)) fail(`no 'columns: ${rows.length}' line`);
  if (!text.includes(`rows: ${nrows}\n`)) fail(`no 'rows: ${nrows}' line`);
  const lines = text.split('\n').map(cells);
  const nrg = Number((await con.runAndReadAll(`SELECT num_row_groups FROM parquet_file_metadata(${sqlString(file)})`)).getRows()[0][0]);
  rows.forEach(([name, physical, rep, duck], i) => {
    // the public API knows the physical type from the column chunks only
    if (nrg === 0) physical = '-';
    const line = lines.find((c) => c[0] === String(i) && c[1] === name);
    if (!line) { fail(`no line for column ${i} ${name}`); return; }
    const want = [String(i), name, sparkType(String(duck)), rep === 'REQUIRED' ? 'false' : 'true', physical];
    want.forEach((w, k) => { if (line[k] !== w) fail(`column ${name}: cell ${k} '${line[k]}', expected '${w}'`); });
  });
}

// Parses the per-row-group tables of `meta` / `stats` output: a header line,
// a rule of dashes giving the column extents, then one line per column.
function groups(text) {
  const out = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const m = /^row group (\d+): (\d+) rows/.exec(lines[i]);
    if (!m) continue;
    const cur = { rg: Number(m[1]), rows: Number(m[2]), cols: {} };
    out.push(cur);
    const runs = ruleRuns(lines[i + 2] ?? '');
    const header = cellsAt(lines[i + 1] ?? '', runs);
    for (let j = i + 3; j < lines.length && lines[j].startsWith('  '); j++) {
      const c = cellsAt(lines[j], runs);
      cur.cols[c[0]] = Object.fromEntries(header.map((h, k) => [h, c[k]]));
    }
  }
  return out;
}

async function metadata(con, file) {
  const r = await con.runAndReadAll(`SELECT row_group_id, row_group_num_rows, path_in_schema, type, compression, encodings,
      total_compressed_size, total_uncompressed_size, data_page_offset, dictionary_page_offset, num_values,
      stats_min_value, stats_max_value, stats_null_count
    FROM parquet_metadata(${sqlString(file)}) ORDER BY row_group_id, column_id`);
  return r.getRowObjects();
}

async function checkMeta(con, file, out) {
  const text = readOut(out);
  const fm = (await con.runAndReadAll(`SELECT created_by, num_rows, num_row_groups FROM parquet_file_metadata(${sqlString(file)})`)).getRowObjects()[0];
  for (const want of [`created_by: ${fm.created_by}`, `rows: ${fm.num_rows}`, `row groups: ${fm.num_row_groups}`, `size: ${fs.statSync(file).size} bytes`]) {
    if (!text.split('\n').includes(want)) fail(`no line '${want}'`);
  }
  const gs = groups(text);
  if (gs.length !== Number(fm.num_row_groups)) fail(`${gs.length} row groups printed, expected ${fm.num_row_groups}`);
  for (const m of await metadata(con, file)) {
    const g = gs.find((x) => x.rg === Number(m.row_group_id));
    const c = g?.cols[m.path_in_schema];
    if (!c) { fail(`row group ${m.row_group_id} column ${m.path_in_schema} missing`); continue; }
    if (g.rows !== Number(m.row_group_num_rows)) fail(`row group ${g.rg}: ${g.rows} rows, expected ${m.row_group_num_rows}`);
    const want = { type: m.type, codec: m.compression, compressed: String(m.total_compressed_size),
      uncompressed: String(m.total_uncompressed_size), 'data page': String(m.data_page_offset),
      'dict page': m.dictionary_page_offset === null ? '-' : String(m.dictionary_page_offset), values: String(m.num_values) };
    for (const [k, w] of Object.entries(want)) if (c[k] !== w) fail(`rg ${g.rg} ${m.path_in_schema} ${k}: '${c[k]}', expected '${w}'`);
    const encs = (s) => String(s).split(/[, ]+/).filter(Boolean).sort().join(',');
    if (encs(c.encodings) !== encs(m.encodings)) fail(`rg ${g.rg} ${m.path_in_schema} encodings '${c.encodings}', expected '${m.encodings}'`);
  }
}

async function checkStats(con, file, out) {
  const text = readOut(out);
  const gs = groups(text);
  const kinds = Object.fromEntries((await columns(con, file)).map((c) => [c.name, c]));
  const fm = (await con.runAndReadAll(`SELECT num_row_groups FROM parquet_file_metadata(${sqlString(file)})`)).getRows()[0][0];
  if (gs.length !== Number(fm)) fail(`${gs.length} row groups printed, expected ${fm}`);
  for (const m of await metadata(con, file)) {
    const c = gs.find((x) => x.rg === Number(m.row_group_id))?.cols[m.path_in_schema];
    if (!c) { fail(`row group ${m.row_group_id} column ${m.path_in_schema} missing`); continue; }
    const k = kinds[m.path_in_schema];
    const norm = (v) => {
      if (v === null) return '-';
      let s = String(v);
      if (k.type === 'BLOB') s = [...s.matchAll(/\\x([0-9A-Fa-f]{2})|([^\\])/g)].map((x) => x[1] ? x[1].toLowerCase() : x[2].charCodeAt(0).toString(16).padStart(2, '0')).join('');
      if (k.type === 'TIMESTAMP WITH TIME ZONE') s = s.replace(/\+00$/, '');
      if (k.type.startsWith('TIMESTAMP')) s = s.replace(/\.(\d+)$/, (_, f) => '.' + f.padEnd(6, '0')).replace(/\.000000$/, '');
      return s;
    };
    const ctx = `rg ${m.row_group_id} ${m.path_in_schema}`;
    if (c.nulls !== (m.stats_null_count === null ? '-' : String(m.stats_null_count))) fail(`${ctx} nulls '${c.nulls}', expected '${m.stats_null_count}'`);
    if (c.values !== String(m.num_values)) fail(`${ctx} values '${c.values}', expected '${m.num_values}'`);
    for (const [key, v] of [['min', m.stats_min_value], ['max', m.stats_max_value]]) {
      const want = norm(v);
      // aligned cells are read trimmed; csv and json checks cover exact bytes
      const ok = k.kind === 'float' && want !== '-' ? sameNumber(c[key], want) : c[key] === want.trim();
      if (!ok) fail(`${ctx} ${key} '${c[key]}', expected '${want}'`);
    }
  }
}

async function main() {
  const [cmd, ...args] = process.argv.slice(2);
  if (cmd === 'make') { await make(args[0]); return; }
  const con = await duckConnect(1);
  await con.run(`SET TimeZone = 'UTC'`);
  const [file] = args;
  if (cmd === 'check-csv') await checkCsv(con, file, Number(args[1]), args[2], args[3]?.split(','));
  else if (cmd === 'check-json') await checkJson(con, file, Number(args[1]), args[2], args[3]?.split(','));
  else if (cmd === 'check-table') await checkTable(con, file, Number(args[1]), args[2]);
  else if (cmd === 'check-schema') await checkSchema(con, file, args[1]);
  else if (cmd === 'check-meta') await checkMeta(con, file, args[1]);
  else if (cmd === 'check-stats') await checkStats(con, file, args[1]);
  else throw new Error(`unknown command ${cmd}`);
  for (const p of problems) console.log(p);
  if (problems.length) process.exit(1);
}

main().catch((e) => { console.error(`cli_parquet.mjs: ${e.stack ?? e.message}`); process.exit(1); });
