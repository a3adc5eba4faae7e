#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `ember lore case`: a LORE dump becomes a tests/plans case with one command,
# and the case passes the plan-test harness.
#
# For a few TPC-H plans (spark-3.5, SF 0.01, spark schema): `ember run`
# dumps every native operator with its output; `ember lore case` writes each
# operator's first dumped partition as a case (sources and exchanges are
# refused: their dump is data, not an operator to test); test_plan_files then
# runs every case in its five settings (native, through the overrides, the
# row engine, and two mixed trees) and each must give the dumped output.
# Also: a dump without its output and a partition that was not dumped are
# refused with a message naming why.
#
# Env: EMBER_BIN, EMBER_SHARED, EMBER_TEST_TMP, EMBER_SOURCE, LORE_CASE_QUERIES
# ("q3 q13"; default q3 q13 q18 q21, q3 q13 in the asan and tiny-batch builds).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=${EMBER_SOURCE:-$(cd "$here/../.." && pwd)}
shared=${EMBER_SHARED:-$src/../shared}
bin=${EMBER_BIN:-$src/build/release/ember}
harness=$(dirname "$bin")/tests/test_plan_files
[ -x "$bin" ] || { echo "lore_case: EMBER_BIN '$bin' is not an executable" >&2; exit 1; }
[ -x "$harness" ] || { echo "lore_case: no test_plan_files beside $bin" >&2; exit 1; }
export ASAN_OPTIONS=${ASAN_OPTIONS:-exitcode=86:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-exitcode=87:halt_on_error=1:print_stacktrace=1}

base=${EMBER_TEST_TMP:-${TMPDIR:-/tmp}}
mkdir -p "$base"
tmp=$(mktemp -d "$base/lore_case.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

queries=${LORE_CASE_QUERIES:-}
if [ -z "$queries" ]; then
    case "$bin" in
    */tiny-batch/* | */asan/*) queries="q3 q13" ;;
    *) queries="q3 q13 q18 q21" ;;
    esac
fi
data=$tmp/data
if ! "$bin" gen tpch --sf 0.01 --schema spark --out "$data" >"$tmp/gen.log" 2>&1; then
    echo "FAIL gen tpch: $(cat "$tmp/gen.log")"
    exit 1
fi

fail=0
cases=0
mkdir -p "$tmp/cases"
for q in $queries; do
    plan=$shared/spark-plans/tpch/spark-3.5/$q.txt
    ids=$("$bin" explain "$plan" --spark-version 3.5 2>/dev/null | grep -o 'loreId=[0-9]*' |
        cut -d= -f2 | sort -n | uniq)
    list=""
    for n in $ids; do list="$list${list:+, }$n[*]"; done
    dump=$tmp/dump-$q
    if ! "$bin" run "$plan" --spark-version 3.5 --warehouse "$data" --format csv \
        --output "$tmp/$q.csv" --conf "spark.ember.sql.lore.idsToDump=$list" \
        --conf "spark.ember.sql.lore.dumpPath=$dump" --conf spark.ember.sql.lore.dumpOutput=true \
        >"$tmp/$q.log" 2>&1; then
        echo "FAIL $q: the dumping run failed: $(tail -c 300 "$tmp/$q.log")"
        fail=1
        continue
    fi
    for d in "$dump"/loreId-*; do
        n=${d##*-}
        [ -f "$d/output/rdd.meta" ] || continue # its stage ran no task
        if "$bin" lore case "$d" --name "$q loreId $n" --output "$tmp/cases/$q-$n.plan" \
            >"$tmp/case.log" 2>&1; then
            cases=$((cases + 1))
        elif ! grep -q "is a source or an exchange" "$tmp/case.log"; then
            echo "FAIL $q loreId-$n: $(tail -c 300 "$tmp/case.log")"
            fail=1
        fi
    done
done
if [ "$cases" -lt 10 ]; then
    echo "FAIL only $cases cases written"
    fail=1
fi
if ! EMBER_PLAN_DIR=$tmp/cases EMBER_TEST_TMP=$tmp/run "$harness" >"$tmp/harness.log" 2>&1; then
    echo "FAIL the cases do not pass test_plan_files:"
    grep -A3 "FAILURES\|FAILED" "$tmp/harness.log" | head -20
    fail=1
fi

# refusals: a dump without its output; a partition not dumped
q=${queries%% *}
first=$(ls "$tmp/cases" | grep "^$q-" | head -1)
d=$tmp/dump-$q/loreId-$(basename "$first" .plan | cut -d- -f2)
if "$bin" lore case "$d" --partition 999 >"$tmp/refuse.log" 2>&1 ||
    ! grep -q "partition 999" "$tmp/refuse.log"; then
    echo "FAIL a partition not dumped: $(cat "$tmp/refuse.log")"
    fail=1
fi
rm -rf "$d/output"
if "$bin" lore case "$d" >"$tmp/refuse.log" 2>&1 || ! grep -q "dumpOutput=true" "$tmp/refuse.log"; then
    echo "FAIL a dump without output: $(cat "$tmp/refuse.log")"
    fail=1
fi

echo "lore_case: $cases cases written from the dumps of $queries, $(grep -c '^\[       OK' "$tmp/harness.log") files passed"
exit $fail
