#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Nothing left behind (issue 13): `ember run` and `ember gen tpch` killed with
# SIGKILL at many points of their work (planning, shuffle spill, operator
# spill, writing --output as CSV and as Parquet; generating and staging
# tables) must leave no temporary file and no half-written output; the
# scratch folders only the owner can remove (shuffle spill, the generator's
# staging) are removed by the next run once their owner is gone.
#
# Env: EMBER_BIN, EMBER_TEST_TMP, EMBER_SHARED, EMBER_SOURCE.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=${EMBER_SOURCE:-$(cd "$here/../.." && pwd)}
shared=${EMBER_SHARED:-$src/../shared}
bin=${EMBER_BIN:-$src/build/release/ember}
[ -x "$bin" ] || { echo "nothing_left_behind: EMBER_BIN '$bin' is not an executable" >&2; exit 1; }
base=${EMBER_TEST_TMP:-${TMPDIR:-/tmp}}
mkdir -p "$base"
tmp=$(mktemp -d "$base/nothing_left_behind.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

fail=0
bad() { echo "FAIL: $*"; fail=1; }

"$bin" gen tpch --sf 0.1 --schema spark --out "$tmp/data" --no-progress > /dev/null ||
    { echo "nothing_left_behind: ember gen tpch failed" >&2; exit 1; }
plan="$shared/spark-plans/tpch/spark-3.5/q18.txt"
scratch="$tmp/scratch"
out="$tmp/out"
mkdir -p "$scratch" "$out"
run() { # format output
    TMPDIR="$scratch" "$bin" run "$plan" --spark-version 3.5 --warehouse "$tmp/data" \
        --memory 16m --threads 2 --format "$1" --output "$2"
}

# the answer, and proof that the query spills at this budget
run csv "$tmp/want.csv" || { echo "nothing_left_behind: the reference run failed" >&2; exit 1; }
TMPDIR="$scratch" "$bin" run "$plan" --spark-version 3.5 --warehouse "$tmp/data" --memory 16m \
    --threads 2 --format csv --metrics 2> "$tmp/metrics.txt" > /dev/null
awk '$1 ~ /^[0-9]+$/ && NF == 8 && $5 > 0 { s = 1 } END { exit !s }' "$tmp/metrics.txt" ||
    bad "q18 under 16m does not spill its shuffle: the test would not reach the spill"

killed=0
for delay in 0.005 0.01 0.02 0.03 0.04 0.05 0.06 0.07 0.08 0.09 0.10 0.12 0.15 0.20; do
    for fmt in csv parquet; do
        (TMPDIR="$scratch" timeout --foreground -s KILL "$delay" "$bin" run "$plan" --spark-version 3.5 \
            --warehouse "$tmp/data" --memory 16m --threads 2 --format "$fmt" \
            --output "$out/r.$fmt" > /dev/null 2>&1) 2> /dev/null
        [ $? -eq 137 ] && killed=$((killed + 1))
    done
done
echo "ember run: $killed of 28 runs killed before their end"

# what a killed run may leave: a complete output, nothing else
for f in "$out"/* "$out"/.[!.]*; do
    [ -e "$f" ] || continue
    case "$(basename "$f")" in
    r.csv) cmp -s "$f" "$tmp/want.csv" || bad "$f is not the complete answer" ;;
    r.parquet) "$bin" parquet head "$f" > /dev/null 2>&1 || bad "$f is not a readable Parquet file" ;;
    *) bad "left next to the output: $(basename "$f")" ;;
    esac
done
leftover=$(find "$scratch" -name 'ember-spill-*' | head -3)
[ -z "$leftover" ] || bad "operator spill files left: $leftover"

# the next run removes the shuffle folders of the killed ones, and its own
run csv "$out/again.csv" || bad "a run after the killed ones failed"
leftover=$(find "$scratch" -mindepth 1 | head -3)
[ -z "$leftover" ] || bad "left in the scratch folder after a later run: $leftover"

# the generator: killed while staging, then run again into the same folder
gkilled=0
for delay in 0.01 0.02 0.03 0.05 0.08; do
    (timeout --foreground -s KILL "$delay" "$bin" gen tpch --sf 0.1 --schema spark --out "$tmp/gen" --force \
        --no-progress > /dev/null 2>&1) 2> /dev/null
    [ $? -eq 137 ] && gkilled=$((gkilled + 1))
    leftover=$(find "$tmp/gen" -name '*.tmp-*' 2> /dev/null | head -3)
    [ -z "$leftover" ] || bad "the generator left half-written files: $leftover"
done
echo "ember gen tpch: $gkilled of 5 runs killed before their end"
"$bin" gen tpch --sf 0.01 --schema spark --out "$tmp/gen" --force --no-progress > /dev/null ||
    bad "the generator failed after the killed runs"
leftover=$(find "$tmp/gen" -maxdepth 1 -name '.ember-tpch-*' | head -3)
[ -z "$leftover" ] || bad "staging folders left after a later run: $leftover"

# a run killed in a fresh folder leaves only its staging: the next run, without
# --force, finds the folder empty once it has removed that
(timeout --foreground -s KILL 0.02 "$bin" gen tpch --sf 0.1 --schema spark --out "$tmp/gen2" \
    --no-progress > /dev/null 2>&1) 2> /dev/null
if [ $? -eq 137 ] && [ -z "$(ls "$tmp/gen2" 2> /dev/null)" ]; then
    "$bin" gen tpch --sf 0.01 --schema spark --out "$tmp/gen2" --no-progress > /dev/null ||
        bad "the generator refused the folder a killed run left only its staging in"
fi

[ $fail -eq 0 ] && echo "nothing_left_behind: passed"
exit $fail
