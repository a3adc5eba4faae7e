#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# TPC-H: Ember's native engine against its reference row engine, per query.
#
#   bench/rowvsnative/run.sh [--sf 1] [--runs 3] [--threads 2] [--only 1,3,18]
#       [--ember PATH] [--row-limit 300] [--data DIR]
#
# The same plan, the same data, the same process settings, run twice:
# natively (the default) and with --conf spark.ember.sql.enabled=false, which
# puts every node on the row engine (spark-rapids' GPU-vs-CPU comparison,
# with Ember's row engine in the CPU's place). Per query, in turn:
#   1. native: --runs timed runs (whole process, wall clock, CSV to a file);
#   2. row:    the same; when the first row run takes longer than --row-limit
#      seconds, the query's remaining row runs are skipped and the query is
#      listed as slow (run the script again at a smaller --sf for those);
#   3. both answers must be identical (rows sorted first when the plan's root
#      does not order them); a difference is reported, not hidden.
# The Spark 3.5 plans run on the standard schema's data with --retype, as
# bench/tpch does, from bench/results/data-sf<SF>-standard (shared with
# bench/tpch/run.sh, gitignored; generated when missing) or from --data DIR
# (generated there when it lacks the .complete marker). --ember defaults to
# build/release/ember (built with `cmake --preset release` when missing). Raw
# times go to bench/results/rowvsnative-<UTC time>/, the Markdown table
# (medians, speedup = row / native) to bench/results/rowvsnative-<UTC
# time>.md, and it is printed.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
shared=${EMBER_SHARED:-$root/../shared}
plans=$shared/spark-plans/tpch/spark-3.5
opt_sf=1 opt_runs=3 opt_threads=2 opt_only='' opt_ember='' opt_limit=300 opt_data=''
while [ $# -gt 1 ]; do
    v=$2
    case $1 in
    --sf) opt_sf=$v ;;
    --runs) opt_runs=$v ;;
    --threads) opt_threads=$v ;;
    --only) opt_only=$v ;;
    --ember) opt_ember=$v ;;
    --row-limit) opt_limit=$v ;;
    --data) opt_data=$v ;;
    *) break ;;
    esac
    shift 2
