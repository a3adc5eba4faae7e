// SPDX-License-Identifier: Apache-2.0
// Loads the peers (DuckDB, Polars) from PEERS_MODULES, as ../shared/peers does,
// and converts their values to Ember's canonical text (see docs/architecture.md,
// "Canonical value text"), so results can be compared as strings.
import { createRequire } from 'node:module';
import path from 'node:path';

const MODULES = process.env.PEERS_MODULES;
if (!MODULES) throw new Error('PEERS_MODULES is not set (run scripts/setup-peers.sh)');
const req = createRequire(path.join(MODULES, '..', 'package.json'));

export async function duckdb() { return import(req.resolve('@duckdb/node-api')); }
export async function polars() { return (await import(req.resolve('nodejs-polars'))).default; }

// Opens an in-memory DuckDB connection limited to `threads` threads.
export async function duckConnect(threads = 2) {
  const { DuckDBInstance } = await duckdb();
  const inst = await DuckDBInstance.create(':memory:', { threads: String(threads) });
  return inst.connect();
}
