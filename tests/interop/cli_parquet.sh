#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `ember parquet schema|meta|stats|head` against DuckDB, and every kind of bad
# input. DuckDB writes small files (every type, nulls, awkward strings, several
# row groups, SNAPPY and ZSTD, a file without rows); cli_parquet.mjs checks each
# subcommand's output against DuckDB's own view of the same file
# (parquet_schema, parquet_metadata, parquet_file_metadata, SELECT ... LIMIT n).
# Bad input (missing, empty, directory, wrong magic, truncated or oversized
# footer, garbage in the footer or in a data page) must exit 1 with a message
# naming the file, print no partial report, and never crash or trip a sanitizer
# (when EMBER_BIN is an ASan build). Usage errors exit 2.
#
# Env: EMBER_BIN (the ember binary), EMBER_TEST_TMP, EMBER_SOURCE, PEERS_MODULES
# (set up with scripts/setup-peers.sh when unset). Ends with "N passed, N failed".
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=${EMBER_SOURCE:-$(cd "$here/../.." && pwd)}
bin=${EMBER_BIN:-$src/build/release/ember}
[ -x "$bin" ] || { echo "cli_parquet: EMBER_BIN '$bin' is not an executable" >&2; exit 1; }
PEERS_MODULES=${PEERS_MODULES:-$(bash "$src/scripts/setup-peers.sh")}
export PEERS_MODULES
# Sanitizer reports get their own exit codes so they can never pass for exit 1.
export ASAN_OPTIONS=${ASAN_OPTIONS:-exitcode=86:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-exitcode=87:halt_on_error=1:print_stacktrace=1}

