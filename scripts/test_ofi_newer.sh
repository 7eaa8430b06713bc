#!/usr/bin/env bash
# CI stage: the OFI backend's tests again over a newer libfabric than Debian's 1.17. From 1.18 on,
# libfabric's tcp provider has reliable endpoints of its own, which the backend prefers to rxm over
# tcp (docs/net.md, "tcp's own endpoints"); 1.17 has none, so without this stage CI never runs
# that path. The libfabric is 1.20.1 as Intel MPI's runtime ships it on PyPI (impi-rt 2021.13.0,
# the newest wheel that carries libfabric), fetched once into build-ofi/ (pip's cache keeps it).
#
#   bash scripts/test_ofi_newer.sh [BUILD_DIR]     (default build; the suite must be built there)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
JOBS=${JOBS:-$(nproc)}
HERE=build-ofi
WHEEL_VERSION=2021.13.0
FAB="$HERE/impi-rt-$WHEEL_VERSION/libfabric"
if [ ! -f "$FAB/libfabric.so.1" ]; then
  [ -x "$HERE/venv/bin/pip" ] || python3 -m venv "$HERE/venv"
  rm -rf "$HERE/wheel" && mkdir -p "$HERE/wheel"
  "$HERE/venv/bin/pip" download -q --no-deps --only-binary=:all: impi-rt=="$WHEEL_VERSION" -d "$HERE/wheel"
  # Only the libfabric folder of the wheel (its library and provider plugins).
  python3 - "$HERE/wheel" "$FAB" "$WHEEL_VERSION" <<'EOF'
import glob, os, shutil, sys, zipfile
wheel, dest = glob.glob(os.path.join(sys.argv[1], "impi_rt-*.whl"))[0], sys.argv[2]
prefix = f"impi_rt-{sys.argv[3]}.data/data/lib/libfabric/"
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith(prefix) and not name.endswith("/"):
            out = os.path.join(dest, name[len(prefix):])
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with z.open(name) as src, open(out, "wb") as dst:
                shutil.copyfileobj(src, dst)
EOF
  rm -rf "$HERE/wheel"
fi
FAB="$(cd "$FAB" && pwd)"
export LD_LIBRARY_PATH="$FAB" FI_PROVIDER_PATH="$FAB/prov"

# The tests below must run over that libfabric, and by default over its tcp provider's own
# endpoints: one checked allreduce between two processes over OFI, its choice logged.
log=$(COLLCOMM_NET=ofi COLLCOMM_P2P_DISABLE=1 COLLCOMM_SHM_DISABLE=1 COLLCOMM_SOCKET_IFNAME=lo COLLCOMM_DEBUG=INFO \
  COLLCOMM_DEBUG_SUBSYS=NET timeout 120 "$BUILD_DIR/tools/ccrun/ccrun" -n 2 "$BUILD_DIR/perf/all_reduce_perf" \
  -b 8 -e 1M -f 32 -n 5 -w 1 2>&1) || {
  echo "$log"
  exit 1
}
grep -q "loaded libfabric 1.20" <<<"$log" || { echo "$log"; echo "libfabric 1.20 was not the one loaded"; exit 1; }
grep -q "device 0 is tcp " <<<"$log" || { echo "$log"; echo "the tcp provider's own endpoints were not chosen"; exit 1; }

ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" --timeout 600 -R '[Oo]fi'
