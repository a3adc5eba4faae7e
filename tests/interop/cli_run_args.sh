#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `ember run` refuses bad arguments before anything runs (exit 2, a message
# naming the argument) and leaves what it refused untouched:
#   - --memory and spark.ember.memory.budget: only a positive size in
#     Spark's spelling (nan, 0x10, -5, 0, 1.5g, 64Mx refused);
#   - --output: a new path or a regular file; a FIFO, a symbolic link, a
#     folder or a device is refused (and not renamed over); `-` is stdout;
#   - spark.sql.session.timeZone: an unknown zone is refused when set, as
#     Spark refuses it, not when the first expression reads it.
# Plan: Spark 3.5's q6 (an empty LocalTableScan typed by SF 0.01's lineitem).
# Env: EMBER_BIN, EMBER_SHARED, EMBER_TEST_TMP, EMBER_SOURCE.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=${EMBER_SOURCE:-$(cd "$here/../.." && pwd)}
shared=${EMBER_SHARED:-$src/../shared}
bin=${EMBER_BIN:-$src/build/release/ember}
[ -x "$bin" ] || { echo "cli_run_args: EMBER_BIN '$bin' is not an executable" >&2; exit 1; }
plan=$shared/spark-plans/tpch/spark-3.5/q6.txt
tmp=${EMBER_TEST_TMP:-/tmp}/cli_run_args.$$
rm -rf "$tmp"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
fails=0
# the empty LocalTableScan takes its columns' types from the warehouse's lineitem
"$bin" gen tpch --sf 0.01 --schema spark --out "$tmp/wh" --threads 1 --no-progress >/dev/null ||
  { echo "cli_run_args: ember gen failed" >&2; exit 1; }

run() { "$bin" run "$plan" --warehouse "$tmp/wh" --spark-version 3.5 --format csv "$@"; }

# expect_refused WHAT TEXT ARGS...: exit 2 and TEXT in the message
expect_refused() {
  local what=$1 text=$2
  shift 2
  local out rc
  out=$(run "$@" 2>&1 >"$tmp/stdout")
  rc=$?
  if [ "$rc" != 2 ] || ! grep -qF -- "$text" <<<"$out"; then
    echo "FAIL $what: exit $rc, message: $(head -1 <<<"$out")" >&2
    fails=$((fails + 1))
  elif [ -s "$tmp/stdout" ]; then
    echo "FAIL $what: refused but wrote a result" >&2
    fails=$((fails + 1))
  fi
}

for m in nan 0x10 -5 0 1.5g 64Mx ''; do
  expect_refused "--memory '$m'" "--memory wants a positive size" --memory "$m"
  expect_refused "budget '$m'" "spark.ember.memory.budget" \
    --conf "spark.ember.memory.budget=$m"
done
out=$(run --memory 64m 2>&1) || { echo "FAIL --memory 64m: $out" >&2; fails=$((fails + 1)); }

mkfifo "$tmp/fifo"
echo target >"$tmp/target"
ln -s "$tmp/target" "$tmp/link"
mkdir "$tmp/folder"
expect_refused "--output FIFO" "not a regular file" --output "$tmp/fifo"
expect_refused "--output symlink" "symbolic link" --output "$tmp/link"
expect_refused "--output folder" "is a folder" --output "$tmp/folder"
expect_refused "--output /dev/null" "not a regular file" --output /dev/null
[ -p "$tmp/fifo" ] && [ -L "$tmp/link" ] && [ "$(cat "$tmp/target")" = target ] && [ -c /dev/null ] ||
  { echo "FAIL: a refused --output was changed" >&2; fails=$((fails + 1)); }
ls "$tmp" | grep -q 'tmp-' && { echo "FAIL: a temporary file was left: $(ls "$tmp")" >&2; fails=$((fails + 1)); }
if ! run --output - >"$tmp/dash" 2>/dev/null || [ "$(head -1 "$tmp/dash")" != revenue ]; then
  echo "FAIL: --output - does not write to stdout" >&2
  fails=$((fails + 1))
fi
echo old >"$tmp/result.csv"
if ! run --output "$tmp/result.csv" 2>/dev/null || [ "$(head -1 "$tmp/result.csv")" != revenue ]; then
  echo "FAIL: --output does not replace a regular file" >&2
  fails=$((fails + 1))
fi

expect_refused "time zone" "unknown time zone id 'Mars/Olympus'" \
  --conf spark.sql.session.timeZone=Mars/Olympus
out=$(run --conf spark.sql.session.timeZone=America/Los_Angeles 2>&1) ||
  { echo "FAIL: a known zone was refused: $out" >&2; fails=$((fails + 1)); }

if [ "$fails" != 0 ]; then
  echo "cli_run_args: $fails failures" >&2
  exit 1
fi
echo "cli_run_args: ok"
