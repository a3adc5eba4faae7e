#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Stage-level resource profiles through the CLI (docs/resource-profiles.md).
#
# TPC-H q3 (Spark 3.5's plan) on SF 0.01, entirely on the row engine
# (spark.ember.sql.enabled=false): stage 2's row BroadcastHashJoins hold
# about 6.5 MiB of build rows in one task.
#   - Unconstrained (no executor key): runs, the reference answer.
#   - spark.executor.memory=450m, spark.executor.cores=20: the default
#     profile gives each task (450 - 300) MiB x 0.6 / 20 = 4.5 MiB of row
#     memory; the run fails (exit 1) with an out-of-memory error naming the
#     join, the task's row pool and the auto-adjust key, and writes nothing.
#   - The same with spark.ember.autoAdjustStageResource.enabled=true: the
#     falling-back stages get 9 MiB per task, 10 tasks at once; the answer is
#     byte for byte the unconstrained one, and --metrics shows the adjusted
#     stage's peak row memory between the two budgets.
# `ember explain` shows the same profiles and why, and on
# plans/profile_heavy_shuffle.txt (q1 with 2000 and 5000 shuffle partitions)
# the result stage reading 2000 x 5000 = 10,000,000 map statuses is
# adjusted as a heavy shuffle. About 1 s (debug build), 4 s under ASan.
#
# Env: EMBER_BIN, EMBER_SHARED, EMBER_TEST_TMP, EMBER_SOURCE.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=${EMBER_SOURCE:-$(cd "$here/../.." && pwd)}
shared=${EMBER_SHARED:-$src/../shared}
bin=${EMBER_BIN:-$src/build/release/ember}
[ -x "$bin" ] || { echo "profiles: EMBER_BIN '$bin' is not an executable" >&2; exit 1; }
plan=$shared/spark-plans/tpch/spark-3.5/q3.txt
[ -f "$plan" ] || { echo "profiles: $plan is missing (EMBER_SHARED)" >&2; exit 1; }
export ASAN_OPTIONS=${ASAN_OPTIONS:-exitcode=86:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-exitcode=87:halt_on_error=1:print_stacktrace=1}

base=${EMBER_TEST_TMP:-${TMPDIR:-/tmp}}
mkdir -p "$base"
tmp=$(mktemp -d "$base/profiles.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok    $*"; }
fail() { failed=$((failed + 1)); echo "FAIL  $*"; }
# check NAME FILE PATTERN: the file has a line matching the extended regex
check() {
    if grep -q -E -- "$3" "$2"; then ok "$1"; else fail "$1: no line matches '$3' in:"; cat "$2"; fi
}

if ! "$bin" gen tpch --sf 0.01 --schema spark --out "$tmp/data" >"$tmp/gen.log" 2>&1; then
    echo "FAIL gen tpch: $(cat "$tmp/gen.log")"
    exit 1
fi

# q3 on the row engine with its lineitem broadcast whole (runtime filters,
# which narrow it by the orders' keys, off): the memory stage 2 needs
rows=(--conf spark.ember.sql.enabled=false --conf spark.ember.sql.runtimeFilter.enabled=false)
tight=("${rows[@]}" --conf spark.executor.memory=450m --conf spark.executor.cores=20)
adjust=("${tight[@]}" --conf spark.ember.autoAdjustStageResource.enabled=true)
run() { # tag conf...
    local tag=$1
    shift
    "$bin" run "$plan" --spark-version 3.5 --warehouse "$tmp/data" --format csv \
        --output "$tmp/$tag.csv" "$@" 2>"$tmp/$tag.err"
}

# 1. unconstrained
if run free "${rows[@]}"; then
    [ "$(wc -l <"$tmp/free.csv")" -eq 11 ] && ok "unconstrained run: 10 rows" ||
        fail "unconstrained run: $(wc -l <"$tmp/free.csv") lines"
else
    fail "unconstrained run: $(cat "$tmp/free.err")"
fi

# 2. the default profile of the small executor: out of memory, nothing written
run tight "${tight[@]}"
rc=$?
[ $rc -eq 1 ] && ok "default profile: exit 1" || fail "default profile: exit $rc"
check "default profile: the join and the row pool named" "$tmp/tight.err" \
    "^ember run: stage 2 \(shuffle of Exchange \(19\)\), partition [0-9]+: .*BroadcastHashJoin \([0-9]+\) \[row\]: out of memory in pool 'stage 2 task [0-9]+ row pool'"
