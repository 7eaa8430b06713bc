#!/usr/bin/env bash
# Quick start, tests (and what CI runs): install what is needed, build (with the CUDA executor,
# every kernel for the supported architectures, where nvcc is found), run the whole suite (the GPU
# tests skip where there is no GPU); then the same suite built with AddressSanitizer +
# UndefinedBehaviorSanitizer (without CUDA); and
# fuzz the topology loader briefly; the PyTorch backend (python/ci.sh). The OFI tests also run over a
# newer libfabric than Debian's (scripts/test_ofi_newer.sh). SKIP_SANITIZERS=1, SKIP_FUZZ=1,
# SKIP_CUDA=1, SKIP_OFI_NEWER=1 or SKIP_TORCH=1 leave those stages out (for a quick local run).
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
# libfabric is installed (install_deps.sh): the OFI net tests must run, not skip (tests/support/ofi_provider.h).
export CC_TEST_REQUIRE_OFI=1
# Each stage's wall time, printed as it ends: CI must finish in 40 minutes, and this shows where they go.
stage_began=$SECONDS
stage_took() {
  echo "== ($1 took $((SECONDS - stage_began)) s; $SECONDS s in all)"
  stage_began=$SECONDS
}

# With nvcc (and SKIP_CUDA unset) the main build has the CUDA executor: every kernel compiled for
# sm_80 (PTX) and sm_90, the library linked with it, and the GPU tests in the suite (they skip without a
# GPU). One build for both keeps the library's sources compiled once; the sanitizer build below is
# the one without CUDA (cuda_absent.cc and the host-only refusals).
cuda=OFF
if [ "${SKIP_CUDA:-0}" != 1 ] && { command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; }; then
  cuda=ON
  export PATH="/usr/local/cuda/bin:$PATH"
fi
# CI_CUDA_ARCHS: the kernels built into the library, for sm_90 only; CI_CUDA_CHECK_ARCHS: every
# kernel compile-checked for sm_80 too, as unoptimised PTX (COLLCOMM_CUDA_CHECK_ARCHS; about 1.5
# minutes here, where an optimised sm_80 PTX of every kernel costs 5 or more that CI does not have).
# Where no GPU is visible the kernels are only compiled, never run: quick kernels
# (COLLCOMM_CUDA_QUICK_KERNELS: the optimiser turned down, most shards left as PTX without ptxas):
# a shard compiles in 13-18 s here instead of about 50 (docs/testing.md).
quick_kernels=ON
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then quick_kernels=OFF; fi
# Both builds keep line tables only (-g1): a failure's backtrace still names files and lines, and
# the compiles take a quarter less time than with full debug information.
echo "== build and test (RelWithDebInfo, CUDA executor: $cuda, quick kernels: $quick_kernels)"
BUILD_DIR=build bash scripts/build.sh -DCOLLCOMM_CUDA=$cuda -DCOLLCOMM_CUDA_ARCHS="${CI_CUDA_ARCHS:-90}" \
  -DCOLLCOMM_CUDA_CHECK_ARCHS="${CI_CUDA_CHECK_ARCHS:-80}" -DCOLLCOMM_CUDA_QUICK_KERNELS=$quick_kernels \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
ctest --test-dir build --output-on-failure -j "$JOBS" --timeout 600
stage_took "build and test"

if [ "${SKIP_OFI_NEWER:-0}" != 1 ]; then
  echo "== the OFI tests over libfabric 1.20 (its tcp provider's own endpoints; scripts/test_ofi_newer.sh)"
  bash scripts/test_ofi_newer.sh build
  stage_took "OFI over libfabric 1.20"
fi

if [ "${SKIP_SANITIZERS:-0}" != 1 ]; then
  echo "== build and test with AddressSanitizer + UndefinedBehaviorSanitizer"
  BUILD_DIR=build-asan BUILD_TYPE=Debug bash scripts/build.sh -DCOLLCOMM_CUDA=OFF -DCOLLCOMM_SANITIZE=address,undefined \
    -DCMAKE_CXX_FLAGS_DEBUG=-g1
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j "$JOBS" --timeout 900
  stage_took "sanitizers"
fi

if [ "${SKIP_FUZZ:-0}" != 1 ]; then
  echo "== fuzz the topology XML loader for ${FUZZ_SECONDS:-30} s (libFuzzer, clang)"
  cmake -S tests/fuzz -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang >/dev/null
  ninja -C build-fuzz
  mkdir -p build-fuzz/corpus
  build-fuzz/topo_xml_fuzz -max_total_time="${FUZZ_SECONDS:-30}" -print_final_stats=1 build-fuzz/corpus \
    tests/fixtures/topologies 2>&1 | tail -n 15
  stage_took "fuzz"
fi

if [ "${SKIP_TORCH:-0}" != 1 ]; then
  echo "== PyTorch backend: install torch==2.11.0 and collcomm_torch, run its tests (python/ci.sh)"
  # Over the library the suite above ran (with the CUDA executor where nvcc is found), not a third
  # build of it: it also shows that Python can load a CUDA build of libcollcomm late.
  COLLCOMM_PREBUILT_DIR="$PWD/build" bash python/ci.sh
  stage_took "PyTorch backend"
fi
echo "== all stages passed"
