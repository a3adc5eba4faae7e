#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Differential tests: the native engine against the reference row engine.
#
# On TPC-H SF 0.01 in Spark's schema (`ember gen tpch --schema spark`, the
# plans run as printed), every shared plan
# ($EMBER_SHARED/spark-plans/tpch/spark-*/qN.txt) runs
#   - natively in test mode (spark.ember.sql.test.enabled=true: the run fails
#     if any node falls back to the row engine),
#   - with spark.ember.sql.enabled=false (every node on the row engine),
# and on the Spark 3.5 plans only, also once per native exec class present in
# the plan with spark.ember.sql.exec.<Class>=false (mixed trees, transitions
# where the disabled nodes meet native ones): the report must list every node
# of the class as falling back, test mode with only that class allowed (and
# ReusedExchangeExec, which follows its exchange) must pass, so nothing else
# fell back, and --metrics must show those nodes on row operators ("row:").
# Every answer must be IDENTICAL to the native one: `ember run --format csv`
# output compared byte for byte, after sorting the rows when the plan's root
# does not order them (Sort or TakeOrderedAndProject at the root). Then: test
# mode's refusal, the task semaphore at one holder, and shuffle spill under
# spark.local.dir (same answer as without a budget).
#
# Scope and time: 132 plans x 2 runs + the 3.5 plans' per-class runs (166),
# 303 checks. The per-class disabling is limited to one version because it
# multiplies the runs by the classes in a plan (7.5 on average). The ASan+UBSan
# and 3-row-batch builds (told by the CMake cache beside EMBER_BIN) compare
# the engines on three lines only, 3.3 (promote_precision decimals), 3.5
# (also disabled per class) and 4.0 (ANSI on): the other lines print the
# same operators, and tpch_plans.sh runs them all against DuckDB; 237
# checks. Measured on the 2-core machine shared with other builds (load 5
# to 9): release 33 s (71 s beside a benchmark);
# ASan+UBSan 206 s with every line, 149 s with three; 3-row batches 268 s
# with every line, 244 s with three (load 9), where one line's two runs per
# plan take about 25 s and the 3.5 per-class runs about 90 s.
#
# Env: EMBER_BIN, EMBER_SHARED, EMBER_TEST_TMP, EMBER_SOURCE, EMBER_PLANS_ONLY
# (e.g. "spark-3.5:q1,q3" while debugging), EMBER_DIFF_ALL_LINES=1 (every line
# in every build).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=${EMBER_SOURCE:-$(cd "$here/../.." && pwd)}
shared=${EMBER_SHARED:-$src/../shared}
bin=${EMBER_BIN:-$src/build/release/ember}
[ -x "$bin" ] || { echo "differential: EMBER_BIN '$bin' is not an executable" >&2; exit 1; }
export ASAN_OPTIONS=${ASAN_OPTIONS:-exitcode=86:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-exitcode=87:halt_on_error=1:print_stacktrace=1}

base=${EMBER_TEST_TMP:-${TMPDIR:-/tmp}}
mkdir -p "$base"
tmp=$(mktemp -d "$base/differential.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok    $*"; }
fail() { failed=$((failed + 1)); echo "FAIL  $*"; }

data=$tmp/data
if ! "$bin" gen tpch --sf 0.01 --schema spark --out "$data" >"$tmp/gen.log" 2>&1; then
    echo "FAIL gen tpch: $(cat "$tmp/gen.log")"
    exit 1
fi

# The answer as compared: rows sorted unless the plan's root orders them.
canonical() { # csv plan
    if sed -n 2p "$2" | grep -q -E '^(\* )?(Sort|TakeOrderedAndProject) '; then
        cat "$1"
    else
        head -1 "$1"
        tail -n +2 "$1" | LC_ALL=C sort
    fi
}

# Runs the plan; on success the canonical answer is in $tmp/<tag>.csv.
run() { # tag plan conf...
    local tag=$1 plan=$2
    shift 2
    timeout 300 "$bin" run "$plan" --warehouse "$data" --format csv --output "$tmp/$tag.raw" \
        "$@" 2>"$tmp/$tag.err" && canonical "$tmp/$tag.raw" "$plan" >"$tmp/$tag.csv"
}

