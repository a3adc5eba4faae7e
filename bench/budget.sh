#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Peak RSS of `ember run --memory M` against M, on Spark's 22 TPC-H plans.
#
#   bench/budget.sh                         # SF 1, 64m, 2 threads, 3 runs
#   bench/budget.sh --memory 128m --threads 1 --runs 1 --only 3,9,21
#
# Per query: `--runs` runs without a budget and `--runs` runs under it, in
# turn, each timed from start to exit with its peak resident set
# (/usr/bin/time %M, the kernel's high-water mark: code, stacks, every
# thread's heap, the file pages mapped); the medians are reported, with the
# overhead over the budget (RSS - M) and the time ratio. Answers are
# compared too (a benchmark of wrong answers measures nothing). Data:
# bench/results/data-sf<SF>-spark (made with `ember gen tpch --schema
# spark` when missing). Report: bench/results/budget-<UTC>.md (gitignored).
set -euo pipefail
cd "$(dirname "$0")/.."
sf=1 memory=64m threads=2 runs=3 only=$(seq -s, 1 22) version=3.5
while [ $# -gt 0 ]; do
    case $1 in
        --sf) sf=$2; shift 2 ;;
        --memory) memory=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --only) only=$2; shift 2 ;;
        --spark-version) version=$2; shift 2 ;;
        *) echo "bench/budget.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
shared=${EMBER_SHARED:-$(cd .. && pwd)/shared}
bin=${EMBER_BIN:-build/release/ember}
[ -x "$bin" ] || { cmake --preset release >/dev/null && cmake --build --preset release; }
data=bench/results/data-sf$sf-spark
[ -d "$data/lineitem" ] || "$bin" gen tpch --sf "$sf" --schema spark --out "$data"
stamp=$(date -u +%Y%m%dT%H%M%SZ)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
report=bench/results/budget-$stamp.md

median() { sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
budget_mib=$(numfmt --from=iec "${memory^^}" | awk '{print $1/1048576}')
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
{
    echo "# ember run --memory $memory: peak RSS, SF $sf, $threads threads, median of $runs"
    echo
    echo "| query | RSS free MiB | RSS budget MiB | over budget MiB | s free | s budget | ratio | answers |"
    echo "|---|---:|---:|---:|---:|---:|---:|---|"
} > "$report"
worst=-1000
IFS=, read -ra queries <<< "$only"
for n in "${queries[@]}"; do
    plan=$shared/spark-plans/tpch/spark-$version/q$n.txt
    args=(run "$plan" --warehouse "$data" --spark-version "$version" --format csv --threads "$threads")
    : > "$work/rf"; : > "$work/rb"; : > "$work/tf"; : > "$work/tb"
    for ((r = 0; r < runs; r++)); do
        for mode in free budget; do
            extra=()
            [ $mode = budget ] && extra=(--memory "$memory")
            t0=$(date +%s.%N)
            /usr/bin/time -f %M -o "$work/rss" "$bin" "${args[@]}" "${extra[@]}" \
                --output "$work/$mode.csv" 2>"$work/$mode.err" || {
                echo "q$n ($mode) failed:" >&2; grep -v warning "$work/$mode.err" >&2; exit 1; }
            t1=$(date +%s.%N)
            echo "$(( $(tail -1 "$work/rss") / 1024 ))" >> "$work/r${mode:0:1}"
            echo "$t1 - $t0" | bc >> "$work/t${mode:0:1}"
        done
    done
    same=$(cmp -s "$work/free.csv" "$work/budget.csv" && echo equal || echo DIFFER)
    rf=$(median < "$work/rf"); rb=$(median < "$work/rb")
    tf=$(median < "$work/tf"); tb=$(median < "$work/tb")
    over=$(awk -v a="$rb" -v b="$budget_mib" 'BEGIN {print a - b}')
    worst=$(awk -v a="$over" -v b="$worst" 'BEGIN {print (a > b) ? a : b}')
    printf '| q%s | %s | %s | %s | %.2f | %.2f | %.2f | %s |\n' "$n" "$rf" "$rb" "$over" "$tf" "$tb" \
        "$(awk -v a="$tb" -v b="$tf" 'BEGIN {print a / b}')" "$same" >> "$report"
done
{
    echo
    echo "Most over the budget: $worst MiB. Load average before: $load_before; after:" \
        "$(cut -d' ' -f1-3 /proc/loadavg). $(nproc) cores."
} >> "$report"
cat "$report"
echo "report: $report"
