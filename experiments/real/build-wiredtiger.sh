#!/usr/bin/env bash
# Build WiredTiger 11.3.1 (MongoDB's storage engine) from its public source, once per machine,
# and print the path of its `wtperf` benchmark (with --driver: of the pair's driver,
# experiments/real/wt-ycsb.c, compiled against it). The source is PyPI's `wiredtiger` source
# distribution (the full engine); the build goes to $WAFSIM_CACHE (default ~/.cache/wafsim) and
# later runs reuse it. About 3 minutes on 2 cores. Needs cmake, a C compiler and pip.
#
# ENABLE_STRICT=0: GCC 12 stops on an array-bounds warning otherwise. Python bindings off.
set -euo pipefail
VERSION=11.3.1
CACHE="${WAFSIM_CACHE:-$HOME/.cache/wafsim}"
DIR="$CACHE/wiredtiger-$VERSION"
WTPERF="$DIR/build/bench/wtperf/wtperf"
# The pair's driver, rebuilt when its source is newer than the binary.
driver() {
    local src out
    src="$(cd "$(dirname "$0")" && pwd)/wt-ycsb.c"; out="$DIR/build/wt-ycsb"
    if [ ! -x "$out" ] || [ "$src" -nt "$out" ]; then
        cc -O2 -Wall -I"$DIR/build/include" "$src" -L"$DIR/build" -lwiredtiger -Wl,-rpath,"$DIR/build" -o "$out" >&2
    fi
    echo "$out"
}
# The build records its completion: an interrupted one is started over.
if [ -x "$WTPERF" ] && [ -e "$DIR/.built" ]; then
    if [ "${1:-}" = --driver ]; then driver; else echo "$WTPERF"; fi
    exit 0
fi
for t in cmake cc make; do
    command -v "$t" >/dev/null || { echo "build-wiredtiger.sh: $t not found (apt-get install cmake build-essential)" >&2; exit 2; }
done
PIP=(python3 -m pip)
"${PIP[@]}" --version >/dev/null 2>&1 || { echo "build-wiredtiger.sh: pip not found (apt-get install python3-pip)" >&2; exit 2; }
mkdir -p "$CACHE"
rm -rf "$DIR"
tmp="$(mktemp -d "$CACHE/wt-download.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
echo "build-wiredtiger.sh: downloading the wiredtiger $VERSION source distribution from PyPI" >&2
"${PIP[@]}" download --quiet --no-deps --no-binary :all: "wiredtiger==$VERSION" -d "$tmp" >&2
tar xzf "$tmp/wiredtiger-$VERSION.tar.gz" -C "$CACHE"
# Built where it stays (the binary finds its library by the build's absolute path).
echo "build-wiredtiger.sh: building wtperf (cmake, Release) in $DIR" >&2
cmake -S "$DIR" -B "$DIR/build" -DCMAKE_BUILD_TYPE=Release -DENABLE_PYTHON=0 -DENABLE_STRICT=0 >"$DIR/cmake.log" 2>&1 || { tail -20 "$DIR/cmake.log" >&2; exit 1; }
make -C "$DIR/build" -j"$(nproc)" wtperf >"$DIR/make.log" 2>&1 || { tail -20 "$DIR/make.log" >&2; exit 1; }
touch "$DIR/.built"
if [ "${1:-}" = --driver ]; then driver; else echo "$WTPERF"; fi
