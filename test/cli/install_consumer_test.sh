#!/usr/bin/env bash
# `cmake --install` puts the libraries, headers, CMake package, topologies and scenarios under a
# prefix, and examples/cmake-consumer builds against it with find_package(gradsync): its
# program (a ring AllReduce of 1 GiB on dgx-h100.yaml through the library) prints the time
# `gradsync bench` prints for the same collective.
#
# Usage: bash test/cli/install_consumer_test.sh CMAKE BUILD_DIR PROJECT_DIR GRADSYNC
set -euo pipefail
cmake=$1 build=$2 src=$3 gradsync=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$cmake" --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log"
for f in lib/cmake/gradsync/gradsyncConfig.cmake include/gradsync/engine/simulation.hpp \
         share/gradsync/topologies/dgx-h100.yaml share/gradsync/scenarios/default.yaml bin/gradsync; do
  [[ -e $tmp/prefix/$f ]] || { echo "FAIL: $f was not installed"; exit 1; }
done
"$cmake" -S "$src/examples/cmake-consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  >"$tmp/configure.log" || { cat "$tmp/configure.log"; echo "FAIL: find_package(gradsync)"; exit 1; }
"$cmake" --build "$tmp/consumer" >"$tmp/build.log" || { tail -30 "$tmp/build.log"; echo "FAIL: consumer build"; exit 1; }
out=$("$tmp/consumer/ring_time" "$tmp/prefix/share/gradsync/topologies/dgx-h100.yaml")
echo "consumer: $out"
us=$(sed -n 's/.*: \([0-9.]*\) us,.*/\1/p' <<<"$out")
ref=$("$gradsync" bench "$src/topologies/dgx-h100.yaml" --algo ring --min 1GiB --max 1GiB --json |
      python3 -c 'import json,sys; print("%.1f" % json.load(sys.stdin)[0]["time_us"])')
echo "gradsync bench: $ref us"
[[ -n $us && $us == "$ref" ]] || { echo "FAIL: the installed library gives $us us, bench $ref us"; exit 1; }
echo "PASS: installed package, find_package(gradsync), same answer as the CLI"
