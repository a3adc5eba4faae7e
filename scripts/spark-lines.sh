#!/usr/bin/env bash
# Runs the plugin's JVM tests on each Spark line the jar supports (the
# matrix of docs/shims.md), against the same compiled classes: only the
# tests' Spark changes. Needs the C release build (scripts/build.sh).
#   scripts/spark-lines.sh [LINE...]     LINE: 3.4 3.5 4.0 4.1 (default: all)
#   extra Maven options through MVN_OPTS_EXTRA, e.g. -Dtest=TpchTest
set -euo pipefail
cd "$(dirname "$0")/.."
lines=("$@")
[ ${#lines[@]} -gt 0 ] || lines=(3.4 3.5 4.0 4.1)
shared=${EMBER_SHARED:-$(cd .. && pwd)/shared}
failed=()
for line in "${lines[@]}"; do
  case "$line" in
    3.4) profile=(-Pspark34) ;;
    3.5) profile=() ;;
    4.0) profile=(-Pspark40) ;;
    4.1) profile=(-Pspark41) ;;
    *) echo "spark-lines: no Spark line $line (3.4 3.5 4.0 4.1)" >&2; exit 2 ;;
  esac
  echo "=== Spark $line"
  # shellcheck disable=SC2086
  if ! (cd spark && mvn -B -ntp "${profile[@]}" -Dember.build.dir="$PWD/../build/release" \
          -Dember.shared.dir="$shared" ${MVN_OPTS_EXTRA:-} test); then
    failed+=("$line")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "spark-lines: tests failed on Spark ${failed[*]}" >&2
  exit 1
fi
echo "spark-lines: tests passed on Spark ${lines[*]}"
