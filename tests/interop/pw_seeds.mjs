// SPDX-License-Identifier: Apache-2.0
// Writes tiny Parquet files with DuckDB (every type, v1 and v2 pages, each codec)
// as seeds for the reader's fuzz corpus (tests/fuzz/corpus/parquet/), plus
// truncated and byte-flipped variants of each.
// Usage: node pw_seeds.mjs OUTDIR   (PEERS_MODULES must point at the peers' node_modules)
import fs from 'node:fs';
import path from 'node:path';
import { duckConnect } from './peers.mjs';

const out = process.argv[2];
fs.mkdirSync(out, { recursive: true });
const conn = await duckConnect(1);
await conn.run("SET TimeZone = 'UTC'");
await conn.run(`CREATE TABLE t AS SELECT
  CASE WHEN i % 4 = 1 THEN NULL ELSE i % 3 = 0 END AS b,
  (i * 37 % 256 - 128)::TINYINT AS i8, (i * 1000003)::INTEGER AS i32, (i * 3037000493)::BIGINT AS i64,
  (i * 13 % 256)::UTINYINT AS u8, (i::UBIGINT * 1000000007) AS u64,
  (i / 7)::FLOAT AS f, CASE WHEN i % 5 = 0 THEN NULL ELSE i / 3 END::DOUBLE AS d,
  'v' || (i % 4)::VARCHAR AS s, ('\\x0' || (i % 9)::VARCHAR)::BLOB AS bin,
  DATE '2000-01-01' + INTERVAL (i) DAY AS dt, TIMESTAMP '2001-02-03 04:05:06' + INTERVAL (i * 777) SECOND AS ts,
  make_timestamp_ns(1700000000000000000 + i * 1234567) AS tsn,
  ((i * 7 - 30) / 4)::DECIMAL(4,2) AS d4, (i * 12345 - 99999)::DECIMAL(15,3) AS d15, (i * 9876543210)::DECIMAL(30,5) AS d30
FROM range(16) r(i)`);
let n = 0;
const variants = (file) => {
  const buf = fs.readFileSync(file);
  const base = path.basename(file, '.parquet');
  fs.writeFileSync(path.join(out, `${base}-cut-half`), buf.subarray(0, buf.length >> 1));
  fs.writeFileSync(path.join(out, `${base}-cut-tail`), buf.subarray(0, buf.length - 3));
  for (const at of [5, 20, 40, buf.length - 30, buf.length - 60]) {
    const b = Buffer.from(buf);
    if (at > 0 && at < b.length) { b[at] ^= 0x5a; fs.writeFileSync(path.join(out, `${base}-flip${at}`), b); }
  }
};
for (const [name, opts] of [['v1_none', "COMPRESSION 'uncompressed'"], ['v1_snappy', "COMPRESSION 'snappy'"],
  ['v1_zstd', "COMPRESSION 'zstd'"], ['v1_gzip', "COMPRESSION 'gzip'"], ['v1_lz4', "COMPRESSION 'lz4_raw'"],
  ['v2_none', "COMPRESSION 'uncompressed', PARQUET_VERSION 'V2'"], ['v2_zstd', "COMPRESSION 'zstd', PARQUET_VERSION 'V2'"]]) {
  const file = path.join(out, `${name}.parquet`);
  await conn.run(`COPY t TO '${file}' (FORMAT PARQUET, ${opts})`);
  variants(file);
  n++;
}
console.log(`pw_seeds: ${n} files and variants in ${out}`);
