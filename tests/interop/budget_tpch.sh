#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The TPC-H queries under a memory budget give the answers of the unlimited
# run (issue 13, item 4).
#
# Every spark-3.5 plan of $EMBER_SHARED runs twice over `ember gen tpch
# --schema spark` data with the same threads: without a budget, then with
# --memory; the two CSV outputs must be byte for byte equal and both runs
# must succeed. What makes the budget hold is exercised on the way: hash
# aggregates flush or spill, shuffles spill, and a broadcast that does not
# fit is planned again as a shuffled hash join (stderr says so; at least one
# query must take that path, or the budget tests nothing). Peak RSS is
# printed for each run; the figure against the budget is bench/budget.sh's.
# Last, all of lineitem as CSV under the budget, several times its size:
# the result streams to the output instead of being collected.
#
# Scale: SF 1 under 64 MiB in a release build (the issue's setting); the
# sanitizer and tiny-batch builds, many times slower, run SF 0.1 under 24 MiB
# with one thread (a scan task alone holds about 7 MiB of buffers, a good
# part of that budget: with two at once, which tasks meet decides the peak).
# Env: EMBER_BIN, EMBER_SHARED, EMBER_TEST_TMP, EMBER_BUILD_FLAVOR (release,
# sanitized, tiny-batch; set by ctest), BUDGET_SF / BUDGET_MEMORY /
# BUDGET_THREADS / BUDGET_ONLY (e.g. "3,9,21") to override.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=${EMBER_SOURCE:-$(cd "$here/../.." && pwd)}
shared=${EMBER_SHARED:-$src/../shared}
bin=${EMBER_BIN:-$src/build/release/ember}
[ -x "$bin" ] || { echo "budget_tpch: EMBER_BIN '$bin' is not an executable" >&2; exit 1; }
export ASAN_OPTIONS=${ASAN_OPTIONS:-exitcode=86:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-exitcode=87:halt_on_error=1:print_stacktrace=1}

case ${EMBER_BUILD_FLAVOR:-release} in
    release) sf=1 memory=64m threads=2 ;;
    *) sf=0.1 memory=24m threads=1 ;;
esac
sf=${BUDGET_SF:-$sf}
memory=${BUDGET_MEMORY:-$memory}
threads=${BUDGET_THREADS:-$threads}
only=${BUDGET_ONLY:-$(seq -s, 1 22)}

