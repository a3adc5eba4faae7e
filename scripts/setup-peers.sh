#!/usr/bin/env bash
# Installs the peers (DuckDB and Polars for Node, from the npm registry) once,
# from ../shared/peers/package.json, and prints the node_modules folder to use
# as PEERS_MODULES. Idempotent; quiet on success.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
shared=${EMBER_SHARED:-$here/../shared}
dir=${EMBER_PEERS_DIR:-$HOME/.cache/ember-peers}
if [ ! -d "$dir/node_modules/@duckdb/node-api" ] || [ ! -d "$dir/node_modules/nodejs-polars" ]; then
  if [ ! -f "$shared/peers/package.json" ]; then
    echo "setup-peers: $shared/peers/package.json not found (set EMBER_SHARED)" >&2
    exit 1
  fi
  mkdir -p "$dir"
  cp "$shared/peers/package.json" "$dir/"
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error >&2)
fi
echo "$dir/node_modules"
