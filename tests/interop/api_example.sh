#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# docs/api.md's example program, which the build compiles from the page
# (api_example beside the ember binary): run on TPC-H plans at SF 0.01, its
# rows must be `ember run --format csv`'s (header aside); without arguments
# it prints its usage and exits 2, and a plan that does not parse makes it
# exit 1 with the parser's message.
#
# Env: EMBER_BIN, EMBER_SHARED, EMBER_TEST_TMP, EMBER_SOURCE.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=${EMBER_SOURCE:-$(cd "$here/../.." && pwd)}
shared=${EMBER_SHARED:-$src/../shared}
bin=${EMBER_BIN:-$src/build/release/ember}
example=$(dirname "$bin")/api_example
[ -x "$example" ] || { echo "api_example: not built beside $bin" >&2; exit 1; }
export ASAN_OPTIONS=${ASAN_OPTIONS:-exitcode=86:detect_leaks=1}
base=${EMBER_TEST_TMP:-${TMPDIR:-/tmp}}
mkdir -p "$base"
tmp=$(mktemp -d "$base/api_example.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

"$bin" gen tpch --sf 0.01 --schema spark --out "$tmp/data" >"$tmp/gen.log" 2>&1 ||
    { echo "FAIL gen tpch: $(cat "$tmp/gen.log")"; exit 1; }
fail=0
for q in q1 q3 q13 q18; do
    plan=$shared/spark-plans/tpch/spark-3.5/$q.txt
    "$bin" run "$plan" --spark-version 3.5 --warehouse "$tmp/data" --format csv 2>/dev/null |
        tail -n +2 >"$tmp/want.csv"
    if ! "$example" "$plan" "$tmp/data" >"$tmp/got.csv" 2>"$tmp/err.log"; then
        echo "FAIL $q: $(cat "$tmp/err.log")"
        fail=1
    elif [ ! -s "$tmp/want.csv" ] || ! cmp -s "$tmp/want.csv" "$tmp/got.csv"; then
        echo "FAIL $q: the example's rows differ from ember run's"
        diff "$tmp/want.csv" "$tmp/got.csv" | head -5
        fail=1
    fi
done
"$example" >/dev/null 2>"$tmp/err.log"
rc=$?
if [ "$rc" != 2 ] || ! grep -q usage "$tmp/err.log"; then
    echo "FAIL no arguments: exit $rc, $(cat "$tmp/err.log")"
    fail=1
fi
echo "not a plan" >"$tmp/bad.txt"
"$example" "$tmp/bad.txt" "$tmp/data" >/dev/null 2>"$tmp/err.log"
rc=$?
if [ "$rc" != 1 ] || ! grep -q "plan:1:1" "$tmp/err.log"; then
    echo "FAIL a bad plan: exit $rc, $(cat "$tmp/err.log")"
    fail=1
fi
[ "$fail" = 0 ] && echo "api_example: 4 plans, the same rows as ember run"
exit $fail
