#!/usr/bin/env bash
# Builds Ember and runs every test: the README's test command.
#   scripts/test.sh [PRESET]     PRESET: release (default), asan, tiny-batch, debug
# Installs dependencies first (Debian packages, then the npm peers).
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-release}
bash scripts/install-deps.sh
PEERS_MODULES=$(bash scripts/setup-peers.sh)
export PEERS_MODULES
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"
ctest --preset "$preset"
