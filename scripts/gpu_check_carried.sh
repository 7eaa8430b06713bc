#!/usr/bin/env bash
# The GPU check over a build packed elsewhere by scripts/gpu_pack.sh (build-gpu-carry/gpu.tar.xz,
# carried beside this working tree): unpacks it, links the path it was built at to this checkout
# (its binaries hold that absolute path), runs scripts/gpu_check.sh with its logs written straight
# into $OUT/gpu-logs (or ./gpu-check-logs/gpu-logs), so that a run cut off at its limit still leaves
# them, and copies the summary beside them. Never builds: a carried build that does not run says
# why. Arguments and environment as gpu_check.sh.
set -u

HERE=$(cd "$(dirname "$0")/.." && pwd)
cd "$HERE" || exit 2
tar -xJf build-gpu-carry/gpu.tar.xz || exit 2
BUILD_DIR=${BUILD_DIR:-build-gpu-pack}
BUILT_AT=$(cat "$BUILD_DIR/built-at" 2>/dev/null || echo "$HERE")
if [ "$BUILT_AT" != "$HERE" ]; then
  if [ -e "$BUILT_AT" ] && [ "$(cd "$BUILT_AT" && pwd -P)" != "$(pwd -P)" ]; then
    echo "gpu_check_carried: the build was made at $BUILT_AT, which is another folder here" >&2
    exit 2
  fi
  mkdir -p "$(dirname "$BUILT_AT")" && { [ -e "$BUILT_AT" ] || ln -s "$HERE" "$BUILT_AT"; } || exit 2
fi
# The lent machine may lack libhwloc.so.15 (the library's topology detection links it) and
# libcudart.so.13: the build machine's copies, after any LD_LIBRARY_PATH set (gpu_check.sh puts
# /usr/local/cuda's first).
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$BUILT_AT/$BUILD_DIR/fallback-libs"
OUT_DIR=${OUT:-$HERE/gpu-check-logs}
LOGS=$OUT_DIR/gpu-logs
mkdir -p "$LOGS" || exit 2
cd "$BUILT_AT" || exit 2
OUT=$LOGS BUILD_DIR="$BUILT_AT/$BUILD_DIR" NO_BUILD=1 bash scripts/gpu_check.sh "$@"
rc=$?
cp "$LOGS/summary.txt" "$OUT_DIR/" 2>/dev/null
exit $rc
