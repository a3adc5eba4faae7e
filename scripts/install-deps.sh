#!/usr/bin/env bash
# Installs what Ember needs on a fresh Debian machine: the toolchain, the
# Debian-packaged libraries it links (codecs, JSON, cmocka), Java and Maven
# for the Spark plugin, and Node.js for the DuckDB/Polars peers used by the
# interop tests and benchmarks. tzdata is
# the zone database (/usr/share/zoneinfo) session time zones are read from.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
pkgs=(build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev
      libcmocka-dev libzstd-dev libsnappy-dev liblz4-dev zlib1g-dev libjansson-dev
      tzdata)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Java 17 and Maven build and test the Spark plugin (Maven fetches Spark
# itself from Maven Central).
command -v javac >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || missing+=(maven)
# Node 20 is on the image; Debian's nodejs is only a fallback when none is there.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
