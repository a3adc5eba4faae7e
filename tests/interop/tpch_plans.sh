#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every shared Spark plan run end to end against DuckDB.
#
# For both schemas at SF 0.01 (`ember gen tpch`): every plan in
# $EMBER_SHARED/spark-plans/tpch/spark-*/qN.txt runs with `ember run --format
# csv` (the spark schema's data as it is; the standard schema's DECIMAL(15,2)
# data with --retype), and DuckDB runs the same query's SQL over the same
# files (../shared/peers/run-peers.mjs). The shared plans were normalized by
# Spark's harness, which renumbered ids even inside literals ('Brand#45'
# became Brand#9): plans_sql.mjs applies the same rewrite to the SQL, per
# Spark version, and the rewrite is printed. plans_compare.mjs compares the
# results (decimals by value, doubles within 1e-9 relative, row order only
# where the query has ORDER BY).
#
# A plan that cannot run yet must be listed in XFAIL below with its reason:
# it then shows as xfail. An unlisted failure is FAIL; a listed plan that
# passes is XPASS, which also fails the test so that the list shrinks. Ends
# with a summary table (version x query) and "N passed, N failed".
#
# Env: EMBER_BIN, EMBER_SHARED, EMBER_TEST_TMP, EMBER_SOURCE, PEERS_MODULES
# (set up with scripts/setup-peers.sh when unset), EMBER_PLANS_ONLY (e.g.
# "spark-3.5:q1,q3" to run a subset while debugging).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=${EMBER_SOURCE:-$(cd "$here/../.." && pwd)}
shared=${EMBER_SHARED:-$src/../shared}
bin=${EMBER_BIN:-$src/build/release/ember}
[ -x "$bin" ] || { echo "tpch_plans: EMBER_BIN '$bin' is not an executable" >&2; exit 1; }
PEERS_MODULES=${PEERS_MODULES:-$(bash "$src/scripts/setup-peers.sh")}
export PEERS_MODULES
export ASAN_OPTIONS=${ASAN_OPTIONS:-exitcode=86:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-exitcode=87:halt_on_error=1:print_stacktrace=1}

