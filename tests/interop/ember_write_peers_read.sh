#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Ember writes Parquet files of every Spark type with every codec (dictionary
# on, off and falling back mid-chunk, several row groups and pages, selection
# vectors), then DuckDB and Polars must read back exactly the values written.
# The files and their expected values come from the test_parquet_write_peers
# program (built beside the ember binary's tests); tests/interop/ew_check.mjs
# compares. Fails, never skips, when the peers cannot be set up.
set -euo pipefail
src=${EMBER_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${EMBER_BIN:?EMBER_BIN is not set}
build=$(dirname "$bin")
gen="$build/tests/test_parquet_write_peers"
[ -x "$gen" ] || { echo "ember_write_peers_read: $gen not built" >&2; exit 1; }
PEERS_MODULES=$(bash "$src/scripts/setup-peers.sh") || {
  echo "ember_write_peers_read: the peers (DuckDB, Polars) could not be set up" >&2; exit 1; }
export PEERS_MODULES
out="${EMBER_TEST_TMP:-/tmp/ember-tests}/ember_write_peers_read"
rm -rf "$out"
EW_OUT="$out" "$gen" >/dev/null
node "$src/tests/interop/ew_check.mjs" "$out"
