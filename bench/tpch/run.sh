#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# TPC-H: the 22 shared Spark plans on Ember against DuckDB and Polars.
#
#   bench/tpch/run.sh [--sf 1] [--schema standard|spark] [--spark-version 3.5]
#       [--runs 5] [--warmup 1] [--threads 2] [--only 1,3,18] [--engines duckdb,polars]
#       [--prebuilt BUILD_DIR] [--timeout 600]
#
# 1. Builds `ember` with `cmake --preset release` (build/release), unless
#    --prebuilt names a build tree that already holds it.
# 2. Generates the data once with `ember gen tpch` into bench/results/
#    data-sf<SF>-<schema> (gitignored) and reuses it on later runs. The standard
#    schema (TPC-H's DECIMAL(15,2) money, the default) runs the plans with
#    --retype; the spark schema (Spark's DECIMAL(10,0)) runs them as printed.
# 3. Writes the TPC-H SQL rewritten the way Spark's harness rewrote the plans'
#    literals (tests/interop/plans_sql.mjs), so DuckDB answers the same query.
# 4. Per query, in turn, so that machine load hits all engines alike:
#    Ember once with --metrics and CSV output (the profile and the answer),
#    then --warmup + --runs timed runs (whole process, wall clock, CSV to
#    /dev/null); then DuckDB and Polars through ../shared/peers/run-peers.mjs
#    with the same warm-up, runs and threads; then Ember's answer against
#    DuckDB's with tests/interop/plans_compare.mjs.
# 5. bench/tpch/report.mjs writes the Markdown report to
#    bench/results/tpch-<UTC time>.md (raw data beside it in
#    bench/results/tpch-<UTC time>/) and prints it.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
shared=${EMBER_SHARED:-$root/../shared}
sf=1 schema=standard version=3.5 runs=5 warmup=1 threads=2 only= prebuilt= engines=duckdb,polars
timeout_s=600
while [ $# -gt 0 ]; do
    case $1 in
    --sf) sf=$2; shift 2 ;;
    --schema) schema=$2; shift 2 ;;
    --spark-version) version=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --engines) engines=$2; shift 2 ;;
    --prebuilt) prebuilt=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    -h | --help) sed -n '3,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
case $schema in
standard) retype=(--retype) ;;
spark) retype=() ;;
*) echo "run.sh: --schema wants standard or spark, got '$schema'" >&2; exit 2 ;;
esac
for n in "$runs" "$warmup" "$threads" "$timeout_s"; do
    [[ $n =~ ^[0-9]+$ ]] || { echo "run.sh: '$n' is not a count" >&2; exit 2; }
done
[ "$runs" -ge 1 ] || { echo "run.sh: --runs must be at least 1" >&2; exit 2; }
plans=$shared/spark-plans/tpch/spark-$version
[ -d "$plans" ] || { echo "run.sh: no plans for Spark $version ($plans)" >&2; exit 2; }

log() { printf '%s\n' "$*" >&2; }

if [ -n "$prebuilt" ]; then
    ember=$prebuilt/ember
else
    log "== building release (cmake --preset release)"
    (cd "$root" && cmake --preset release >/dev/null && cmake --build build/release --target ember_cli >/dev/null)
    ember=$root/build/release/ember
fi
[ -x "$ember" ] || { log "run.sh: $ember is not an executable"; exit 1; }

PEERS_MODULES=${PEERS_MODULES:-$(bash "$root/scripts/setup-peers.sh")}
export PEERS_MODULES

results=$root/bench/results
data=$results/data-sf$sf-$schema
# .complete is written only after a whole generation: an interrupted one is redone
if [ ! -f "$data/.complete" ]; then
    log "== generating TPC-H SF $sf ($schema schema) into $data"
    mkdir -p "$data"
    "$ember" gen tpch --sf "$sf" --schema "$schema" --out "$data" --force --no-progress >&2
    touch "$data/.complete"
fi

