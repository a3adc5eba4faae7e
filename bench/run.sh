#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Ember vs DuckDB on TPC-H Parquet: generator time and full decode of lineitem.
#
#   bench/run.sh [--sf 1] [--runs 5] [--gen-runs 3] [--threads 2] [--table lineitem]
#                [--data DIR] [--build DIR] [--prebuilt DIR] [--skip-gen]
#
# 1. Builds a Release tree (default build/bench) with `ember` and `parquet_decode`
#    (--prebuilt DIR: use DIR/ember and DIR/bench/parquet_decode as they are).
# 2. Generates TPC-H (standard schema, DECIMAL(15,2)) with `ember gen tpch`
#    --gen-runs times into DIR (default /tmp/ember-bench-sf<SF>), timing each run;
#    the last generation is the data set. --skip-gen reuses DIR as it is.
# 3. Decodes every column of DIR/<table>/*.parquet with bench/parquet_decode
#    (Ember) and bench/peers_decode.mjs (DuckDB, mode scan), each with --threads
#    threads, in --runs alternating rounds of one warm-up and one timed run.
# 4. Prints a Markdown report and writes it, with both tools' logs, to
#    bench/results/ (gitignored).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
sf=1 runs=5 gen_runs=3 threads=2 table=lineitem skip_gen=0
data= build=$root/build/bench prebuilt=
while [ $# -gt 0 ]; do
  case $1 in
    --sf) sf=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --gen-runs) gen_runs=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --table) table=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --prebuilt) prebuilt=$2; shift 2 ;;
    --skip-gen) skip_gen=1; shift ;;
    -h|--help) sed -n '3,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
data=${data:-/tmp/ember-bench-sf$sf}

log() { printf '%s\n' "$*" >&2; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) exit 1; if (NR%2) print a[(NR+1)/2]; else printf "%.6f\n", (a[NR/2]+a[NR/2+1])/2}'; }

if [ -n "$prebuilt" ]; then
  build=$prebuilt
else
  log "== building Release tree in $build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  ninja -C "$build" ember_cli parquet_decode >/dev/null
fi
ember=$build/ember
decode=$build/bench/parquet_decode
[ -x "$decode" ] || decode=$(find "$build" -name parquet_decode -type f -perm -u+x | head -1)
[ -x "$ember" ] && [ -x "$decode" ] || { log "run.sh: ember or parquet_decode missing in $build"; exit 1; }

PEERS_MODULES=${PEERS_MODULES:-$(bash "$root/scripts/setup-peers.sh")}
export PEERS_MODULES

stamp=$(date -u +%Y%m%dT%H%M%SZ)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
out=$root/bench/results
mkdir -p "$out"
gen_times=()
if [ "$skip_gen" = 0 ] && [ -d "$data" ]; then
  # DIR is emptied before each generation: only ever a folder of TPC-H tables.
  other=$(find "$data" -mindepth 1 -maxdepth 1 \! \( -type d \( -name part -o -name supplier \
    -o -name partsupp -o -name customer -o -name orders -o -name lineitem -o -name nation \
    -o -name region \) \) | head -1)
  [ -z "$other" ] || { log "run.sh: $data holds $other; not a TPC-H folder, not deleting it"; exit 1; }
fi
if [ "$skip_gen" = 0 ]; then
  for i in $(seq 1 "$gen_runs"); do
    rm -rf "$data"
    log "== ember gen tpch --sf $sf --schema standard (run $i of $gen_runs)"
    t0=$(date +%s.%N)
    "$ember" gen tpch --sf "$sf" --schema standard --out "$data" >/dev/null </dev/null
    t1=$(date +%s.%N)
    gen_times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')")
    log "   ${gen_times[-1]} s"
  done
fi
[ -d "$data/$table" ] || { log "run.sh: $data/$table not found"; exit 1; }