base=${EMBER_TEST_TMP:-${TMPDIR:-/tmp}}
mkdir -p "$base"
tmp=$(mktemp -d "$base/cli_parquet.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
d=$tmp/files
mkdir -p "$d"

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() {
    failed=$((failed + 1))
    echo "FAIL $1"
    shift
    for line in "$@"; do printf '       %s\n' "$line"; done
}

# run ARGS...: runs ember with a time limit; stdout, stderr and status land in
# $tmp/out, $tmp/err and $rc.
rc=0
run() {
    set +e
    timeout 120 "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    set -e
}
sanitizer_report() { grep -qE 'Sanitizer|runtime error:' "$tmp/err"; }
err_text() { head -c 600 "$tmp/err" | tr '\n' ' '; }

# expect_ok NAME ARGS...: exit 0, nothing on stderr.
expect_ok() {
    local name=$1
    shift
    run "$@"
    if [ "$rc" -ne 0 ] || [ -s "$tmp/err" ]; then
        bad "$name" "exit $rc, stderr: $(err_text)"
        return 1
    fi
    return 0
}

# check NAME SUBCMD ARGS...: runs a cli_parquet.mjs check on $tmp/out.
check() {
    local name=$1
    shift
    local msg
    if msg=$(node "$here/cli_parquet.mjs" "$@" 2>&1); then
        ok "$name"
    else
        local IFS=$'\n'
        # shellcheck disable=SC2206
        local lines=($msg)
        bad "$name" "${lines[@]:0:12}"
    fi
}

# expect_fail NAME CODE WHO ARGS...: exit CODE, stderr names WHO (when not
# empty), no sanitizer report, nothing on stdout (except from head's csv and
# json forms, which stream).
expect_fail() {
    local name=$1 code=$2 who=$3
    shift 3
    run "$@"
    local why=()
    [ "$rc" -eq "$code" ] || why+=("exit $rc, expected $code")
    if [ -n "$who" ] && ! grep -qF -- "$who" "$tmp/err"; then why+=("stderr does not name '$who'"); fi
    sanitizer_report && why+=("sanitizer report")
    case " $* " in
        *" head "*--format*) ;; # csv and json stream; the table waits for success
        *) [ -s "$tmp/out" ] && why+=("partial output on stdout: $(head -c 200 "$tmp/out" | tr '\n' ' ')") ;;
    esac
    if [ ${#why[@]} -eq 0 ]; then ok "$name"; else bad "$name" "${why[@]}" "stderr: $(err_text)"; fi
}

echo "# writing test files with DuckDB"
node "$here/cli_parquet.mjs" make "$d"

# --- good files: each subcommand against DuckDB -----------------------------
for f in types multi multi_zstd empty_rows; do
    file=$d/$f.parquet
    for sub in schema meta stats; do
        if expect_ok "$sub $f" parquet "$sub" "$file"; then
            cp "$tmp/out" "$tmp/$sub.out"
            check "$sub $f matches DuckDB" "check-$sub" "$file" "$tmp/$sub.out"
        fi
    done
done

# Files Ember's own writer produced: TPC-H SF 0.01 from `ember gen tpch`.
if expect_ok "gen tpch --sf 0.01" gen tpch --sf 0.01 --schema standard --out "$d/tpch"; then
    for t in lineitem orders nation; do
        file=$(ls "$d/tpch/$t"/*.parquet | head -1)
        for sub in schema meta stats; do
            if expect_ok "$sub tpch $t" parquet "$sub" "$file"; then
                cp "$tmp/out" "$tmp/$sub.out"
                check "$sub tpch $t matches DuckDB" "check-$sub" "$file" "$tmp/$sub.out"
            fi
        done
        if expect_ok "head -n 3 tpch $t csv" parquet head -n 3 --format csv "$file"; then
            cp "$tmp/out" "$tmp/h.out"
            check "head -n 3 tpch $t = DuckDB LIMIT 3" check-csv "$file" 3 "$tmp/h.out"
        fi
    done
fi

if expect_ok "head types (table)" parquet head "$d/types.parquet"; then
    cp "$tmp/out" "$tmp/h.out"
    check "head types table matches DuckDB" check-table "$d/types.parquet" 10 "$tmp/h.out"
fi
if expect_ok "head -n 3 multi (table)" parquet head -n 3 "$d/multi.parquet"; then
    cp "$tmp/out" "$tmp/h.out"
    check "head -n 3 multi table matches DuckDB" check-table "$d/multi.parquet" 3 "$tmp/h.out"
fi
if expect_ok "head types --format csv" parquet head --format csv "$d/types.parquet"; then
    cp "$tmp/out" "$tmp/h.out"
    check "head types csv matches DuckDB" check-csv "$d/types.parquet" 10 "$tmp/h.out"
fi
if expect_ok "head types --format json" parquet head --format=json "$d/types.parquet"; then
    cp "$tmp/out" "$tmp/h.out"
    check "head types json matches DuckDB" check-json "$d/types.parquet" 10 "$tmp/h.out"
fi
if expect_ok "head -n 3 multi csv" parquet head -n 3 --format csv "$d/multi.parquet"; then
    cp "$tmp/out" "$tmp/h.out"
    check "head -n 3 multi csv = DuckDB LIMIT 3" check-csv "$d/multi.parquet" 3 "$tmp/h.out"
fi
if expect_ok "head -n 5000 multi_zstd csv" parquet head -n 5000 --format csv "$d/multi_zstd.parquet"; then
    cp "$tmp/out" "$tmp/h.out"
    check "head -n 5000 across row groups = DuckDB LIMIT 5000" check-csv "$d/multi_zstd.parquet" 5000 "$tmp/h.out"
fi
if expect_ok "head --columns price,name -n 7 json" parquet head --columns price,name -n 7 --format json "$d/multi.parquet"; then
    cp "$tmp/out" "$tmp/h.out"
    check "head --columns price,name json = DuckDB" check-json "$d/multi.parquet" 7 "$tmp/h.out" price,name
    node -e 'const l=require("fs").readFileSync(process.argv[1],"utf8").split("\n")[0]; process.exit(Object.keys(JSON.parse(l)).join()==="price,name"?0:1)' "$tmp/h.out" \
        && ok "head --columns keeps the order asked for" || bad "head --columns keeps the order asked for" "$(head -1 "$tmp/h.out")"
fi
if expect_ok "head --columns=name,k --format csv" parquet head --columns=name,k -n 4 --format csv "$d/multi.parquet"; then
    cp "$tmp/out" "$tmp/h.out"
    check "head --columns=name,k csv = DuckDB" check-csv "$d/multi.parquet" 4 "$tmp/h.out" name,k
fi
if expect_ok "head -n 0 csv" parquet head -n 0 --format csv "$d/multi.parquet"; then
    [ "$(cat "$tmp/out")" = "k,v,name,price,day" ] && ok "head -n 0 prints only the header" \
        || bad "head -n 0 prints only the header" "$(head -c 200 "$tmp/out")"
fi
if expect_ok "head empty_rows" parquet head "$d/empty_rows.parquet"; then
    grep -qx '(0 of 0 rows)' "$tmp/out" && ok "head of a file without rows says 0 of 0" \
        || bad "head of a file without rows says 0 of 0" "$(head -c 200 "$tmp/out")"
fi
expect_ok "version" version && ok "version"

# --- usage errors: exit 2 -------------------------------------------------------
expect_fail "usage: no subcommand" 2 "" parquet
expect_fail "usage: unknown subcommand" 2 "bogus" parquet bogus "$d/multi.parquet"
expect_fail "usage: missing FILE" 2 "FILE" parquet schema
expect_fail "usage: two files" 2 "" parquet meta "$d/multi.parquet" "$d/types.parquet"
expect_fail "usage: -n not a number" 2 "-n" parquet head -n ten "$d/multi.parquet"
expect_fail "usage: -n negative" 2 "-n" parquet head -n -1 "$d/multi.parquet"
expect_fail "usage: -n without value" 2 "-n" parquet head "$d/multi.parquet" -n
expect_fail "usage: bad --format" 2 "--format" parquet head --format xml "$d/multi.parquet"
expect_fail "usage: unknown option" 2 "--frobnicate" parquet stats --frobnicate "$d/multi.parquet"
expect_fail "usage: head option on schema" 2 "-n" parquet schema -n 3 "$d/multi.parquet"
expect_fail "unknown column in --columns" 1 "nosuch" parquet head --columns k,nosuch "$d/multi.parquet"

# --- bad input: exit 1, the file named, no partial report, no crash -------------
good=$d/multi.parquet
size=$(stat -c %s "$good")
flen=$(od -An -tu4 -j $((size - 8)) -N4 "$good" | tr -d ' ')
fstart=$((size - 8 - flen))
le32() { printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 & 255)) $((($1 >> 8) & 255)) $((($1 >> 16) & 255)) $((($1 >> 24) & 255)); }
garbage() { head -c "$2" /dev/zero | tr '\0' '\377' | dd of="$1" bs=1 seek="$3" conv=notrunc status=none; }

bad_files=()
add_bad() { bad_files+=("$1"); }

add_bad "$d/does-not-exist.parquet"
: >"$d/empty.parquet"; add_bad "$d/empty.parquet"
printf 'PAR1' >"$d/magic-only.parquet"; add_bad "$d/magic-only.parquet"
printf 'this is a text file, not a Parquet file at all\n' >"$d/text.parquet"; add_bad "$d/text.parquet"
mkdir -p "$d/a-directory.parquet"; add_bad "$d/a-directory.parquet"
# the file cut short: the trailing magic is gone
head -c $((size - 100)) "$good" >"$d/cut.parquet"; add_bad "$d/cut.parquet"
# wrong trailing magic
cp "$good" "$d/tail-magic.parquet"; printf 'PAR0' | dd of="$d/tail-magic.parquet" bs=1 seek=$((size - 4)) conv=notrunc status=none
add_bad "$d/tail-magic.parquet"
# wrong leading magic
cp "$good" "$d/head-magic.parquet"; printf 'RAP1' | dd of="$d/head-magic.parquet" bs=1 conv=notrunc status=none
add_bad "$d/head-magic.parquet"
# truncated footer: only the first half of the footer, its length field saying so
half=$((flen / 2))
{ head -c $((fstart + half)) "$good"; printf "$(le32 $half)"; printf 'PAR1'; } >"$d/footer-truncated.parquet"
add_bad "$d/footer-truncated.parquet"
# footer length larger than the file
cp "$good" "$d/footer-huge.parquet"; printf "$(le32 2147483647)" | dd of="$d/footer-huge.parquet" bs=1 seek=$((size - 8)) conv=notrunc status=none
add_bad "$d/footer-huge.parquet"
# footer length reaching exactly one byte before the start of the file
cp "$good" "$d/footer-past-start.parquet"; printf "$(le32 $((size - 8 + 1)))" | dd of="$d/footer-past-start.parquet" bs=1 seek=$((size - 8)) conv=notrunc status=none
add_bad "$d/footer-past-start.parquet"
# footer length zero
cp "$good" "$d/footer-zero.parquet"; printf "$(le32 0)" | dd of="$d/footer-zero.parquet" bs=1 seek=$((size - 8)) conv=notrunc status=none
add_bad "$d/footer-zero.parquet"
# garbage in the middle of the footer
cp "$good" "$d/footer-garbage.parquet"; garbage "$d/footer-garbage.parquet" 48 $((fstart + flen / 3))
add_bad "$d/footer-garbage.parquet"
# garbage in the middle of the file, where the column data is
cp "$good" "$d/middle-garbage.parquet"; garbage "$d/middle-garbage.parquet" 4096 $((fstart / 2))
# a data page header overwritten (first column chunk of the first row group)
cp "$good" "$d/page-garbage.parquet"; garbage "$d/page-garbage.parquet" 64 4
expect_fail "head --format csv page-garbage.parquet -> exit 1" 1 "$d/page-garbage.parquet" \
    parquet head --format csv "$d/page-garbage.parquet"
[ -s "$tmp/out" ] && bad "head: a corrupt first page prints no header" "$(head -c 200 "$tmp/out")" \
    || ok "head: a corrupt first page prints no header"

for f in "${bad_files[@]}"; do
    for sub in schema meta stats head; do
        expect_fail "$sub $(basename "$f") -> exit 1" 1 "$f" parquet "$sub" "$f"
    done
done
# Column data is only read by head: garbage there must fail head cleanly; the
# footer is intact, so the other subcommands may succeed but must not crash.
for f in "$d/middle-garbage.parquet" "$d/page-garbage.parquet"; do
    expect_fail "head $(basename "$f") -> exit 1" 1 "$f" parquet head -n 100000 "$f"
    expect_fail "head --format csv $(basename "$f") -> exit 1" 1 "$f" parquet head -n 100000 --format csv "$f"
    for sub in schema meta stats; do
        run parquet "$sub" "$f"
        if [ "$rc" -eq 0 ] || { [ "$rc" -eq 1 ] && grep -qF "$f" "$tmp/err"; }; then
            sanitizer_report && bad "$sub $(basename "$f") no crash" "$(err_text)" || ok "$sub $(basename "$f") no crash"
        else
            bad "$sub $(basename "$f") no crash" "exit $rc: $(err_text)"
        fi
    done
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
