#!/usr/bin/env bash
# Builds Ember and runs every test: the README's test command.
#   scripts/test.sh [PRESET]     PRESET: release (default), asan, tiny-batch, debug
# Installs dependencies first (Debian packages, then the npm peers). The C
# tests run under ctest in every preset; the release preset also builds the
# Spark plugin and runs its JVM tests (Maven Surefire, a local Spark) on each
# Spark line the jar supports, 3.5 (while packaging) then 3.4, 4.0 and 4.1
# (scripts/spark-lines.sh, docs/shims.md), which the sanitizer and
# tiny-batch builds cannot load into a JVM.
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-release}
bash scripts/install-deps.sh
PEERS_MODULES=$(bash scripts/setup-peers.sh)
export PEERS_MODULES
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"
ctest --preset "$preset"
if [ "$preset" = release ]; then
  (cd spark && mvn -B -ntp -Dember.build.dir="$PWD/../build/release" \
     -Dember.shared.dir="${EMBER_SHARED:-$PWD/../../shared}" package)
  # the same compiled classes on the other Spark lines (only the tests' Spark changes)
  bash scripts/spark-lines.sh 3.4 4.0 4.1
fi