# The engines alternate, one timed run each per round (each process with its
# own warm-up run), so load from other processes on the machine falls on both
# alike rather than on whichever happened to run during it.
: >"$out/$stamp-ember.log"
: >"$out/$stamp-duckdb.log"
for i in $(seq 1 "$runs"); do
  log "== round $i of $runs: Ember parquet_decode, then DuckDB peers_decode.mjs ($threads threads, $data/$table)"
  "$decode" --runs 1 --threads "$threads" "$data/$table" | tee -a "$out/$stamp-ember.log" >&2
  node "$root/bench/peers_decode.mjs" --runs 1 --threads "$threads" "$data/$table" \
    | tee -a "$out/$stamp-duckdb.log" >&2
done
times_of() { awk '/^run [0-9]+:/ {print $3}' "$1"; }
cpu_of() { sed -n 's/^run [0-9]*:.*(cpu \([0-9.]*\) s).*/\1/p' "$1"; }
ember_s=$(times_of "$out/$stamp-ember.log" | median)
duck_s=$(times_of "$out/$stamp-duckdb.log" | median)
ember_cpu=$(cpu_of "$out/$stamp-ember.log" | median)
duck_cpu=$(cpu_of "$out/$stamp-duckdb.log" | median)
cpu_ratio=$(awk -v e="$ember_cpu" -v d="$duck_cpu" 'BEGIN {printf "%.2f", e / d}')
ember_runs=$(times_of "$out/$stamp-ember.log" | paste -sd, | sed 's/,/, /g')
duck_runs=$(times_of "$out/$stamp-duckdb.log" | paste -sd, | sed 's/,/, /g')
rows=$(sed -n 's/.*, rows: \([0-9]*\),.*/\1/p' "$out/$stamp-ember.log" | head -1)
disk=$(sed -n 's/^bytes: \([0-9.]*\) MB on disk.*/\1/p' "$out/$stamp-ember.log" | head -1)
duck_version="DuckDB $(head -1 "$out/$stamp-duckdb.log" | cut -d, -f1)"
ratio=$(awk -v e="$ember_s" -v d="$duck_s" 'BEGIN {printf "%.2f", e / d}')
verdict=$(awk -v e="$ember_s" -v d="$duck_s" 'BEGIN {print (e <= d) ? "Ember at least as fast" : sprintf("Ember %.2fx slower", e / d)}')
if [ ${#gen_times[@]} -gt 0 ]; then
  gen_med=$(printf '%s\n' "${gen_times[@]}" | median)
  gen_row="| TPC-H SF $sf generation, all 8 tables (\`ember gen tpch\`, median of $gen_runs) | $(printf '%.3f' "$gen_med") s | – | – |"
  gen_list="Generator runs (s): $(IFS=,; echo "${gen_times[*]}" | sed 's/,/, /g')."
else
  gen_row="| TPC-H SF $sf generation | not run (--skip-gen) | – | – |"
  gen_list=
fi

report=$out/$stamp.md
{
  echo "# Ember vs DuckDB: Parquet decode, TPC-H SF $sf $table"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)," \
       "$(nproc) cores ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), $threads threads each, $duck_version."
  echo "Data: $data/$table, $rows rows, $disk MB on disk. Load average before/after: $load_before / $(cut -d' ' -f1-3 /proc/loadavg)."
  echo
  echo "| measure | Ember | DuckDB | ratio (Ember / DuckDB) |"
  echo "| --- | ---: | ---: | ---: |"
  echo "| full decode of every $table column, wall time (median of $runs) | $(printf '%.3f' "$ember_s") s | $(printf '%.3f' "$duck_s") s | $ratio |"
  echo "| the same, CPU time of all threads (median of $runs) | $(printf '%.3f' "$ember_cpu") s | $(printf '%.3f' "$duck_cpu") s | $cpu_ratio |"
  echo "$gen_row"
  echo
  echo "Verdict: $verdict. Decode runs (s): Ember $ember_runs; DuckDB $duck_runs. $gen_list"
  echo "DuckDB mode: scan (\`PRAGMA disable_optimizer; SELECT count(*) FROM (SELECT * FROM read_parquet(...))\`), see bench/README.md."
} >"$report"
cat "$report"
log "report written to $report"
