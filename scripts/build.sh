#!/usr/bin/env bash
# Builds everything: the C library, the `ember` CLI and the JNI library
# (CMake, release preset), then the Spark plugin jar (Maven), which carries
# the JNI library, and the launcher's classpath (spark/plugin/target/classpath.txt).
#   scripts/build.sh [PRESET]    PRESET: release (default)
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-release}
bash scripts/install-deps.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"
(cd spark && mvn -q -B -Dmaven.test.skip=true -Dember.build.dir="$PWD/../build/$preset" package)