stamp=$(date -u +%Y%m%dT%H%M%SZ)
out=$results/tpch-$stamp
mkdir -p "$out/ember" "$out/peers" "$out/cmp"
# a private copy: others rebuilding the tree mid-run must not swap the binary
cp "$ember" "$out/ember-bin"
ember=$out/ember-bin
{
    echo "sf=$sf"
    echo "schema=$schema"
    echo "spark_version=$version"
    echo "runs=$runs"
    echo "warmup=$warmup"
    echo "threads=$threads"
    echo "engines=$engines"
    echo "ember=$ember (copied from ${prebuilt:-$root/build/release})"
    echo "ember_commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "retype=${retype[*]:-}"
    echo "data=$data"
    echo "plans=$plans"
    echo "started=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "load_before=$(cut -d' ' -f1-3 /proc/loadavg)"
    echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
    echo "cores=$(nproc)"
} >"$out/meta.env"

log "== SQL with the plans' literals (plans_sql.mjs)"
node "$root/tests/interop/plans_sql.mjs" "$shared/tpch/queries" "$plans" "$out/sql" >&2 ||
    log "   warning: a rewritten literal is not in its plan; that query's comparison may fail"

queries=$(seq 1 22)
[ -n "$only" ] && queries=$(tr ',' ' ' <<<"$only")
ms_now() { date +%s%N; }
for n in $queries; do
    q=q$n
    plan=$plans/$q.txt
    base=(run "$plan" --warehouse "$data" --format csv --threads "$threads" "${retype[@]}")
    # the profile and the answer
    if timeout "$timeout_s" "$ember" "${base[@]}" --metrics --output "$out/ember/$q.csv" \
        2>"$out/ember/$q.metrics"; then
        echo ok >"$out/ember/$q.status"
        : >"$out/ember/$q.times"
        for i in $(seq 1 $((warmup + runs))); do
            t0=$(ms_now)
            if ! timeout "$timeout_s" "$ember" "${base[@]}" >/dev/null 2>"$out/ember/$q.err"; then
                echo "error: timed run $i failed: $(tr '\n' ' ' <"$out/ember/$q.err" | cut -c1-300)" \
                    >"$out/ember/$q.status"
                break
            fi
            t1=$(ms_now)
            if [ "$i" -gt "$warmup" ]; then
                awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f\n", (b - a) / 1e6}' >>"$out/ember/$q.times"
            fi
        done
    else
        rc=$?
        echo "error: exit $rc: $(grep -v '^\(query:\|stage\|node\|[0-9]\)' "$out/ember/$q.metrics" |
            tr '\n' ' ' | cut -c1-300)" >"$out/ember/$q.status"
    fi
    log "$q ember: $(cat "$out/ember/$q.status") $(sort -g "$out/ember/$q.times" 2>/dev/null | tr '\n' ' ')"

    node "$shared/peers/run-peers.mjs" --engines "$engines" --data "$data" --queries "$out/sql" \
        --out "$out/peers/$q" --only "$n" --warmup "$warmup" --runs "$runs" --threads "$threads" \
        --timeout-s "$timeout_s" 2>&1 | grep "^$q " >&2 || true

    duck=$out/peers/$q/results/duckdb/$q.csv
    if [ "$(cat "$out/ember/$q.status")" = ok ] && [ -s "$duck" ]; then
        if node "$root/tests/interop/plans_compare.mjs" "$out/ember/$q.csv" "$duck" "$out/sql/$q.sql" \
            >"$out/cmp/$q.txt" 2>&1; then
            echo ok >"$out/cmp/$q.status"
        else
            echo differs >"$out/cmp/$q.status"
        fi
        log "$q compare: $(cat "$out/cmp/$q.status"): $(head -c 300 "$out/cmp/$q.txt")"
    fi
done
{
    echo "finished=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "load_after=$(cut -d' ' -f1-3 /proc/loadavg)"
} >>"$out/meta.env"

node "$root/bench/tpch/report.mjs" "$out" >"$out.md"
cat "$out.md"
log "== report: $out.md (raw data in $out/)"
