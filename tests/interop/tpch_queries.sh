#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The TPC-H generator against DuckDB. For both schemas (spark, standard) at
# SF 0.01: `ember gen tpch` writes the warehouse; tpch_checks.mjs checks the
# files' types, cardinalities and the specification's rules with DuckDB SQL;
# then all 22 TPC-H queries (../shared/tpch/queries, Spark's text) run on
# DuckDB through ../shared/peers/run-peers.mjs, and every query must succeed
# and return at least one row. Query 6 under the spark schema returns its one
# row with a NULL sum (every discount rounds to 0): that is checked too, as is
# the standard schema's non-null q6. Finally the CLI's usage errors exit 2 and
# a refused non-empty folder exits 2 and keeps its content; `ember demo` reads
# every table back with Ember's reader and passes its checks.
#
# Env: EMBER_BIN, EMBER_SHARED, EMBER_TEST_TMP, EMBER_SOURCE, PEERS_MODULES
# (set up with scripts/setup-peers.sh when unset). Ends with "N passed, N failed".
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=${EMBER_SOURCE:-$(cd "$here/../.." && pwd)}
shared=${EMBER_SHARED:-$src/../shared}
bin=${EMBER_BIN:-$src/build/release/ember}
[ -x "$bin" ] || { echo "tpch_queries: EMBER_BIN '$bin' is not an executable" >&2; exit 1; }
PEERS_MODULES=${PEERS_MODULES:-$(bash "$src/scripts/setup-peers.sh")}
export PEERS_MODULES
export ASAN_OPTIONS=${ASAN_OPTIONS:-exitcode=86:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-exitcode=87:halt_on_error=1:print_stacktrace=1}

base=${EMBER_TEST_TMP:-${TMPDIR:-/tmp}}
mkdir -p "$base"
tmp=$(mktemp -d "$base/tpch_queries.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok   $*"; }
bad() { failed=$((failed + 1)); echo "FAIL $*"; }

for schema in standard spark; do
    data=$tmp/$schema
    if "$bin" gen tpch --sf 0.01 --schema "$schema" --out "$data" >"$tmp/gen-$schema.txt" 2>&1; then
        ok "gen tpch --sf 0.01 --schema $schema"
    else
        bad "gen tpch --sf 0.01 --schema $schema: $(cat "$tmp/gen-$schema.txt")"
        continue
    fi
    if node "$here/tpch_checks.mjs" "$data" 0.01 "$schema" >"$tmp/checks-$schema.txt" 2>&1; then
        ok "$schema: $(tail -1 "$tmp/checks-$schema.txt") DuckDB data checks"
    else
        bad "$schema: DuckDB data checks"
        grep -v '^ok' "$tmp/checks-$schema.txt" || true
    fi
    out=$tmp/peers-$schema
    if ! node "$shared/peers/run-peers.mjs" --engines duckdb --data "$data" \
        --queries "$shared/tpch/queries" --out "$out" --runs 1 --warmup 0 \
        >"$tmp/peers-$schema.log" 2>&1; then
        bad "$schema: run-peers.mjs failed: $(tail -5 "$tmp/peers-$schema.log")"
        continue
    fi
    # One line per query: "qN STATUS ROWS".
    node -e '
        const t = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
        for (let q = 1; q <= 22; q++) {
            const r = (t.queries["q" + q] || {}).duckdb || {};
            console.log(`q${q} ${r.status || "missing"} ${r.rows ?? -1} ${(r.error || "").replace(/\s+/g, " ")}`);
        }' "$out/timings.json" >"$tmp/rows-$schema.txt"
    while read -r q status rows error; do
        if [ "$status" = ok ] && [ "$rows" -ge 1 ]; then
            ok "$schema $q: $rows rows"
        else
            bad "$schema $q: status $status, $rows rows $error"
        fi
    done <"$tmp/rows-$schema.txt"
    q6=$(sed -n 2p "$out/results/duckdb/q6.csv")
    if [ "$schema" = spark ]; then
        [ -z "$q6" ] && ok "spark q6 sums no rows (discounts round to 0)" ||
            bad "spark q6 revenue '$q6', expected NULL"
    else
        [ -n "$q6" ] && ok "standard q6 revenue $q6" || bad "standard q6 revenue is NULL"
    fi
done

# Usage errors exit 2; a non-empty folder is refused (2) and left as it was.
expect_exit() {
    local want=$1
    shift
    local rc=0
    "$bin" "$@" >"$tmp/cli.out" 2>&1 || rc=$?
    if [ "$rc" = "$want" ]; then ok "exit $want: ember $*"; else bad "exit $rc (want $want): ember $* $(head -2 "$tmp/cli.out")"; fi
}
expect_exit 2 gen tpch --sf 0.001 --schema spark --out "$tmp/x"
expect_exit 2 gen tpch --sf 11 --schema spark --out "$tmp/x"
expect_exit 2 gen tpch --sf abc --schema spark --out "$tmp/x"
expect_exit 2 gen tpch --sf 0.01 --schema oracle --out "$tmp/x"
expect_exit 2 gen tpch --sf 0.01 --schema spark
expect_exit 2 gen tpch --sf 0.01 --out "$tmp/x"
expect_exit 2 gen tpch --sf 0.01 --schema spark --out "$tmp/x" --codec lzo
expect_exit 2 gen tpch --sf 0.01 --schema spark --out "$tmp/x" --threads 0
expect_exit 2 gen tpcds --sf 1
expect_exit 2 gen
[ ! -e "$tmp/x" ] && ok "no output folder after usage errors" || bad "usage errors created $tmp/x"
expect_exit 2 gen tpch --sf 0.01 --schema spark --out "$tmp/spark"
if grep -q "not empty" "$tmp/cli.out" && [ -f "$tmp/spark/lineitem/part-00000.parquet" ]; then
    ok "non-empty folder refused and kept"
else
    bad "non-empty folder: $(cat "$tmp/cli.out")"
fi
expect_exit 0 gen tpch --sf 0.01 --schema spark --out "$tmp/spark" --force --threads 1 --codec zstd

# Interrupted (SIGINT) while replacing the tables of a warehouse: exit 130, the
# old tables intact, no staging folder left.
before=$(cd "$tmp/spark" && find . -type f | sort | xargs md5sum)
"$bin" gen tpch --sf 1 --schema spark --out "$tmp/spark" --force --no-progress >"$tmp/int.out" 2>&1 &
pid=$!
sleep 1
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
after=$(cd "$tmp/spark" && find . -type f | sort | xargs md5sum)
if [ "$rc" = 130 ] && [ "$before" = "$after" ] && [ -z "$(ls -A "$tmp/spark" | grep '^\.')" ]; then
    ok "interrupted generation: exit 130, old tables intact, nothing staged left"
else
    bad "interrupted generation: exit $rc, $(cat "$tmp/int.out"); $(ls -A "$tmp/spark")"
fi

# The demo: generate, read back with Ember's reader, check; exits 0 and says so.
expect_exit 0 demo --dir "$tmp/demo" --threads 2
if grep -q "^demo ok" "$tmp/cli.out" && grep -q "^lineitem .*every quantity in 1..50" "$tmp/cli.out"; then
    ok "demo read every table back"
else
    bad "demo output: $(cat "$tmp/cli.out")"
fi
expect_exit 2 demo --sf 0.001
expect_exit 2 demo --bogus

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
