#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# An adaptive (AQE) final plan runs: Spark prints the stages it materialized
# (ShuffleQueryStage, BroadcastQueryStage) and how it read them
# (AQEShuffleRead coalesced); Ember runs the final plan again from the
# scans, treating those wrappers as the exchanges below them.
#
# plans/aqe_final_bhj.txt: nation joined with region by broadcast, summed by
# region. The TPC-H nation table is fixed by the spec (25 nations, 5 per
# region), so the answer is known: AFRICA 0+5+14+15+16 = 50, AMERICA
# 1+2+3+17+24 = 47, ASIA 8+9+12+18+21 = 68, EUROPE 6+7+19+22+23 = 77,
# MIDDLE EAST 4+10+11+13+20 = 58.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=${EMBER_SOURCE:-$(cd "$here/../.." && pwd)}
bin=${EMBER_BIN:-$src/build/release/ember}
[ -x "$bin" ] || { echo "aqe_final_plans: EMBER_BIN '$bin' is not an executable" >&2; exit 1; }
base=${EMBER_TEST_TMP:-${TMPDIR:-/tmp}}
mkdir -p "$base"
tmp=$(mktemp -d "$base/aqe_final.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0

"$bin" gen tpch --sf 0.01 --schema spark --out "$tmp/wh" --no-progress >/dev/null ||
    { echo "FAIL: gen tpch"; exit 1; }
for threads in 1 2; do
    if ! "$bin" run "$here/plans/aqe_final_bhj.txt" --warehouse "$tmp/wh" --spark-version 3.5 \
        --threads "$threads" --format csv --output "$tmp/out.csv" 2>"$tmp/err"; then
        echo "FAIL: aqe_final_bhj ($threads threads): $(cat "$tmp/err")"
        fail=1
        continue
    fi
    got=$( (head -1 "$tmp/out.csv"; tail -n +2 "$tmp/out.csv" | sort) | tr '\n' ' ')
    want="r_name,s AFRICA,50 AMERICA,47 ASIA,68 EUROPE,77 MIDDLE EAST,58 "
    if [ "$got" = "$want" ]; then
        echo "ok: aqe_final_bhj ($threads threads)"
    else
        echo "FAIL: aqe_final_bhj ($threads threads): got '$got', want '$want'"
        fail=1
    fi
done
exit $fail
