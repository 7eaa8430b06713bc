#!/usr/bin/env bash
# Quick start, tests (and what CI runs): install what is needed, build, run the whole suite; then
# the same suite built with AddressSanitizer + UndefinedBehaviorSanitizer; build the library with
# its CUDA executor, every kernel for the supported architectures and the GPU tests (which skip
# where there is no GPU); and
# fuzz the topology loader briefly; the PyTorch backend (python/ci.sh). SKIP_SANITIZERS=1, SKIP_FUZZ=1,
# SKIP_CUDA=1 or SKIP_TORCH=1 leave those stages out (for a quick local run).
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}

echo "== build and test (RelWithDebInfo)"
BUILD_DIR=build bash scripts/build.sh -DCOLLCOMM_CUDA=OFF
ctest --test-dir build --output-on-failure -j "$JOBS" --timeout 600

if [ "${SKIP_SANITIZERS:-0}" != 1 ]; then
  echo "== build and test with AddressSanitizer + UndefinedBehaviorSanitizer"
  BUILD_DIR=build-asan BUILD_TYPE=Debug bash scripts/build.sh -DCOLLCOMM_CUDA=OFF -DCOLLCOMM_SANITIZE=address,undefined
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j "$JOBS" --timeout 900
fi

if [ "${SKIP_FUZZ:-0}" != 1 ]; then
  echo "== fuzz the topology XML loader for ${FUZZ_SECONDS:-30} s (libFuzzer, clang)"
  cmake -S tests/fuzz -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang >/dev/null
  ninja -C build-fuzz
  mkdir -p build-fuzz/corpus
  build-fuzz/topo_xml_fuzz -max_total_time="${FUZZ_SECONDS:-30}" -print_final_stats=1 build-fuzz/corpus \
    tests/fixtures/topologies 2>&1 | tail -n 15
fi

if [ "${SKIP_CUDA:-0}" != 1 ]; then
  if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
    echo "== CUDA build: every kernel (sm_80, sm_90), the library with its CUDA executor, the GPU tests"
    export PATH="/usr/local/cuda/bin:$PATH"
    TARGETS="collcomm collcomm_gpu_tests all_reduce_perf" BUILD_DIR=build-cuda bash scripts/build.sh -DCOLLCOMM_CUDA=ON
    # Without a GPU they skip, saying why; on a machine with one they run (scripts/gpu_check.sh).
    ctest --test-dir build-cuda -L gpu --output-on-failure --timeout 900
  else
    echo "== CUDA kernels: SKIPPED (no nvcc on this machine)"
  fi
fi
if [ "${SKIP_TORCH:-0}" != 1 ]; then
  echo "== PyTorch backend: install torch==2.11.0 and collcomm_torch, run its tests (python/ci.sh)"
  bash python/ci.sh
fi
echo "== all stages passed"
