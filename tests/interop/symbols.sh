#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Ember's names have one prefix: every global symbol libember.a defines
# starts with em_ (a layer's own helpers too: em_rt_*, em_opu_*), so the
# library links into any program without claiming its names; and the JNI
# library exports only em_*, the JNI entry points (Java_*) and JNI_OnLoad.
# Both lists are printed when they are not empty.
#
# Env: EMBER_BIN (the libraries are found from its build folder), EMBER_SOURCE.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=${EMBER_SOURCE:-$(cd "$here/../.." && pwd)}
bin=${EMBER_BIN:-$src/build/release/ember}
build=$(dirname "$bin")
lib=$build/libember.a
[ -f "$lib" ] || { echo "FAIL: $lib not found"; exit 1; }
command -v nm >/dev/null || { echo "FAIL: nm not found"; exit 1; }

fail=0
# names with two leading underscores are the compiler's (a sanitizer's
# __odr_asan.* indicators), not Ember's
globals() { nm -g --defined-only "$lib" 2>/dev/null |
            awk 'NF == 3 && $2 ~ /^[TDBRVWCG]$/ && $3 !~ /^__/ {print $3}'; }
bad=$(globals | sort -u | grep -v '^em_' || true)
total=$(globals | wc -l)
if [ -n "$bad" ] || [ "$total" -lt 100 ]; then
    echo "FAIL libember.a: $total global symbols; without the em_ prefix:"
    echo "$bad" | sed 's/^/  /'
    fail=1
else
    echo "ok   libember.a: $total global symbols, all em_"
fi

jni=$build/jni/libember_jni.so
if [ -f "$jni" ]; then
    bad=$(nm -D --defined-only "$jni" | awk 'NF == 3 && $3 !~ /^__/ {print $3}' |
          grep -v -E '^(em_|Java_dev_ember_|JNI_OnLoad$|JNI_OnUnload$)' || true)
    n=$(nm -D --defined-only "$jni" | awk 'NF == 3' | wc -l)
    if [ -n "$bad" ]; then
        echo "FAIL libember_jni.so exports beyond em_*, Java_* and JNI_OnLoad:"
        echo "$bad" | sed 's/^/  /'
        fail=1
    else
        echo "ok   libember_jni.so: $n exported symbols"
    fi
fi
[ $fail -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $fail
