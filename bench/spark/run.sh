#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# TPC-H through Spark: vanilla Spark against Spark with Ember, the 22
# queries as Spark's repository has them, one local Spark, same JVM.
#
#   bench/spark/run.sh [--sf 1] [--runs 3] [--warmup 1] [--master local[2]]
#       [--only 1,3,18] [--conf k=v ...]
#
# 1. Builds everything (scripts/build.sh) unless the plugin jar is there.
# 2. Generates TPC-H in Spark's schema once, into bench/results/data-sf<SF>-spark
#    (gitignored), and reuses it.
# 3. Runs tools/ember-spark-sql --compare: per query, --warmup untimed and
#    --runs timed runs of each side, Ember on and Ember off taking turns run by
#    run in the same warm session (spark.ember.sql.enabled switched per run),
#    answers compared;
#    the median of each side is reported.
# 4. bench/spark/report.mjs writes bench/results/spark-<UTC time>.md (and the
#    raw report JSON and log beside it) and prints it, with the load average
#    before and after.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
shared=${EMBER_SHARED:-$root/../shared}
sf=1 runs=3 warmup=1 master='local[2]' only=
confs=()
while [ $# -gt 0 ]; do
    case $1 in
    --sf) sf=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --master) master=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --conf) confs+=(--conf "$2"); shift 2 ;;
    *) echo "bench/spark/run.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
cd "$root"
[ -f spark/plugin/target/classpath.txt ] && [ -x build/release/ember ] || bash scripts/build.sh
data=bench/results/data-sf$sf-spark
if [ ! -d "$data/lineitem" ]; then
    mkdir -p bench/results
    build/release/ember gen tpch --sf "$sf" --schema spark --out "$data" --force
fi
queries=()
for q in $(seq 1 22); do
    if [ -z "$only" ] || [[ ",$only," == *",$q,"* ]]; then
        queries+=("$shared/tpch/queries/q$q.sql")
    fi
done
stamp=$(date -u +%Y%m%dT%H%M%SZ)
out=bench/results/spark-$stamp
mkdir -p "$out"
{
    echo "commit $(git rev-parse --short HEAD)"
    echo "start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$out/run.txt"
tools/ember-spark-sql --master "$master" --warehouse "$data" -f "${queries[@]}" --compare \
    --quiet --repeat "$runs" --warmup "$warmup" --report "$out/report.json" \
    --conf spark.sql.shuffle.partitions=8 ${confs[@]+"${confs[@]}"} 2> "$out/log.txt" || true
echo "end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/run.txt"
node bench/spark/report.mjs "$out" "$sf" "$master" "$runs" "$warmup" > "$out.md"
cat "$out.md"