base=${EMBER_TEST_TMP:-${TMPDIR:-/tmp}}
mkdir -p "$base"
tmp=$(mktemp -d "$base/budget_tpch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

if ! "$bin" gen tpch --sf "$sf" --schema spark --out "$tmp/data" > "$tmp/gen.log" 2>&1; then
    cat "$tmp/gen.log" >&2
    echo "budget_tpch: generating SF $sf failed" >&2
    exit 1
fi

rss() { # the file /usr/bin/time -f %M wrote, in MiB
    echo $(( $(tail -1 "$1") / 1024 ))
}

passed=0 failed=0 replanned=0
printf '%-5s %10s %10s %s\n' query "rss free" "rss $memory" result
IFS=, read -ra queries <<< "$only"
for n in "${queries[@]}"; do
    plan=$shared/spark-plans/tpch/spark-3.5/q$n.txt
    run=(run "$plan" --warehouse "$tmp/data" --spark-version 3.5 --format csv --threads "$threads")
    /usr/bin/time -f %M -o "$tmp/free.rss" "$bin" "${run[@]}" --output "$tmp/free.csv" \
        2> "$tmp/free.err"
    rc_free=$?
    /usr/bin/time -f %M -o "$tmp/held.rss" "$bin" "${run[@]}" --memory "$memory" \
        --output "$tmp/held.csv" 2> "$tmp/held.err"
    rc_held=$?
    why=""
    if [ $rc_free -ne 0 ]; then
        why="the unlimited run failed (exit $rc_free): $(grep -v warning "$tmp/free.err" | head -3)"
    elif [ $rc_held -ne 0 ]; then
        # the re-planning notes come first; the error that ended the run is last
        why="the run under $memory failed (exit $rc_held): $(grep -v -e warning -e 'running the query again' "$tmp/held.err" | head -3)"
    elif ! cmp -s "$tmp/free.csv" "$tmp/held.csv"; then
        why="answers differ: $(diff "$tmp/free.csv" "$tmp/held.csv" | head -5)"
    fi
    if grep -q "does not fit in the memory budget: .* shuffled hash join" "$tmp/held.err"; then
        replanned=$((replanned + 1))
    fi
    if [ -z "$why" ]; then
        passed=$((passed + 1))
        printf '%-5s %7s MiB %7s MiB ok\n' "q$n" "$(rss "$tmp/free.rss")" "$(rss "$tmp/held.rss")"
    else
        failed=$((failed + 1))
        printf '%-5s %10s %10s FAIL %s\n' "q$n" - - "$why"
    fi
    rm -f "$tmp/free.csv" "$tmp/held.csv"
done
# The result streams to the output: all of lineitem, several times the
# budget as CSV, written under it (a result collected first would not fit).
scan=(run "$here/plans/scan_lineitem.txt" --warehouse "$tmp/data" --spark-version 3.5 --format csv
      --threads "$threads")
if ! "$bin" "${scan[@]}" --output "$tmp/free.csv" 2> "$tmp/free.err"; then
    failed=$((failed + 1)); echo "scan  FAIL unlimited: $(grep -v warning "$tmp/free.err" | head -3)"
elif ! /usr/bin/time -f %M -o "$tmp/held.rss" "$bin" "${scan[@]}" --memory "$memory" \
        --output "$tmp/held.csv" 2> "$tmp/held.err"; then
    failed=$((failed + 1)); echo "scan  FAIL under $memory: $(grep -v warning "$tmp/held.err" | head -3)"
elif ! cmp -s "$tmp/free.csv" "$tmp/held.csv"; then
    failed=$((failed + 1)); echo "scan  FAIL: the streamed result differs from the unlimited run's"
else
    passed=$((passed + 1))
    echo "scan  lineitem: $(( $(wc -l < "$tmp/held.csv") - 1 )) rows," \
        "$(( $(stat -c %s "$tmp/held.csv") / 1048576 )) MiB of CSV streamed, RSS $(rss "$tmp/held.rss") MiB"
fi
rm -f "$tmp/free.csv" "$tmp/held.csv"

# Broadcasts the rewrite must get right or refuse, never answer wrongly:
# read again through a ReusedExchange that renames its column (rewritten,
# the same rows in some order), and joined under an aggregate that relies on
# the stream side's partitioning (refused: the run fails naming why).
# (The second needs a budget its broadcast cannot fit: at SF 0.1, 8 MiB.)
for case in reused:rewritten:$memory distribution:refused:$([ "$sf" = 1 ] && echo "$memory" || echo 8m); do
    IFS=: read -r name want cmem <<< "$case"
    cplan=$here/plans/unbroadcast_$name.txt
    # one thread: the stages one after the other, so the broadcast is what fails
    crun=(run "$cplan" --warehouse "$tmp/data" --spark-version 3.5 --format csv --threads 1)
    "$bin" "${crun[@]}" --output "$tmp/free.csv" 2> "$tmp/free.err" || {
        failed=$((failed + 1)); echo "$name FAIL unlimited: $(grep -v warning "$tmp/free.err" | head -3)"
        continue; }
    "$bin" "${crun[@]}" --memory "$cmem" --output "$tmp/held.csv" 2> "$tmp/held.err"
    rc=$?
    if [ "$want" = rewritten ] && [ $rc -eq 0 ] &&
        grep -q "2 joins reading it run as shuffled hash joins" "$tmp/held.err" &&
        cmp -s <(sort "$tmp/free.csv") <(sort "$tmp/held.csv"); then
        passed=$((passed + 1)); echo "$name ok: rewritten, the same rows"
    elif [ "$want" = refused ] && [ $rc -eq 1 ] && [ ! -e "$tmp/held.csv" ] &&
        grep -q "cannot plan BroadcastExchange (6) as a shuffle: .* relies on how the join's rows are partitioned" "$tmp/held.err"; then
        passed=$((passed + 1)); echo "$name ok: refused"
    else
        failed=$((failed + 1))
        echo "$name FAIL (want $want; exit $rc): $(grep -v warning "$tmp/held.err" | head -3)"
    fi
    rm -f "$tmp/free.csv" "$tmp/held.csv"
done
echo "budget_tpch: SF $sf, --memory $memory, $threads threads: $passed passed, $failed failed;" \
    "$replanned queries planned a broadcast again as a shuffle"
if [ "$replanned" -eq 0 ] && [ -z "${BUDGET_ONLY:-}" ]; then
    echo "budget_tpch: no broadcast was over the budget: the budget is too loose to test it" >&2
    exit 1
fi
[ "$failed" -eq 0 ]
