#!/usr/bin/env bash
# Builds collcomm with CUDA here (a machine without a GPU) and packs what scripts/gpu_check.sh runs
# into build-gpu-carry/ (ignored by git), so that a lent GPU machine spends its minutes on the check
# and none on the build (ours: 2 vCPUs, about 12 minutes from scratch; the GPU machine: minutes of
# its scarce time). On the GPU machine, with build-gpu-carry carried beside the working tree:
#
#   bash scripts/gpu_pack.sh                    # here
#   bash scripts/gpu_check_carried.sh           # there; logs in $OUT/gpu-logs, and summary.txt
#
# The binaries hold this checkout's absolute path (RPATH, ctest's files): gpu_check_carried.sh
# links that path to the checkout there. The tarball also carries libhwloc, which the lent machine
# may lack, and libcudart. The kernels are built in full (not CI's quick kernels, which a GPU would
# have to compile itself, in every process, before the first launch), in a folder of their own:
# about 25 minutes from scratch here. Environment: BUILD_DIR (build-gpu-pack), CUDA_ARCHS (90),
# JOBS (2).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD_DIR=${BUILD_DIR:-build-gpu-pack}
CARRY=build-gpu-carry
export PATH="/usr/local/cuda/bin:$PATH"
launchers=()
if command -v ccache >/dev/null 2>&1; then
  launchers=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
    -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCOLLCOMM_CUDA=ON \
  -DCOLLCOMM_CUDA_ARCHS="${CUDA_ARCHS:-90}" -DCOLLCOMM_CUDA_QUICK_KERNELS=OFF -DCOLLCOMM_CUDA_CHECK_ARCHS= \
  -DCOLLCOMM_BUILD_TESTS=ON "${launchers[@]}" >/dev/null
ninja -C "$BUILD_DIR" -j"${JOBS:-2}" collcomm collcomm_gpu_tests collcomm_mp_tests cc_mp_worker all_reduce_perf \
  all_gather_perf reduce_scatter_perf gpu_copy_bw

mkdir -p "$CARRY" "$BUILD_DIR/fallback-libs"
# No early exit in awk: ldconfig would die of SIGPIPE, and pipefail would end the script here.
hwloc=$(ldconfig -p | awk '/libhwloc\.so\.15 .*x86-64/ && !found { print $NF; found = 1 }')
[ -n "$hwloc" ] && cp -L "$hwloc" "$BUILD_DIR/fallback-libs/"
# The shared CUDA runtime the build links, for a machine with only the driver.
cp -L /usr/local/cuda/lib64/libcudart.so.13 "$BUILD_DIR/fallback-libs/"
echo "$ROOT" >"$BUILD_DIR/built-at"
files=("$BUILD_DIR"/libcollcomm.so* "$BUILD_DIR"/tools/launch/libcollcomm_launch.so* "$BUILD_DIR/tests/collcomm_gpu_tests"
  "$BUILD_DIR"/tests/mp/collcomm_mp_tests "$BUILD_DIR"/tests/mp/cc_mp_worker "$BUILD_DIR"/tests/*.cmake
  "$BUILD_DIR"/tests/mp/*.cmake "$BUILD_DIR/fallback-libs" "$BUILD_DIR/built-at")
for b in all_reduce_perf all_gather_perf reduce_scatter_perf gpu_copy_bw; do files+=("$BUILD_DIR/perf/$b"); done
mapfile -t testfiles < <(find "$BUILD_DIR" -name CTestTestfile.cmake)
# xz -9: a 64 MiB dictionary, so the kernels that the library and the test binaries each embed
# compress as one; what is carried may not pass 64 MiB.
XZ_OPT=-9 tar -cJf "$CARRY/gpu.tar.xz" "${files[@]}" "${testfiles[@]}"
size=$(stat -c %s "$CARRY/gpu.tar.xz")
if [ "$size" -gt $((60 << 20)) ]; then
  echo "gpu_pack: $CARRY/gpu.tar.xz is $((size >> 20)) MiB, more than the 60 that can be carried" >&2
  exit 1
fi
echo "packed $(du -h "$CARRY/gpu.tar.xz" | cut -f1) into $CARRY/gpu.tar.xz (built at $ROOT);" \
  "on the GPU machine: bash scripts/gpu_check_carried.sh, carrying $CARRY"