# Which lines of two answers differ, briefly.
why_differs() {
    diff "$1" "$2" | head -4 | tr '\n' ' ' | cut -c1-300
}

# The native exec classes in an overrides report (spark.ember.sql.explain=ALL),
# one per line, with how many nodes of each: "count Class".
native_classes() { # stderr of a run
    grep -oE '^ *\*Exec <[A-Za-z]+>' "$1" | sed -E 's/^ *\*Exec <(.*)>/\1/' | sort | uniq -c
}

# The name `--metrics` prints for the nodes of an exec class.
node_name() {
    case $1 in
    FileSourceScanExec) echo "Scan parquet" ;;
    ShuffleExchangeExec) echo "Exchange" ;;
    *) echo "${1%Exec}" ;;
    esac
}

# Fallback of one class: the answer, the report and the metrics.
#   - every node of the class is reported as falling back (!Exec <Class>);
#   - test mode allows only that class and the exchanges, so no other node
#     fell back (an exchange follows its neighbours: one between two row
#     nodes, or a ReusedExchange reading a row exchange, runs on rows too, as
#     spark-rapids keeps an exchange off the GPU when both sides are);
#   - --metrics shows every node of the class on a row operator ("row:") and
#     lists the transitions where the engines meet.
followers=ShuffleExchangeExec,BroadcastExchangeExec,ReusedExchangeExec
disable_class() { # version q plan count class
    local v=$1 q=$2 plan=$3 count=$4 c=$5 name got bad
    if ! run "off-$c" "$plan" --conf "spark.ember.sql.exec.$c=false" --metrics \
        --conf spark.ember.sql.explain=NOT_ON_ACCELERATOR --conf spark.ember.sql.test.enabled=true \
        --conf "spark.ember.sql.test.allowedNonNative=$c,$followers"; then
        fail "$v $q $c=false: $(tr '\n' ' ' <"$tmp/off-$c.err" | cut -c1-400)"
        return
    fi
    if ! cmp -s "$tmp/native.csv" "$tmp/off-$c.csv"; then
        fail "$v $q $c=false differs from native: $(why_differs "$tmp/native.csv" "$tmp/off-$c.csv")"
        return
    fi
    got=$(grep -c -E "^ *!Exec <$c> " "$tmp/off-$c.err")
    if [ "$got" -ne "$count" ]; then
        fail "$v $q $c=false: $got of $count nodes of the class reported as falling back"
        return
    fi
    name=$(node_name "$c")
    # metrics lines: "Name (id)   operator   tasks rows batches ms peakKiB"
    bad=$(grep -E "^$name \([0-9]+\) " "$tmp/off-$c.err" | grep -v -E "^$name \([0-9]+\) +row:")
    got=$(grep -c -E "^$name \([0-9]+\) +row:" "$tmp/off-$c.err")
    if [ -n "$bad" ] || [ "$got" -eq 0 ]; then
        fail "$v $q $c=false: --metrics does not show its nodes on the row engine: ${bad:-no $name line}"
        return
    fi
    # the rest stays native, so the engines meet somewhere
    if ! grep -q -E '^  (RowToColumnar|ColumnarToRow) +above ' "$tmp/off-$c.err"; then
        fail "$v $q $c=false: --metrics lists no transition"
        return
    fi
    ok "$v $q $c=false = native ($count nodes on the row engine, $got in --metrics," \
        "$(($(grep -c -E '^ *!Exec ' "$tmp/off-$c.err") - count)) exchanges followed)"
}

