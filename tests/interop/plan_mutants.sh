#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Damaged plans (issue 13): every shared Spark plan mutated line by line
# (delete, duplicate, swap with the next line, cut a list's last item), each
# mutant run through `ember explain` and `ember run` over SF 0.01 data. Every
# mutant must fail with a message (no signal, no sanitizer report) or give
# the unmutated plan's answer, and explain and run must reject the same
# texts; plan_mutants.mjs says exactly what is judged.
#
# The release build runs every 3rd mutant (MUTANTS_EVERY) of every Spark
# line's plans (MUTANTS_EVERY=1: all of them, some 67,000); the slower
# builds a deterministic sample (every MUTANTS_EVERY-th mutant, default 7)
# of spark-3.5's. Bad mutants are kept under $EMBER_TEST_TMP/plan_mutants.bad
# for the fuzz corpus and the report.
#
# Env: EMBER_BIN, EMBER_SHARED, EMBER_TEST_TMP, EMBER_SOURCE, MUTANTS_EVERY,
# MUTANTS_VERSIONS (e.g. "spark-3.5 spark-4.0").
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=${EMBER_SOURCE:-$(cd "$here/../.." && pwd)}
shared=${EMBER_SHARED:-$src/../shared}
bin=${EMBER_BIN:-$src/build/release/ember}
[ -x "$bin" ] || { echo "plan_mutants: EMBER_BIN '$bin' is not an executable" >&2; exit 1; }
export ASAN_OPTIONS=${ASAN_OPTIONS:-exitcode=86:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-exitcode=87:halt_on_error=1:print_stacktrace=1}

base=${EMBER_TEST_TMP:-${TMPDIR:-/tmp}}
mkdir -p "$base"
tmp=$(mktemp -d "$base/plan_mutants.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

case "$bin" in
*/tiny-batch/* | */asan/*)
    every=${MUTANTS_EVERY:-7}
    versions=${MUTANTS_VERSIONS:-spark-3.5}
    ;;
*)
    every=${MUTANTS_EVERY:-3}
    versions=${MUTANTS_VERSIONS:-$(cd "$shared/spark-plans/tpch" && ls -d spark-* | tr '\n' ' ')}
    ;;
esac

"$bin" gen tpch --sf 0.01 --schema spark --out "$tmp/data" > /dev/null ||
    { echo "plan_mutants: ember gen tpch failed" >&2; exit 1; }

bad="$base/plan_mutants.bad"
rm -rf "$bad"
status=0
for v in $versions; do
    line=${v#spark-}
    line=$(echo "$line" | cut -d. -f1,2) # spark-3.3.0 was printed by the 3.3 line
    echo "== $v (every ${every}th mutant)"
    node "$here/plan_mutants.mjs" --bin "$bin" --warehouse "$tmp/data" --out "$bad/$v" \
        --every "$every" --version "$line" "$shared/spark-plans/tpch/$v"/q*.txt || status=1
done
[ $status -eq 0 ] && rm -rf "$bad"
exit $status