done
if [ $# -gt 0 ]; then
    sed -n '3,25p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
sf=$opt_sf runs=$opt_runs threads=$opt_threads row_limit=$opt_limit timeout_s=$((opt_limit * 3))
[[ $runs =~ ^[1-9][0-9]*$ && $threads =~ ^[1-9][0-9]*$ && $row_limit =~ ^[1-9][0-9]*$ ]] ||
    { echo "run.sh: --runs, --threads and --row-limit want positive counts" >&2; exit 2; }
log() { printf '%s\n' "$*" >&2; }
ember=${opt_ember:-$root/build/release/ember}
if [ ! -x "$ember" ] && [ -z "$opt_ember" ]; then
    (cd "$root" && cmake --preset release >/dev/null && cmake --build build/release --target ember_cli >/dev/null)
fi
[ -x "$ember" ] || { log "run.sh: $ember is not an executable"; exit 1; }
retype=(--retype)

# The data bench/tpch uses; its .complete marker says a generation finished.
data=${opt_data:-$root/bench/results/data-sf$sf-standard}
[ -f "$data/.complete" ] || {
    log "== generating TPC-H SF $sf (standard schema) into $data"
    mkdir -p "$data" && "$ember" gen tpch --sf "$sf" --schema standard --out "$data" --force \
        --no-progress >&2 && touch "$data/.complete"
}
out=$root/bench/results/rowvsnative-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
cp "$ember" "$out/ember-bin" # rebuilds of the tree during the run must not swap it
ember=$out/ember-bin
{
    echo "sf=$sf schema=standard spark_version=3.5 runs=$runs threads=$threads"
    echo "ember_commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "started=$(date -u +%Y-%m-%dT%H:%M:%SZ) load_before=$(cut -d' ' -f1-3 /proc/loadavg)"
    echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//') cores=$(nproc)"
} >"$out/meta.txt"

ms_now() { date +%s%N; }
median() { sort -g | awk '{v[NR] = $1} END {if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }

# Timed runs of one engine: times (s) to $out/<q>.<engine>.times, status to .status.
timed() { # q engine limit args...
    local q=$1 eng=$2 limit=$3 t0 t1 secs
    shift 3
    : >"$out/$q.$eng.times"
    echo ok >"$out/$q.$eng.status"
    for _ in $(seq 1 "$runs"); do
        t0=$(ms_now)
        if ! timeout "$timeout_s" "$ember" "$@" --output "$out/$q.$eng.csv" 2>"$out/$q.$eng.err"; then
            echo "error: $(tr '\n' ' ' <"$out/$q.$eng.err" | cut -c1-200)" >"$out/$q.$eng.status"
            return
        fi
        t1=$(ms_now)
        secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", (b - a) / 1e9}')
        echo "$secs" >>"$out/$q.$eng.times"
        if [ "$limit" -gt 0 ] && awk -v s="$secs" -v l="$limit" 'BEGIN {exit !(s > l)}'; then
            echo slow >"$out/$q.$eng.status"
            return
        fi
    done
}

# Identical answers: byte for byte, or as sorted rows when the root does not order them.
same_answer() { # q plan
    local a=$out/$1.native.csv b=$out/$1.row.csv
    if sed -n 2p "$2" | grep -q -E '^(\* )?(Sort|TakeOrderedAndProject) '; then
        cmp -s "$a" "$b"
    else
        cmp -s <(head -1 "$a"; tail -n +2 "$a" | LC_ALL=C sort) <(head -1 "$b"; tail -n +2 "$b" | LC_ALL=C sort)
    fi
}

queries=$(seq 1 22)
[ -n "$opt_only" ] && queries=$(tr "," " " <<<"$opt_only")
for n in $queries; do
    q=q$n
    plan=$plans/$q.txt
    base=(run "$plan" --warehouse "$data" --format csv --threads "$threads" "${retype[@]}"
        --spark-version 3.5)
    timed "$q" native 0 "${base[@]}"
    timed "$q" row "$row_limit" "${base[@]}" --conf spark.ember.sql.enabled=false
    ans=-
    if [ "$(cat "$out/$q.native.status")" = ok ] && [[ "$(cat "$out/$q.row.status")" != error* ]]; then
        same_answer "$q" "$plan" && ans=identical || ans=DIFFERS
    fi
    echo "$ans" >"$out/$q.answer"
    log "$q native $(cat "$out/$q.native.status") [$(tr '\n' ' ' <"$out/$q.native.times")]" \
        "row $(cat "$out/$q.row.status") [$(tr '\n' ' ' <"$out/$q.row.times")] answers $ans"
done
echo "finished=$(date -u +%Y-%m-%dT%H:%M:%SZ) load_after=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/meta.txt"

# The table: medians, speedup = row / native; geometric mean over the queries both ran.
{
    echo "TPC-H SF $sf (standard schema, --retype)," \
        "Spark 3.5 plans, $threads threads, median of $runs runs (whole process, wall clock)."
    echo
    echo "| query | native (s) | row engine (s) | speedup | answers |"
    echo "|---|---:|---:|---:|---|"
    logsum=0 count=0
    for n in $queries; do
        q=q$n
        nat=$(median <"$out/$q.native.times")
        row=$(median <"$out/$q.row.times")
        ns=$(cat "$out/$q.native.status") rs=$(cat "$out/$q.row.status")
        if [ "$ns" != ok ]; then
            echo "| $q | $ns | | | |"
            continue
        fi
        case $rs in
        ok)
            sp=$(awk -v a="$row" -v b="$nat" 'BEGIN {printf "%.1f", a / b}')
            logsum=$(awk -v s="$logsum" -v a="$row" -v b="$nat" 'BEGIN {printf "%.6f", s + log(a / b)}')
            count=$((count + 1))
            echo "| $q | $nat | $row | ${sp}x | $(cat "$out/$q.answer") |" ;;
        slow)
            echo "| $q | $nat | > $row_limit ($row, 1 run) | > $(awk -v a="$row" -v b="$nat" 'BEGIN {printf "%.0f", a / b}')x | $(cat "$out/$q.answer") |" ;;
        *)
            echo "| $q | $nat | $rs | | |" ;;
        esac
    done
    if [ "$count" -gt 0 ]; then
        echo
        echo "Geometric mean of the speedup over the $count queries that ran $runs times on both" \
            "engines: $(awk -v s="$logsum" -v c="$count" 'BEGIN {printf "%.1f", exp(s / c)}')x."
    fi
} >"$out.md"
cat "$out.md"
log "== report: $out.md (raw data in $out/)"