"$bin" conf --all >"$tmp/switches"
only=${EMBER_PLANS_ONLY:-}
# ASan+UBSan, or batches smaller than the default: the builds that are slow.
slow_build() {
    local cache
    cache=$(dirname "$bin")/CMakeCache.txt
    [ -f "$cache" ] || return 1
    grep -q -x 'EM_SANITIZE:BOOL=ON' "$cache" && return 0
    grep -q '^EM_BATCH_CAP:' "$cache" && ! grep -q -x 'EM_BATCH_CAP:STRING=2048' "$cache"
}
lines=all
if [ "${EMBER_DIFF_ALL_LINES:-0}" != 1 ] && slow_build; then
    lines=" spark-3.3 spark-3.5 spark-4.0 "
    echo "sanitizer or small-batch build: comparing the engines on${lines}only"
fi
for dir in "$shared"/spark-plans/tpch/spark-*/; do
    v=$(basename "$dir")
    if [ -n "$only" ] && [[ "$only" != *"$v"* ]]; then
        continue
    fi
    if [ "$lines" != all ] && [[ "$lines" != *" $v "* ]]; then
        continue
    fi
    for n in $(seq 1 22); do
        q=q$n
        if [ -n "$only" ] && [[ "$only" == *:* ]] && [[ ",${only#*:}," != *",$q,"* ]]; then
            continue
        fi
        plan=$dir$q.txt
        t0=$(date +%s%N)
        if ! run native "$plan" --conf spark.ember.sql.test.enabled=true \
            --conf spark.ember.sql.explain=ALL; then
            fail "$v $q native (test mode): $(tr '\n' ' ' <"$tmp/native.err" | cut -c1-400)"
            continue
        fi
        if ! run row "$plan" --conf spark.ember.sql.enabled=false; then
            fail "$v $q row engine: $(tr '\n' ' ' <"$tmp/row.err" | cut -c1-400)"
        elif ! cmp -s "$tmp/native.csv" "$tmp/row.csv"; then
            fail "$v $q row engine differs from native: $(why_differs "$tmp/native.csv" "$tmp/row.csv")"
        else
            ok "$v $q row engine = native ($(($(wc -l <"$tmp/native.csv") - 1)) rows," \
                "$((($(date +%s%N) - t0) / 1000000)) ms)"
        fi
        if [ "$v" = spark-3.5 ]; then
            # classes with a switch of their own (ReusedExchangeExec has none)
            native_classes "$tmp/native.err" | while read -r count c; do
                if grep -q -x "spark.ember.sql.exec.$c" "$tmp/switches"; then echo "$count $c"; fi
            done >"$tmp/classes"
            if [ ! -s "$tmp/classes" ]; then
                fail "$v $q: no native exec class in the overrides report"
            fi
            while read -r count c; do
                disable_class "$v" "$q" "$plan" "$count" "$c"
            done <"$tmp/classes"
        fi
    done
done

# Test mode refuses a plan with an unlisted node on the row engine, naming
# every such node, before anything runs (no output written).
plan3=$shared/spark-plans/tpch/spark-3.5/q3.txt
if [ -f "$plan3" ]; then
    "$bin" run "$plan3" --warehouse "$data" --format csv --output "$tmp/refused.csv" \
        --conf spark.ember.sql.exec.FilterExec=false --conf spark.rapids.sql.test.enabled=true \
        --conf spark.ember.sql.test.allowedNonNative=SortExec 2>"$tmp/refused.err"
    rc=$?
    if [ $rc -eq 1 ] && [ ! -e "$tmp/refused.csv" ] &&
        grep -q 'test mode' "$tmp/refused.err" &&
        [ "$(grep -o 'FilterExec)' "$tmp/refused.err" | wc -l)" -eq 3 ]; then
        ok "test mode: q3 with FilterExec disabled fails naming its 3 Filter nodes"
    else
        fail "test mode: q3 with FilterExec disabled: exit $rc: $(tr '\n' ' ' <"$tmp/refused.err" | cut -c1-300)"
    fi
fi