check "default profile: the stage's profile and the way out" "$tmp/tight.err" \
    "stage 2's resource profile \(the default\): 20 tasks at once, row memory 4.5 MiB and native memory unbounded per task \(the stage falls back to the row engine: spark.ember.autoAdjustStageResource.enabled=true"
[ ! -e "$tmp/tight.csv" ] && ok "default profile: no output file" || fail "default profile: output left"
! grep -q "ignoring --conf" "$tmp/tight.err" && ok "the executor keys are read, not ignored" ||
    fail "$(cat "$tmp/tight.err")"

# 3. auto-adjust: the same answer, the adjusted stage within its budget
if run adjusted "${adjust[@]}" --metrics; then
    cmp -s "$tmp/free.csv" "$tmp/adjusted.csv" && ok "auto-adjust: identical answer" ||
        fail "auto-adjust: answers differ: $(diff "$tmp/free.csv" "$tmp/adjusted.csv" | head -4)"
    check "auto-adjust: --metrics header" "$tmp/adjusted.err" \
        "^stage +profile +at once +row/task +peak row \(task\) +native/task +peak native \(task\)$"
    # stage 2: adjusted, at most 10 at once, 9 MiB per task, a peak above the default 4.5 MiB
    check "auto-adjust: stage 2 adjusted with its peak" "$tmp/adjusted.err" \
        "^2 +adjusted +[0-9]+/10 +9.0 MiB +([5-8]\.[0-9]) MiB \(0\) +unbounded"
else
    fail "auto-adjust: $(cat "$tmp/adjusted.err")"
fi

# 4. explain: each stage's profile and why
"$bin" explain "$plan" --spark-version 3.5 --warehouse "$tmp/data" "${adjust[@]}" >"$tmp/x.txt" 2>&1
check "explain: the default profile" "$tmp/x.txt" \
    "^  default: executor 450.0 MiB heap, unbounded off-heap, 20 cores / 1 per task: row pool 90.0 MiB, 20 tasks at once, per task row 4.5 MiB, native unbounded$"
check "explain: stage 2 adjusted" "$tmp/x.txt" \
    "^  stage 2  10 at once, per task row 9.0 MiB, native unbounded  ADJUSTED$"
check "explain: stage 2's shape and reason" "$tmp/x.txt" \
    "^           0 native, 9 row, 0 transitions, 0 map statuses: no native node \(9 on the row engine\); row memory per task 4.5 MiB -> 9.0 MiB \(x2\)"
"$bin" explain "$plan" --spark-version 3.5 "${tight[@]}" >"$tmp/x0.txt" 2>&1
check "explain: kept while auto-adjust is off" "$tmp/x0.txt" \
    "^           0 native, 9 row, 0 transitions, 0 map statuses: falls back; auto-adjust is off"
"$bin" explain "$plan" --spark-version 3.5 >"$tmp/x1.txt" 2>&1
check "explain: not enforced without executor keys" "$tmp/x1.txt" "^Resource profiles: not enforced"

# 5. a heavy shuffle: 2000 mappers x 5000 reducers read by the result stage
"$bin" explain "$here/plans/profile_heavy_shuffle.txt" --spark-version 3.5 \
    --conf spark.executor.memory=4g --conf spark.executor.cores=4 \
    --conf spark.ember.autoAdjustStageResource.enabled=true >"$tmp/h.txt" 2>&1
check "heavy shuffle: the result stage adjusted" "$tmp/h.txt" \
    "^  stage 2  2 at once, per task row 1.1 GiB, native unbounded  ADJUSTED$"
check "heavy shuffle: its reason" "$tmp/h.txt" \
    "^           1 native, 0 row, 0 transitions, 10000000 map statuses: heavy shuffle: 10000000 map statuses \(threshold 10000000\)"
check "heavy shuffle: scan mappers unknown without --warehouse" "$tmp/h.txt" \
    "^           2 native, 0 row, 0 transitions, 0\+\? map statuses"

echo "profiles: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
