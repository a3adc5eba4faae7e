#!/usr/bin/env bash
# Runs every SQL test file of Spark's own suite (sql-tests/inputs of the
# spark-sql tests jar) with Ember off and on, through the JVM test
# SqlGoldenTest in its all-files mode, and writes docs/spark-sql-tests.md:
# per file the statements giving the golden answer each way, and each
# statement Ember answers differently, with the reason recorded in
# spark/plugin/src/test/resources/sql-golden/known-differences.tsv.
#   scripts/spark-sql-tests.sh [--resume] [--no-build] [FILE...]
# Each file's result is kept in spark/plugin/target/sql-golden-all as it finishes;
# a JVM that dies (a crash in native code) marks the file it was in, and the
# run goes on from the next one. --resume continues a run that was stopped
# instead of starting over. FILE... (paths under sql-tests/inputs/) runs
# those files only, into spark/plugin/target/sql-golden-some, and writes no doc.
# Takes about 20 minutes on 2 cores; the summary is in the folder's summary.tsv.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=1
resume=0
files=all
while [ $# -gt 0 ]; do
  case "$1" in
    --resume) resume=1; shift ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    -*) echo "spark-sql-tests: unknown option $1" >&2; exit 2 ;;
    *) if [ "$files" = all ]; then files=$1; else files=$files,$1; fi; shift ;;
  esac
done
if [ "$files" = all ]; then out=$root/spark/plugin/target/sql-golden-all; else out=$root/spark/plugin/target/sql-golden-some; fi
if [ "$resume" = 0 ]; then rm -rf "$out"; fi
mkdir -p "$out"
if [ "$build" = 1 ]; then
  cmake --preset release >/dev/null
  cmake --build --preset release
fi
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if ! git diff --quiet HEAD -- src include spark/common/src/main 2>/dev/null; then commit="$commit (with uncommitted changes)"; fi
doc=()
if [ "$files" = all ]; then doc=(-Dember.sqlgolden.doc="$root/docs/spark-sql-tests.md"); fi
# results are kept per file: an attempt after a dead JVM records the file it
# died in and goes on with the rest
for attempt in 1 2 3 4 5 6 7 8; do
  rm -f "$out/summary.tsv"
  (cd spark && mvn -B -q -Dtest=SqlGoldenTest -Dsurefire.failIfNoSpecifiedTests=false \
      -Dember.sqlgolden.files="$files" -Dember.sqlgolden.out="$out" -Dember.sqlgolden.resume=true \
      -Dember.sqlgolden.diagnose=true -Dember.sqlgolden.commit="$commit" "${doc[@]}" test) 2>&1 \
    | grep -E '^sql-golden|FAIL|ERROR\]|Tests run' || true
  if [ -f "$out/summary.tsv" ]; then break; fi
  echo "spark-sql-tests: the test JVM stopped early (attempt $attempt); going on" >&2
done
[ -f "$out/summary.tsv" ] || { echo "spark-sql-tests: no summary after $attempt attempts" >&2; exit 1; }
echo "spark-sql-tests: $out/summary.tsv${doc:+, docs/spark-sql-tests.md}"