base=${EMBER_TEST_TMP:-${TMPDIR:-/tmp}}
mkdir -p "$base"
tmp=$(mktemp -d "$base/tpch_plans.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Expected failures: "schema:version:qN|reason" ('*' matches any schema or
# version). Keep each reason specific; remove an entry as soon as it passes.
XFAIL=(
    "standard:*:q6|Spark folded q6 to an empty LocalTableScan because with DECIMAL(10,0) money the discount range 0.05..0.07 can never match; on DECIMAL(15,2) data the query is not empty, so this plan cannot answer it (not fixable by --retype)"
)

xfail_reason() { # schema version q
    local e pat
    for e in "${XFAIL[@]}"; do
        pat=${e%%|*}
        # shellcheck disable=SC2053
        if [[ "$1:$2:$3" == $pat ]]; then
            echo "${e#*|}"
            return 0
        fi
    done
    return 1
}

passed=0
failed=0
xfailed=0
declare -A cell
declare -A reasons

versions=()
for d in "$shared"/spark-plans/tpch/spark-*/; do
    versions+=("$(basename "$d")")
done
only=${EMBER_PLANS_ONLY:-}

for schema in spark standard; do
    data=$tmp/data-$schema
    if ! "$bin" gen tpch --sf 0.01 --schema "$schema" --out "$data" >"$tmp/gen.log" 2>&1; then
        echo "FAIL gen tpch --schema $schema: $(cat "$tmp/gen.log")"
        failed=$((failed + 1))
        continue
    fi
    retype=()
    [ "$schema" = standard ] && retype=(--retype)
    for v in "${versions[@]}"; do
        if [ -n "$only" ] && [[ "$only" != *"$v"* ]]; then
            continue
        fi
        sql=$tmp/sql-$v
        if [ ! -d "$sql" ]; then
            echo "== $v: SQL rewritten as the plans' literals were (plans_sql.mjs):"
            if ! node "$here/plans_sql.mjs" "$shared/tpch/queries" "$shared/spark-plans/tpch/$v" \
                "$sql" | sed 's/^/   /'; then
                echo "FAIL $v: the literal rewrite does not match the plans"
                failed=$((failed + 1))
            fi
        fi
        # DuckDB once per distinct SQL text: share results between versions
        # whose rewritten queries are identical.
        duck=$tmp/duck-$schema-$(cat "$sql"/*.sql | md5sum | cut -c1-12)
        if [ ! -d "$duck" ]; then
            if ! node "$shared/peers/run-peers.mjs" --engines duckdb --data "$data" \
                --queries "$sql" --out "$duck" --runs 1 --warmup 0 >"$tmp/peers.log" 2>&1; then
                echo "FAIL $schema $v: run-peers.mjs: $(tail -3 "$tmp/peers.log")"
                failed=$((failed + 1))
                continue
            fi
        fi
        for n in $(seq 1 22); do
            q=q$n
            if [ -n "$only" ] && [[ "$only" == *:* ]] && [[ ",${only#*:}," != *",$q,"* ]]; then
                continue
            fi
            plan=$shared/spark-plans/tpch/$v/$q.txt
            out=$tmp/ember-$schema-$v-$q.csv
            t0=$(date +%s%N)
            timeout 120 "$bin" run "$plan" --warehouse "$data" --format csv --output "$out" \
                "${retype[@]}" >"$tmp/run.log" 2>&1
            rc=$?
            ms=$((($(date +%s%N) - t0) / 1000000))
            if [ $rc -eq 0 ]; then
                why=$(node "$here/plans_compare.mjs" "$out" "$duck/results/duckdb/$q.csv" \
                    "$sql/$q.sql" 2>&1)
                rc=$?
            else
                why="exit $rc: $(tr '\n' ' ' <"$tmp/run.log" | cut -c1-300)"
            fi
            x=$(xfail_reason "$schema" "$v" "$q") && listed=1 || listed=0
            key="$v/$schema"
            if [ $rc -eq 0 ] && [ $listed -eq 0 ]; then
                passed=$((passed + 1))
                cell[$key,$q]=ok
                echo "ok    $schema $v $q (${ms} ms): $why"
            elif [ $rc -eq 0 ]; then
                failed=$((failed + 1))
                cell[$key,$q]=XPASS
                echo "XPASS $schema $v $q: passes but is listed as an expected failure ($x): remove it from XFAIL"
            elif [ $listed -eq 1 ]; then
                xfailed=$((xfailed + 1))
                cell[$key,$q]=xfail
                [[ " ${reasons[$x]:-} " == *" $schema/$v/$q "* ]] ||
                    reasons[$x]="${reasons[$x]:-} $schema/$v/$q"
                echo "xfail $schema $v $q: $x  [$why]"
            else
                failed=$((failed + 1))
                cell[$key,$q]=FAIL
                echo "FAIL  $schema $v $q: $why"
            fi
        done
    done
done

# The command line around the runtime: exit codes, atomic --output, thread
# counts that must not change results, formats.
check() { # description, then a command that must succeed
    local what=$1
    shift
    if "$@" >"$tmp/check.log" 2>&1; then
        passed=$((passed + 1))
        echo "ok    cli: $what"
    else
        failed=$((failed + 1))
        echo "FAIL  cli: $what: $(tr '\n' ' ' <"$tmp/check.log" | cut -c1-300)"
    fi
}
plan9=$shared/spark-plans/tpch/spark-3.5/q9.txt
if [ -d "$tmp/data-spark" ] && [ -d "$tmp/data-standard" ]; then
    check "threads 1 and 3 give identical rows (q9)" bash -c "
        '$bin' run '$plan9' --warehouse '$tmp/data-spark' --format csv --threads 1 >'$tmp/t1.csv' &&
        '$bin' run '$plan9' --warehouse '$tmp/data-spark' --format csv --threads 3 >'$tmp/t3.csv' &&
        cmp '$tmp/t1.csv' '$tmp/t3.csv'"
    check "type mismatch without --retype: exit 1 naming the column and both types, no output" \
        bash -c "! '$bin' run '$plan9' --warehouse '$tmp/data-standard' --output '$tmp/bad.csv' \
            --format csv 2>'$tmp/err.txt'; [ ! -e '$tmp/bad.csv' ] &&
            grep -q 'decimal(15,2)' '$tmp/err.txt' && grep -q 'decimal(10,0)' '$tmp/err.txt' &&
            ! ls '$tmp'/bad.csv.tmp-* >/dev/null 2>&1"
    check "missing table folder: exit 1" bash -c "
        '$bin' run '$plan9' --warehouse '$tmp/nowhere' >/dev/null 2>'$tmp/err.txt'; [ \$? -eq 1 ] &&
        grep -q 'nowhere/' '$tmp/err.txt'"
    check "usage errors exit 2" bash -c "
        '$bin' run '$plan9' --format xml >/dev/null 2>&1; [ \$? -eq 2 ] &&
        '$bin' run >/dev/null 2>&1; [ \$? -eq 2 ]"
    check "json lines: one object per row; parquet output reads back" bash -c "
        '$bin' run '$plan9' --warehouse '$tmp/data-spark' --format json >'$tmp/q9.json' &&
        [ \$(wc -l <'$tmp/q9.json') -eq \$((\$(wc -l <'$tmp/t1.csv') - 1)) ] &&
        '$bin' run '$plan9' --warehouse '$tmp/data-spark' --format parquet --output '$tmp/q9.parquet' &&
        '$bin' parquet meta '$tmp/q9.parquet' | grep -q 'rows'"
    check "explain marks every node of every 3.5 plan native" bash -c "
        for n in \$(seq 1 22); do '$bin' explain '$shared/spark-plans/tpch/spark-3.5/q'\$n.txt ||
            exit 1; done >'$tmp/explain.txt' && ! grep -q 'NOT NATIVE' '$tmp/explain.txt' &&
            grep -q 'stage 0' '$tmp/explain.txt'"
fi

echo
echo "Summary (ok = equals DuckDB; xfail = expected failure, reason below):"
printf '%-22s' "version/schema"
for n in $(seq 1 22); do printf '%-6s' "q$n"; done
echo
for v in "${versions[@]}"; do
    for schema in spark standard; do
        key="$v/$schema"
        printf '%-22s' "$key"
        for n in $(seq 1 22); do printf '%-6s' "${cell[$key,q$n]:--}"; done
        echo
    done
done
for r in "${!reasons[@]}"; do
    echo "  xfail: $r"
    echo "     in:${reasons[$r]}"
done
echo "$xfailed expected failures"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
