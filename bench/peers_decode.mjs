// SPDX-License-Identifier: Apache-2.0
// peers_decode: how fast DuckDB decodes the same Parquet files that
// bench/parquet_decode.c decodes, with the same number of threads.
//
//   PEERS_MODULES=$(bash scripts/setup-peers.sh) \
//     node bench/peers_decode.mjs [--runs 5] [--threads 2] [--warmup 1] [--mode scan] PATH...
//
// PATH is a Parquet file or a folder (all its *.parquet files are read).
//
// Modes (see bench/README.md for why `scan` is the one the report uses):
//   scan         PRAGMA disable_optimizer; SELECT count(*) FROM (SELECT * FROM read_parquet(...))
//                With the optimizer off, DuckDB keeps every column of the inner
//                SELECT *, so its Parquet scan decodes every column of every row
//                group into vectors, and the cheapest consumer (count_star)
//                discards them: the closest match to Ember decoding batches and
//                dropping them.
//   materialize  SELECT * ..., collected into a materialized result inside DuckDB
//                (adds a copy of every value into DuckDB's result collection)
//   minmax       min() and max() of every column, optimizer on (adds comparisons)
//
// Prints per-run wall and CPU seconds (CPU of the whole process, DuckDB's
// threads included), the medians and final "median_s" / "median_cpu_s" lines,
// like parquet_decode. Every run checks the row count against count(*) from the footers.
import fs from 'node:fs';
import path from 'node:path';
import { duckConnect } from '../tests/interop/peers.mjs';

function parseArgs(argv) {
  const a = { runs: 5, threads: 2, warmup: 1, mode: 'scan', paths: [] };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const num = (min) => {
      const v = Number(argv[++i]);
      if (!Number.isInteger(v) || v < min) throw new Error(`bad value for ${k}`);
      return v;
    };
    if (k === '--runs') a.runs = num(1);
    else if (k === '--threads') a.threads = num(1);
    else if (k === '--warmup') a.warmup = num(0);
    else if (k === '--mode') a.mode = argv[++i];
    else if (k.startsWith('-')) throw new Error(`unknown option ${k}`);
    else a.paths.push(k);
  }
  if (!a.paths.length) throw new Error('no PATH given');
  if (!['scan', 'materialize', 'minmax'].includes(a.mode)) throw new Error(`unknown mode ${a.mode}`);
  return a;
}

function parquetFiles(p) {
  const st = fs.statSync(p);
  if (!st.isDirectory()) return [p];
  const files = fs.readdirSync(p).filter((f) => f.endsWith('.parquet')).sort().map((f) => path.join(p, f));
  if (!files.length) throw new Error(`${p}: no *.parquet files`);
  return files;
}

const sqlString = (s) => `'${s.replace(/'/g, "''")}'`;
const ident = (s) => `"${s.replace(/"/g, '""')}"`;

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const files = a.paths.flatMap(parquetFiles);
  const src = `read_parquet([${files.map(sqlString).join(', ')}])`;
  const con = await duckConnect(a.threads);
  const version = (await con.runAndReadAll('SELECT version()')).getRows()[0][0];
  const expect = Number((await con.runAndReadAll(`SELECT count(*) FROM ${src}`)).getRows()[0][0]);
  const cols = (await con.runAndReadAll(`DESCRIBE SELECT * FROM ${src}`)).getRows().map((r) => r[0]);
  const bytes = files.reduce((n, f) => n + fs.statSync(f).size, 0);

  let run;
  if (a.mode === 'scan') {
    await con.run('PRAGMA disable_optimizer');
    run = async () => Number((await con.runAndReadAll(`SELECT count(*) FROM (SELECT * FROM ${src})`)).getRows()[0][0]);
  } else if (a.mode === 'materialize') {
    run = async () => (await con.run(`SELECT * FROM ${src}`)).rowCount;
  } else {
    const aggs = cols.map((c) => `min(${ident(c)}), max(${ident(c)})`).join(', ');
    run = async () => {
      await con.runAndReadAll(`SELECT ${aggs} FROM ${src}`);
      return expect; // aggregates return one row; the scan covered all rows
    };
  }

  console.log(`${version}, mode ${a.mode}, files: ${files.length}, columns: ${cols.length}, rows: ${expect}, threads: ${a.threads}`);
  console.log(`bytes: ${(bytes / 1e6).toFixed(1)} MB on disk`);
  const times = [], cpus = [];
  for (let i = 0; i < a.warmup + a.runs; i++) {
    const t0 = process.hrtime.bigint();
    const c0 = process.cpuUsage(); // the whole process: DuckDB's threads included
    const rows = await run();
    const c = process.cpuUsage(c0);
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    const cpu = (c.user + c.system) / 1e6;
    if (rows !== expect) throw new Error(`run returned ${rows} rows, footers say ${expect}`);
    if (i < a.warmup) console.log(`warm-up ${i + 1}: ${s.toFixed(3)} s (cpu ${cpu.toFixed(3)} s)`);
    else {
      times.push(s);
      cpus.push(cpu);
      console.log(`run ${i - a.warmup + 1}: ${s.toFixed(3)} s (cpu ${cpu.toFixed(3)} s)`);
    }
  }
  const med = (xs) => {
    const v = [...xs].sort((x, y) => x - y), m = v.length;
    return m % 2 ? v[(m - 1) / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
  };
  const median = med(times);
  console.log(`median: ${median.toFixed(3)} s, ${(expect / median / 1e6).toFixed(1)} M rows/s, ${(bytes / median / 1e6).toFixed(1)} MB/s on disk`);
  console.log(`median_s ${median.toFixed(6)}`);
  console.log(`median_cpu_s ${med(cpus).toFixed(6)}`);
}

main().catch((e) => {
  console.error(`peers_decode: ${e.message}`);
  process.exit(1);
});