# The task semaphore: one task on the native side at a time (--metrics'
# "holders" column, the most tasks holding it at once per stage), same answer.
plan9=$shared/spark-plans/tpch/spark-3.5/q9.txt
if [ -f "$plan9" ] && run sem1 "$plan9" --threads 3 --conf spark.ember.sql.concurrentNativeTasks=1 \
    --metrics && run sem0 "$plan9" --threads 3 && cmp -s "$tmp/sem1.csv" "$tmp/sem0.csv" &&
    awk '/sem wait ms/ {on = 1; next} /^node/ {on = 0} on && $4 > 1 {bad = 1}
         on && $4 == 1 {seen = 1} END {exit bad || !seen}' "$tmp/sem1.err"; then
    ok "concurrentNativeTasks=1 with 3 threads: q9 unchanged, at most 1 holder per stage"
else
    fail "concurrentNativeTasks=1 with 3 threads: q9: $(tr '\n' ' ' <"$tmp/sem1.err" | cut -c1-300)"
fi

# spark.local.dir: the shuffle spill folder is made in its first directory.
# q18 under a 3 MiB budget on one thread spills its first shuffle (10 files
# at SF 0.01, in every build); with $TMPDIR pointing nowhere that run can
# only succeed with the folder under spark.local.dir, which is empty again
# afterwards, and without the key it fails naming $TMPDIR. A directory that
# is not there is refused before anything runs (usage error).
plan18=$shared/spark-plans/tpch/spark-3.5/q18.txt
local_dir=$tmp/local-dir
spill_run() { # tag conf...
    local tag=$1
    shift
    TMPDIR=/nonexistent timeout 300 "$bin" run "$plan18" --warehouse "$data" --format csv \
        --output "$tmp/$tag.raw" --threads 1 --memory 3m --metrics "$@" 2>"$tmp/$tag.err"
}
if [ -f "$plan18" ] && mkdir -p "$local_dir" && run ref18 "$plan18"; then
    if spill_run spill18 --conf "spark.local.dir=$local_dir, /nonexistent" &&
        canonical "$tmp/spill18.raw" "$plan18" >"$tmp/spill18.csv"; then
        files=$(awk '/sem wait ms/ {on = 1; next} /^node/ {on = 0} on {f += $6} END {print f + 0}' \
            "$tmp/spill18.err")
        if ! cmp -s "$tmp/ref18.csv" "$tmp/spill18.csv"; then
            fail "spark.local.dir: q18 spilled differs: $(why_differs "$tmp/ref18.csv" "$tmp/spill18.csv")"
        elif [ "$files" -eq 0 ] || [ -n "$(ls -A "$local_dir")" ]; then
            fail "spark.local.dir: q18 at 3 MiB: $files spill files, left in $local_dir: $(ls -A "$local_dir")"
        else
            ok "spark.local.dir: q18 at 3 MiB spilled $files shuffle files there, same answer, removed"
        fi
    else
        fail "spark.local.dir: q18 at 3 MiB: $(tr '\n' ' ' <"$tmp/spill18.err" | cut -c1-300)"
    fi
    if spill_run tmpdir18 || ! grep -q "spill folder in '/nonexistent'" "$tmp/tmpdir18.err"; then
        fail "spark.local.dir unset: q18 at 3 MiB did not fail on \$TMPDIR=/nonexistent:" \
            "$(tr '\n' ' ' <"$tmp/tmpdir18.err" | cut -c1-300)"
    else
        ok "spark.local.dir unset: q18's spill went to \$TMPDIR"
    fi
    spill_run nodir18 --conf "spark.local.dir=$tmp/not-there"
    rc=$?
    if [ $rc -eq 2 ] && [ ! -e "$tmp/nodir18.raw" ] &&
        grep -q "spark.local.dir: '$tmp/not-there' is not a writable directory" "$tmp/nodir18.err"; then
        ok "spark.local.dir: a missing directory is refused naming it"
    else
        fail "spark.local.dir missing: exit $rc: $(tr '\n' ' ' <"$tmp/nodir18.err" | cut -c1-300)"
    fi
else
    fail "spark.local.dir: q18 reference run: $(tr '\n' ' ' <"$tmp/ref18.err" 2>/dev/null | cut -c1-300)"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
