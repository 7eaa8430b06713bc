#!/usr/bin/env bash
# The GPU check (issue 26): on a machine with an NVIDIA GPU, build collcomm with CUDA (or use a
# build already there), run the GPU tests, measure the device-to-device copy rate for reference and
# the 8-byte allreduce latency on 1, 2 and 8 ranks (against NCCL's 1-rank latency, through PyTorch,
# when it is installed), time AllReduce with each algorithm and protocol forced (the planner's
# inputs), probe polling and channel caps, sweep all_reduce/all_gather/reduce_scatter with 2, 4 and 8 thread
# ranks on one GPU (8 B to 1 GiB) in the time left, then print a summary. Meant to finish in under 8 minutes on one H100 with
# 16 cores: no perf run starts after DEADLINE.
#
#   bash scripts/gpu_check.sh
#
# Environment: BUILD_DIR (build-gpu), GPU_DEVICE (0), JOBS (16), FORCE_BUILD=1 (rebuild even when
# BUILD_DIR holds a working CUDA build), CUDA_ARCHS (90), TEST_TIMEOUT (seconds for the GPU
# tests, 240), SKIP_NCCL=1 (no NCCL latency through PyTorch), SKIP_TESTS=1, CHECK_LARGE=1 (check results at 256 MiB to 1 GiB too: slower, host-side),
# COLLCOMM_TIMEOUT (20: seconds a kernel waits on a peer), RANK_COUNTS ("2 4 8"), DEADLINE (seconds from the start after which no perf run starts, 470),
# OUT (the log folder; else ./gpu-check-logs), STEPS (the sections to run, of "tests mps torch stalls copy latency
# fused nccl algos probes sweeps"; all by default), STALL_REPEATS (4), STALL_TIMEOUT (10), STALL_ENV, STALL_ONLY, LIBXML2_INCLUDE_DIR (and LIBXML2_LIBRARY) where
# libxml2's headers are not installed. The lent H100 machine (Ubuntu 24.04, 2026-11-26) has
# libxml2.so.2 but no libxml2-dev: there cmake needs a copy of /usr/include/libxml2 (2.9), by
# default looked for in build-deps/libxml2 (ignored by git, so it can be carried), or a BUILD_DIR
# built on another machine at the same path (its binaries hold absolute paths): scripts/gpu_pack.sh
# makes one, scripts/gpu_check_carried.sh runs this check over it.
# Every step runs even when an earlier one failed; the exit status is 1 when any failed, 2 when
# there is no GPU to check.
set -u
set -o pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
BUILD_DIR=${BUILD_DIR:-build-gpu}
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$ROOT/$BUILD_DIR" ;; esac
LOG_DIR=${OUT:-./gpu-check-logs}
mkdir -p "$LOG_DIR" || exit 2
LOG_DIR=$(cd "$LOG_DIR" && pwd)
GPU_DEVICE=${GPU_DEVICE:-0}
JOBS=${JOBS:-16}
CUDA_ARCHS=${CUDA_ARCHS:-90}
TEST_TIMEOUT=${TEST_TIMEOUT:-240}  # 180 before the forced-tree 4- and 8-rank sweeps (the 8-rank ring sweep: 23 s on an H200)
RANK_COUNTS=${RANK_COUNTS:-2 4 8}
DEADLINE=${DEADLINE:-470}  # seconds from the start by which the last perf run must end
STALL_REPEATS=${STALL_REPEATS:-4}
STALL_TIMEOUT=${STALL_TIMEOUT:-10}  # seconds a stalled kernel waits in the stalls section
export PATH="/usr/local/cuda/bin:$PATH"
# Ranks sharing the GPU wait for each other's kernels, each on its own stream: with CUDA's default
# of 8 hardware queues two streams can share one and a kernel queue behind a spinning peer.
export CUDA_DEVICE_MAX_CONNECTIONS=${CUDA_DEVICE_MAX_CONNECTIONS:-32}
# A test or perf run whose kernel waits on a peer gives up after 20 s with the library's sentence
# (which rank, which channel, waiting for what) instead of spending its whole time limit.
export COLLCOMM_TIMEOUT=${COLLCOMM_TIMEOUT:-20}
# A build made on another machine may look for libcudart elsewhere (lib or lib64).
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# ... and libcollcomm where its RPATH (the build machine's folder) does not lead.
export LD_LIBRARY_PATH="$BUILD_DIR:$LD_LIBRARY_PATH"
START=$(date +%s)
# want <section>: whether STEPS names it (all of them when STEPS is unset).
want() { [[ " ${STEPS:-tests mps torch stalls copy latency fused nccl algos probes sweeps} " == *" $1 "* ]]; }
want tests || SKIP_TESTS=1
want nccl || SKIP_NCCL=1
FAILED=()

elapsed() { echo $(($(date +%s) - START)); }
step() { echo; echo "=== [$(elapsed) s] $*"; }
failed() {
  FAILED+=("$1")
  echo "FAILED: $1"
}

# ---- 0. Is there a GPU?
step "GPU (nvidia-smi)"
if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "gpu_check: no NVIDIA GPU here: nvidia-smi is not installed. This check needs a machine with an NVIDIA GPU." >&2
  exit 2
fi
if ! nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv \
  2>&1 | tee "$LOG_DIR/nvidia-smi.log"; then
  echo "gpu_check: no usable NVIDIA GPU: nvidia-smi failed (above). This check needs a machine with an NVIDIA GPU." >&2
  exit 2
fi
if ! nvidia-smi -L 2>/dev/null | grep -q "^GPU $GPU_DEVICE:"; then
  echo "gpu_check: GPU $GPU_DEVICE is not in nvidia-smi -L's list (set GPU_DEVICE)." >&2
  exit 2
fi
nvidia-smi >>"$LOG_DIR/nvidia-smi.log" 2>&1

# ---- 1. Build (or use the build that is there)
PERF="$BUILD_DIR/perf"
build_usable() {
  [ -e "$BUILD_DIR/libcollcomm.so" ] && [ -x "$PERF/gpu_copy_bw" ] && [ -x "$PERF/all_reduce_perf" ] &&
    [ -x "$PERF/all_gather_perf" ] && [ -x "$PERF/reduce_scatter_perf" ] &&
    "$PERF/all_reduce_perf" --version >/dev/null 2>&1
}
step "build ($BUILD_DIR)"
if [ "${FORCE_BUILD:-0}" != 1 ] && build_usable; then
  echo "using the CUDA build already in $BUILD_DIR (gpu_copy_bw is there and all_reduce_perf runs);" \
    "FORCE_BUILD=1 rebuilds"
elif [ "${NO_BUILD:-0}" = 1 ]; then
  # A carried build (gpu_check_carried.sh): building here would spend the machine's minutes. Say
  # why it does not run instead.
  echo "NO_BUILD=1, and the build in $BUILD_DIR does not run here:"
  "$PERF/all_reduce_perf" --version 2>&1 | head -n 5
  ldd "$PERF/all_reduce_perf" 2>&1 | grep -E "not found" | head -n 10
  failed "build: the carried build in $BUILD_DIR does not run here (above)"
  # Nothing after this could run: straight to the summary.
  STEPS=none SKIP_TESTS=1 SKIP_NCCL=1
else
  # A build folder configured for another source path (copied from elsewhere) cannot be reused.
  if [ -f "$BUILD_DIR/CMakeCache.txt" ] &&
    ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$ROOT" "$BUILD_DIR/CMakeCache.txt"; then
    echo "$BUILD_DIR was configured for another source folder: starting it afresh"
    rm -rf "$BUILD_DIR/CMakeCache.txt" "$BUILD_DIR/CMakeFiles"
  fi
  launchers=()
  if command -v ccache >/dev/null 2>&1; then
    launchers=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
      -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  fi
  # The lent H100 machine (Ubuntu 24.04) has libxml2.so.2 but not its headers (libxml2-dev):
  # LIBXML2_INCLUDE_DIR=<a copy of /usr/include/libxml2, version 2.9> builds against the library there
  # (build-deps/libxml2 when it is there and the system has no headers).
  deps=()
  if [ -z "${LIBXML2_INCLUDE_DIR:-}" ] && [ ! -e /usr/include/libxml2/libxml/xmlversion.h ] &&
    [ -e "$ROOT/build-deps/libxml2/libxml/xmlversion.h" ]; then
    LIBXML2_INCLUDE_DIR="$ROOT/build-deps/libxml2"
  fi
  if [ -n "${LIBXML2_INCLUDE_DIR:-}" ]; then
    xml_lib=${LIBXML2_LIBRARY:-$(ldconfig -p 2>/dev/null | awk '/libxml2\.so\.2 .*x86-64/ { print $NF; exit }')}
    deps=(-DLIBXML2_INCLUDE_DIR="$LIBXML2_INCLUDE_DIR" -DLIBXML2_LIBRARY="$xml_lib")
    echo "libxml2: headers $LIBXML2_INCLUDE_DIR, library $xml_lib"
  fi
  configure() {
    cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCOLLCOMM_CUDA=ON \
      -DCOLLCOMM_CUDA_ARCHS="$CUDA_ARCHS" "${launchers[@]}" "${deps[@]}" "$@" >>"$LOG_DIR/configure.log" 2>&1
  }
  configured=0
  : >"$LOG_DIR/configure.log"
  if configure -DCOLLCOMM_BUILD_TESTS=ON; then
    configured=1
  elif grep -q "GTest" "$LOG_DIR/configure.log"; then
    # No GoogleTest on this machine: the library and the perf binaries can still be measured.
    failed "configure: GoogleTest is not installed, so the GPU tests cannot be built (log: configure.log)"
    rm -rf "$BUILD_DIR/CMakeCache.txt" "$BUILD_DIR/CMakeFiles"
    configure -DCOLLCOMM_BUILD_TESTS=OFF && configured=1
  fi
  if [ "$configured" != 1 ]; then
    tail -n 30 "$LOG_DIR/configure.log"
    if grep -q "Could NOT find LibXml2" "$LOG_DIR/configure.log"; then
      echo "libxml2's headers are missing here: put a copy of /usr/include/libxml2 (2.9) in build-deps/libxml2" \
        "(or set LIBXML2_INCLUDE_DIR), or run with a BUILD_DIR built elsewhere at the same path"
    fi
    failed "configure with CUDA (log: configure.log)"
  else
    # Only the targets the check runs; a target this tree does not define is reported, not fatal.
    known=$(ninja -C "$BUILD_DIR" -t targets all 2>/dev/null | sed 's/:.*//')
    targets=()
    for t in collcomm collcomm_gpu_tests collcomm_mp_tests cc_mp_worker all_reduce_perf all_gather_perf reduce_scatter_perf \
      gpu_copy_bw; do
      if grep -qx "$t" <<<"$known"; then
        targets+=("$t")
      else
        failed "build: this tree defines no target $t"
      fi
    done
    echo "ninja -j$JOBS ${targets[*]}"
    if ! ninja -C "$BUILD_DIR" -j"$JOBS" "${targets[@]}" >"$LOG_DIR/build.log" 2>&1; then
      grep -E "error|FAILED" "$LOG_DIR/build.log" | head -n 30
      failed "build (log: build.log)"
    fi
    tail -n 1 "$LOG_DIR/build.log"
  fi
fi
echo "build step done at $(elapsed) s"

# ---- 2. GPU tests
step "GPU tests (ctest -L gpu, at most $TEST_TIMEOUT s)"
TEST_SUMMARY="not run"
ntests=0
if [ "${SKIP_TESTS:-0}" = 1 ]; then
  TEST_SUMMARY="skipped (SKIP_TESTS=1)"
else
  ntests=$(ctest --test-dir "$BUILD_DIR" -N -L gpu 2>/dev/null | sed -n 's/^Total Tests: *//p')
fi
# Within what is left of DEADLINE, whatever TEST_TIMEOUT says.
left=$((DEADLINE - $(elapsed)))
[ "$left" -lt "$TEST_TIMEOUT" ] && TEST_TIMEOUT=$((left > 10 ? left : 10))
if [ -n "$ntests" ] && [ "$ntests" != 0 ]; then
  timeout --kill-after=10 "$TEST_TIMEOUT" ctest --test-dir "$BUILD_DIR" -L gpu --output-on-failure --timeout 120 \
    2>&1 | tee "$LOG_DIR/gpu-tests.log"
  rc=$?
  TEST_SUMMARY=$(grep -E "tests passed" "$LOG_DIR/gpu-tests.log" | tail -n 1)
  [ "$rc" = 124 ] && TEST_SUMMARY="timed out after $TEST_TIMEOUT s (${TEST_SUMMARY:-no summary})"
  [ "$rc" != 0 ] && failed "GPU tests: ${TEST_SUMMARY:-ctest exit status $rc} (log: gpu-tests.log)"
elif [ "${SKIP_TESTS:-0}" = 1 ]; then
  echo "$TEST_SUMMARY"
elif [ -x "$BUILD_DIR/tests/collcomm_gpu_tests" ]; then
  # ctest knows no gpu tests here (a build copied from another path): run the binary itself, then
  # the four-rank sweep with AllReduce forced one-shot (ctest's GpuComm.OneShotForcedMatchesHost)
  # the four- and eight-rank sweeps with AllReduce forced onto the trees (ctest's
  # GpuComm.TreeForcedMatchesHost), LL forced on the rings and the trees (ctest's
  # GpuComm.LlForcedMatchesHost and GpuComm.TreeLlForcedMatchesHost), Direct forced on two and
  # four ranks (ctest's GpuComm.DirectForcedMatchesHost), and GPU ranks over NET (ctest's
  # GpuComm.NetMatchesHost).
  (
    timeout --kill-after=10 "$TEST_TIMEOUT" "$BUILD_DIR/tests/collcomm_gpu_tests"
    all=$?
    COLLCOMM_ALGO=OneShot timeout --kill-after=10 60 "$BUILD_DIR/tests/collcomm_gpu_tests" \
      --gtest_filter=GpuComm.FourRanksMatchHost
    oneShot=$?
    COLLCOMM_ALGO=Tree timeout --kill-after=10 120 "$BUILD_DIR/tests/collcomm_gpu_tests" \
      --gtest_filter='GpuComm.FourRanksMatchHost:GpuComm.EightRanksMatchHost'
    tree=$?
    COLLCOMM_PROTO=LL timeout --kill-after=10 120 "$BUILD_DIR/tests/collcomm_gpu_tests" \
      --gtest_filter='GpuComm.TwoRanksMatchHost:GpuComm.FourRanksMatchHost'
    ll=$?
    COLLCOMM_ALGO=Tree COLLCOMM_PROTO=LL timeout --kill-after=10 120 "$BUILD_DIR/tests/collcomm_gpu_tests" \
      --gtest_filter=GpuComm.FourRanksMatchHost
    treeLl=$?
    COLLCOMM_ALGO=Direct timeout --kill-after=10 120 "$BUILD_DIR/tests/collcomm_gpu_tests" \
      --gtest_filter='GpuComm.TwoRanksMatchHost:GpuComm.FourRanksMatchHost'
    direct=$?
    COLLCOMM_P2P_DISABLE=1 COLLCOMM_SOCKET_IFNAME=lo timeout --kill-after=10 120 "$BUILD_DIR/tests/collcomm_gpu_tests" \
      --gtest_filter='GpuComm.TwoRanksMatchHost:GpuComm.GraphCaptureReplays:GpuComm.AbortStopsAStuckKernel:GpuComm.StuckKernelTimesOutNamingThePeer:GpuP2p.TwoRanks'
    net=$?
    for rc in "$all" "$oneShot" "$tree" "$ll" "$treeLl" "$direct"; do [ "$rc" != 0 ] && exit "$rc"; done
    exit "$net"
  ) 2>&1 | tee "$LOG_DIR/gpu-tests.log"
  rc=$?
  TEST_SUMMARY=$(grep -E "^\[  (PASSED|FAILED)  \]" "$LOG_DIR/gpu-tests.log" | tr '\n' ' ')
  [ "$rc" = 124 ] && TEST_SUMMARY="timed out after $TEST_TIMEOUT s ($TEST_SUMMARY)"
  [ "$rc" != 0 ] && failed "GPU tests: ${TEST_SUMMARY:-exit status $rc} (log: gpu-tests.log)"
else
  TEST_SUMMARY="none: no test has the label gpu and there is no $BUILD_DIR/tests/collcomm_gpu_tests"
  failed "GPU tests: $TEST_SUMMARY"
fi

# start_mps <log>: an MPS control daemon of this check's own (pipe and log folders in a temporary
# folder), quit by stop_mps or by whatever ends the check (a signal at the run's limit included), so
# that no daemon outlives it on the machine. Fails when the daemon does not start.
start_mps() {
  mps_dir=$(mktemp -d)
  export CUDA_MPS_PIPE_DIRECTORY="$mps_dir/pipe" CUDA_MPS_LOG_DIRECTORY="$mps_dir/log"
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  if ! nvidia-cuda-mps-control -d >>"$1" 2>&1; then
    cp -r "$CUDA_MPS_LOG_DIRECTORY" "$LOG_DIR/mps-daemon-log" 2>/dev/null  # why it did not start
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
    return 1
  fi
  trap 'echo quit | nvidia-cuda-mps-control >/dev/null 2>&1' EXIT
  trap 'exit 143' TERM
  trap 'exit 130' INT
}
# stop_mps <log> <daemon log folder name>
stop_mps() {
  echo quit | nvidia-cuda-mps-control >>"$1" 2>&1
  trap - EXIT INT TERM
  cp -r "$CUDA_MPS_LOG_DIRECTORY" "$LOG_DIR/$2" 2>/dev/null
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
}
# section_limit <most>: seconds a section may take, within DEADLINE, at least 10.
section_limit() {
  local limit=$((DEADLINE - $(elapsed)))
  [ "$limit" -gt "$1" ] && limit=$1
  [ "$limit" -lt 10 ] && limit=10
  echo "$limit"
}

# ---- 2a. GPU ranks in two processes sharing the GPU, under an MPS control daemon of this check's
# own (its pipe and log folders in a temporary folder; quit at the end of the step), so that
# ProcessGpu.TwoProcessesOnOneGpuRunUnderMpsElseAreRefused runs its exact path (the GPU tests
# above ran its refusal, without MPS), and the other ProcessGpu tests run at all: FIFOs as cuMem
# memory handed over as a descriptor and through cudaIpcGetMemHandle, over NET on one host and
# between network namespaces (as root), a process that dies. The GPU's own settings (compute mode)
# are left as they are.
MPS_SUMMARY="not run"
if want mps; then
step "GPU ranks of two processes under MPS"
if ! command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
  MPS_SUMMARY="skipped: no nvidia-cuda-mps-control here"
elif [ ! -x "$BUILD_DIR/tests/mp/collcomm_mp_tests" ]; then
  MPS_SUMMARY="skipped: no $BUILD_DIR/tests/mp/collcomm_mp_tests"
else
  # What the network-namespace cases need (they skip, saying why, without them).
  { echo "ip: $(command -v ip || echo missing); uid $(id -u)"; } >"$LOG_DIR/mps.log"
  if start_mps "$LOG_DIR/mps.log"; then
    timeout --kill-after=10 "$(section_limit 240)" "$BUILD_DIR/tests/mp/collcomm_mp_tests" --gtest_filter='ProcessGpu.*' 2>&1 |
      tee -a "$LOG_DIR/mps.log"
    rc=$?
    MPS_SUMMARY=$(grep -E "^\[  (PASSED  |FAILED  |SKIPPED )\]" "$LOG_DIR/mps.log" | tr '\n' ' ')
    [ "$rc" != 0 ] && failed "GPU ranks under MPS: ${MPS_SUMMARY:-exit status $rc} (log: mps.log)"
    stop_mps "$LOG_DIR/mps.log" mps-daemon-log
  else
    MPS_SUMMARY="skipped: the MPS control daemon did not start (log: mps.log)"
  fi
fi
echo "$MPS_SUMMARY"
fi

# ---- 2b. The PyTorch backend on CUDA tensors (python/tests/test_cuda.py: every op bit for bit,
# streams and futures, DDP, a dead peer), one rank alone and two processes sharing the GPU under an
# MPS daemon. collcomm_torch is built here, over this build's library, for this machine's python3
# and torch (a module built elsewhere would be for another Python): about 40 s of CPU. It comes after
# the long sections' share of DEADLINE: run it alone (STEPS=torch) to give it its full 180 s.
TORCH_SUMMARY="not run"
if want torch; then
step "PyTorch backend on CUDA tensors"
pyinc=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['include'])" 2>/dev/null)
torch_build="$BUILD_DIR/python-build"
torch_pkg="$BUILD_DIR/python-pkg"
if ! python3 -c "import torch, pytest" >/dev/null 2>&1; then
  TORCH_SUMMARY="skipped: python3 has no torch or no pytest"
elif [ ! -f "$pyinc/Python.h" ]; then
  TORCH_SUMMARY="skipped: python3 has no Python.h (looked in $pyinc), so collcomm_torch cannot be built here"
elif ! { COLLCOMM_PREBUILT_DIR="$BUILD_DIR" cmake -S python -B "$torch_build" -G Ninja \
  -DPython3_EXECUTABLE="$(command -v python3)" && timeout 240 ninja -C "$torch_build" -j"$JOBS"; } \
  >"$LOG_DIR/torch.log" 2>&1; then
  TORCH_SUMMARY="collcomm_torch did not build (log: torch.log)"
  failed "PyTorch backend: $TORCH_SUMMARY"
elif ! (cd "$torch_build" && python3 -c "import torch, _C, sys; sys.exit(0 if _C.has_cuda() else 1)") \
  >>"$LOG_DIR/torch.log" 2>&1; then
  # Built without CUDA (no toolkit headers here, or another CUDA than torch's): every test would skip.
  TORCH_SUMMARY="collcomm_torch was built without CUDA here (log: torch.log, its cmake lines say why)"
  failed "PyTorch backend: $TORCH_SUMMARY"
else
  rm -rf "$torch_pkg" && mkdir -p "$torch_pkg/collcomm_torch"
  cp python/collcomm_torch/*.py "$torch_build"/_C*.so "$torch_pkg/collcomm_torch/"
  cp -L "$BUILD_DIR/libcollcomm.so.0" "$torch_pkg/collcomm_torch/"
  mps=0
  command -v nvidia-cuda-mps-control >/dev/null 2>&1 && start_mps "$LOG_DIR/torch.log" && mps=1
  PYTHONPATH="$torch_pkg${PYTHONPATH:+:$PYTHONPATH}" COLLCOMM_TORCH_TEST_MPS=$mps PYTHONUNBUFFERED=1 \
    timeout --kill-after=10 "$(section_limit 180)" python3 -m pytest -q -rs -p no:cacheprovider \
    python/tests/test_cuda.py 2>&1 | tee -a "$LOG_DIR/torch.log"
  rc=$?
  [ "$mps" = 1 ] && stop_mps "$LOG_DIR/torch.log" torch-mps-daemon-log
  TORCH_SUMMARY=$(grep -E "(passed|failed|skipped|error)" "$LOG_DIR/torch.log" | tail -n 1)
  [ "$mps" = 0 ] && TORCH_SUMMARY="$TORCH_SUMMARY (no MPS: two-rank cases skipped)"
  [ "$rc" != 0 ] && failed "PyTorch backend: ${TORCH_SUMMARY:-exit status $rc} (log: torch.log)"
fi
echo "$TORCH_SUMMARY"
fi


# ---- 3. Device-to-device copy reference
COPY_GBPS=""
if want copy; then
step "device-to-device copy rate (gpu_copy_bw, 256 MiB, median of 20)"
if timeout 60 "$PERF/gpu_copy_bw" --device "$GPU_DEVICE" --bytes $((256 << 20)) --reps 20 2>&1 |
  tee "$LOG_DIR/copy-bw.log"; then
  COPY_GBPS=$(sed -n 's/^copy_GBps //p' "$LOG_DIR/copy-bw.log")
else
  failed "gpu_copy_bw (log: copy-bw.log)"
fi
fi  # copy

# run_perf <log name> <seconds> <binary> <args...>: the table goes to the log and the screen. Runs
# share the time left before DEADLINE seconds from the start: a run that would start too late is
# skipped (and counted as failed), so the check ends in time whatever the library's speed.
run_perf() {
  local name=$1 limit=$2 bin=$3
  shift 3
  local left=$((DEADLINE - $(elapsed)))
  if [ "$left" -lt 15 ]; then
    failed "$bin $* not run: the check's $DEADLINE s were spent"
    return
  fi
  [ "$left" -lt "$limit" ] && limit=$left
  echo "--- $bin $*"
  timeout --kill-after=10 "$limit" "$PERF/$bin" "$@" >"$LOG_DIR/$name.log" 2>&1
  local rc=$?
  grep -vE "^#  Rank|^# *$" "$LOG_DIR/$name.log"
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    failed "$bin $* timed out after $limit s (log: $name.log)"
  elif [ "$rc" != 0 ]; then
    failed "$bin $* exit status $rc (log: $name.log)"
  fi
}

# ---- 4. Latency: 8-byte allreduce, back to back (-n 1000 then one synchronize) and one
# operation then a synchronize (-I 1: p50 of 200).
if want latency; then
step "8-byte allreduce latency: 1, 2 and 8 ranks on GPU $GPU_DEVICE"
for n in 1 2 8; do
  run_perf "latency-t$n" 60 all_reduce_perf --gpu "$GPU_DEVICE" -t "$n" -b 8 -e 8 -n 1000 -w 100 -c 1
  run_perf "latency-sync-t$n" 60 all_reduce_perf --gpu "$GPU_DEVICE" -t "$n" -b 8 -e 8 -n 200 -w 20 -c 1 -I 1
done
fi  # latency

# ---- 4b. The fused launch (COLLCOMM_GPU_FUSED_LAUNCH=1, issue 26; off by default until this
# passes): ranks sharing the GPU run each ring collective as one kernel. 8-byte latency on 4 and 8
# ranks (the target: 20 us on 8), then 8 ranks from 8 B to 128 MiB, checked, with one hardware
# queue, where separate launches stalled in 9 of 9 runs.
if want fused; then
step "fused launch: 8-byte latency on 4 and 8 ranks; 8 ranks with one hardware queue"
for n in 4 8; do
  COLLCOMM_GPU_FUSED_LAUNCH=1 run_perf "fused-latency-t$n" 60 all_reduce_perf --gpu "$GPU_DEVICE" -t "$n" -b 8 -e 8 \
    -n 1000 -w 100 -c 1
  COLLCOMM_GPU_FUSED_LAUNCH=1 run_perf "fused-latency-sync-t$n" 60 all_reduce_perf --gpu "$GPU_DEVICE" -t "$n" -b 8 \
    -e 8 -n 200 -w 20 -c 1 -I 1
done
COLLCOMM_GPU_FUSED_LAUNCH=1 CUDA_DEVICE_MAX_CONNECTIONS=1 run_perf "fused-1queue-t8" 90 all_reduce_perf \
  --gpu "$GPU_DEVICE" -t 8 -b 8 -e 128M -f 4 -n 5 -w 5 -c 1
fi  # fused

# ---- 4c. First-operation stalls (issue 26; after the fused launch: their repeats may take the time
# left): the commands whose first operations stopped at the
# kernels' deadline on an H200 (2026-11-27), shortened to the warm-up and two timed operations per
# size, each STALL_REPEATS times (STALL_ONLY: some of them, by name), with every launch traced (COLLCOMM_DEBUG=TRACE, subsystem COLL,
# and INIT for the stack reserved at init) and a deadline of STALL_TIMEOUT seconds. STALL_ENV (e.g.
# CUDA_MODULE_LOADING=EAGER) is added to every run, to try a cause. A run that stops at the deadline
# is counted and its log kept (stall-<name>-<i>.log); the summary prints the counts.
STALL_LINES=()
if want stalls; then
step "first-operation stalls: $STALL_REPEATS runs of each command, traced, $STALL_TIMEOUT s deadline${STALL_ENV:+ ($STALL_ENV)}"
stall_cmds=(
  "ar-t4-small|all_reduce_perf -t 4 -b 8 -e 128M -f 4 -n 2 -w 2 -c 0"
  "ar-t8-small|all_reduce_perf -t 8 -b 8 -e 128M -f 4 -n 2 -w 2 -c 0"
  "ag-t8-small|all_gather_perf -t 8 -b 8 -e 128M -f 4 -n 2 -w 2 -c 0"
  "ar-t8-large|all_reduce_perf -t 8 -b 256M -e 1G -f 2 -n 1 -w 1 -c 0"
  "ag-t4-large|all_gather_perf -t 4 -b 256M -e 1G -f 2 -n 1 -w 1 -c 0"
  "ar-t8-sync|all_reduce_perf -t 8 -b 8 -e 8 -n 20 -w 5 -c 0 -I 1"
  "ar-t4-ll|COLLCOMM_ALGO=Ring COLLCOMM_PROTO=LL all_reduce_perf -t 4 -b 8 -e 512K -f 4 -n 2 -w 10 -c 0"
)
for entry in "${stall_cmds[@]}"; do
  name=${entry%%|*}
  # STALL_ONLY (names, space-separated) picks some of the commands.
  [ -n "${STALL_ONLY:-}" ] && [[ " $STALL_ONLY " != *" $name "* ]] && continue
  read -r -a words <<<"${entry#*|}"
  assigns=() argv=()
  for w in "${words[@]}"; do
    if [ ${#argv[@]} = 0 ] && [[ "$w" == *=* ]]; then assigns+=("$w"); else argv+=("$w"); fi
  done
  stalled=0 ran=0 secs=()
  for i in $(seq 1 "$STALL_REPEATS"); do
    [ $((DEADLINE - $(elapsed))) -lt 25 ] && break
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086  # STALL_ENV is a list of VAR=value words
    env ${STALL_ENV:-} "${assigns[@]}" COLLCOMM_TIMEOUT="$STALL_TIMEOUT" COLLCOMM_DEBUG=TRACE COLLCOMM_DEBUG_SUBSYS=COLL,INIT \
      timeout --kill-after=5 30 "$PERF/${argv[0]}" --gpu "$GPU_DEVICE" "${argv[@]:1}" >"$LOG_DIR/stall-$name-$i.log" 2>&1
    rc=$?
    secs+=("$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')")
    ran=$((ran + 1))
    if [ "$rc" != 0 ]; then
      stalled=$((stalled + 1))
      grep -m 3 -E "timed out|left the operation|error" "$LOG_DIR/stall-$name-$i.log" | cut -c1-300
    else
      rm -f "$LOG_DIR/stall-$name-$i.log"
    fi
  done
  line="$name: $stalled of $ran runs failed (seconds: ${secs[*]})"
  echo "$line"
  STALL_LINES+=("$line")
  [ "$stalled" != 0 ] && failed "stalls: $line"
done
# The stack the executor reserved at init (one run's INFO line), where the time allows.
if [ $((DEADLINE - $(elapsed))) -ge 30 ]; then
  COLLCOMM_DEBUG=INFO COLLCOMM_DEBUG_SUBSYS=INIT timeout 30 "$PERF/all_reduce_perf" --gpu "$GPU_DEVICE" -t 2 -b 8 \
    -e 8 -n 1 -w 1 -c 0 2>&1 | grep -m 2 "stack" | tee "$LOG_DIR/stack.log"
fi
fi  # stalls

step "NCCL's 1-rank latency (8-byte allreduce): torch.distributed, and ncclAllReduce called directly"
NCCL_LINE=""
NCCL_DIRECT=""
if [ "${SKIP_NCCL:-0}" = 1 ]; then
  echo "skipped: SKIP_NCCL=1"
elif command -v python3 >/dev/null 2>&1 && python3 -c "import torch, torch.distributed" >/dev/null 2>&1; then
  GPU_DEVICE=$GPU_DEVICE timeout 180 python3 - >"$LOG_DIR/nccl-latency.log" 2>&1 <<'PY'
# Back to back: 1000 operations then one synchronize, per-op average, median of 5 runs.
# One then synchronize: p50 of 200. torch.distributed adds its Python and bookkeeping cost per
# call; the direct ncclAllReduce (ctypes, into the libnccl.so.2 that PyTorch loads) adds less.
import ctypes, glob, os, statistics, time
import torch
import torch.distributed as dist

dev = int(os.environ["GPU_DEVICE"])
torch.cuda.set_device(dev)


def measure(op, sync):
    for _ in range(200):
        op()
    sync()
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(1000):
            op()
        sync()
        runs.append((time.perf_counter() - t0) / 1000 * 1e6)
    each = []
    for _ in range(200):
        t0 = time.perf_counter()
        op()
        sync()
        each.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(runs), statistics.median(each), runs


dist.init_process_group("nccl", store=dist.HashStore(), world_size=1, rank=0,
                        device_id=torch.device("cuda", dev))
x = torch.ones(2, dtype=torch.float32, device="cuda")  # 8 bytes
b2b, each, runs = measure(lambda: dist.all_reduce(x), torch.cuda.synchronize)
v = torch.cuda.nccl.version()
print("torch", torch.__version__, "NCCL", ".".join(map(str, v)) if isinstance(v, tuple) else v,
      "on", torch.cuda.get_device_name(dev))
print("torch.distributed all_reduce: back to back %.2f us (runs: %s); one then synchronize p50 %.2f us"
      % (b2b, " ".join("%.2f" % t for t in runs), each))
print("nccl_1rank_us %.2f %.2f" % (b2b, each))
dist.destroy_process_group()

try:
    import nvidia
    libs = [p for d in nvidia.__path__ for p in glob.glob(os.path.join(d, "nccl", "lib", "libnccl.so*"))]
    nccl = ctypes.CDLL(libs[0] if libs else "libnccl.so.2")

    class UniqueId(ctypes.Structure):
        _fields_ = [("internal", ctypes.c_char * 128)]

    uid = UniqueId()
    comm = ctypes.c_void_p()
    nccl.ncclCommInitRank.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, UniqueId, ctypes.c_int]
    assert nccl.ncclGetUniqueId(ctypes.byref(uid)) == 0
    assert nccl.ncclCommInitRank(ctypes.byref(comm), 1, uid, 0) == 0
    y = torch.empty(2, dtype=torch.float32, device="cuda")
    stream = torch.cuda.Stream()
    ar = nccl.ncclAllReduce
    ar.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                   ctypes.c_void_p, ctypes.c_void_p]
    args = (x.data_ptr(), y.data_ptr(), 2, 7, 0, comm, stream.cuda_stream)  # ncclFloat32, ncclSum
    b2b, each, runs = measure(lambda: ar(*args), stream.synchronize)
    assert y.tolist() == [1.0, 1.0], y.tolist()
    print("ncclAllReduce via ctypes: back to back %.2f us (runs: %s); one then synchronize p50 %.2f us"
          % (b2b, " ".join("%.2f" % t for t in runs), each))
    print("nccl_direct_us %.2f %.2f" % (b2b, each))
    nccl.ncclCommDestroy(comm)
except Exception as e:  # the torch.distributed number above stands on its own
    print("ncclAllReduce via ctypes: not measured:", repr(e))
PY
  rc=$?
  cat "$LOG_DIR/nccl-latency.log"
  NCCL_LINE=$(sed -n 's/^nccl_1rank_us //p' "$LOG_DIR/nccl-latency.log")
  NCCL_DIRECT=$(sed -n 's/^nccl_direct_us //p' "$LOG_DIR/nccl-latency.log")
  [ "$rc" != 0 ] && failed "NCCL latency through PyTorch: exit status $rc (log: nccl-latency.log)"
else
  echo "skipped: python3 with torch is not available"
fi

# ---- 4b. The planner's inputs (issue 25): AllReduce 8 B to 16 MiB (LL: 512 KiB) by factor 4 with
# each algorithm and protocol forced, on 2, 4 and 8 ranks (one-shot on more than two ranks has one kernel for
# both protocols). Unchecked: the tests above check every forced choice against the host.
if want algos; then
step "all_reduce by algorithm and protocol, forced: 2, 4 and 8 ranks, 8 B to 16 MiB"
for n in 2 4 8; do
  choices="Ring/Simple Ring/LL OneShot/Simple OneShot/LL"
  [ "$n" -gt 2 ] && choices="Ring/Simple Ring/LL OneShot/Simple Tree/Simple Tree/LL"
  for c in $choices; do
    top=16M
    [ "${c#*/}" = LL ] && top=512K # LL is a small-message protocol: on 8 ranks 16 MiB took over 20 s
    COLLCOMM_ALGO=${c%/*} COLLCOMM_PROTO=${c#*/} run_perf "algo-t$n-${c%/*}-${c#*/}" 20 all_reduce_perf \
      --gpu "$GPU_DEVICE" -t "$n" -b 8 -e "$top" -f 4 -n 50 -w 10 -c 0
  done
done
fi  # algos

# ---- 5. Probes where ranks share the GPU, each against the default in this run, on the 2- and
# 4-rank 1 GiB and 8-rank 256 MiB allreduce: every thread polling a Simple step (the old default,
# COLLCOMM_GPU_POLLERS=0, whose large sizes fell apart from 4 ranks up), and at most 16, 8 and 4
# channels per rank (COLLCOMM_MIN_NCHANNELS=1 keeps the bound a bound: a GPU communicator given
# only a maximum connected one ring before 2026-11-27). Before the sweeps, which take what time
# is left.
probe() { # probe <name> <VAR=value>...: the three allreduce runs with those variables set
  local name=$1
  shift
  step "probe $name ($*): all_reduce 2 and 4 ranks at 1 GiB, 8 ranks at 256 MiB"
  local v k prev=()
  for v in "$@"; do
    k=${v%%=*}
    prev+=("$k=${!k-(unset)}")
    export "${v?}"
  done
  for n in 2 4; do
    run_perf "$name-t$n" 30 all_reduce_perf --gpu "$GPU_DEVICE" -t "$n" -b 1G -e 1G -n 3 -w 1 -c 0
  done
  run_perf "$name-t8" 30 all_reduce_perf --gpu "$GPU_DEVICE" -t 8 -b 256M -e 256M -n 3 -w 1 -c 0
  for v in "${prev[@]}"; do # back to what was set before
    if [ "${v#*=}" = "(unset)" ]; then unset "${v%%=*}"; else export "${v?}"; fi
  done
}
if want probes; then
probe default
probe allpollers COLLCOMM_GPU_POLLERS=0
for cap in 16 8 4; do probe "cap$cap" COLLCOMM_MIN_NCHANNELS=1 COLLCOMM_MAX_NCHANNELS=$cap; done
fi  # probes

# ---- 6. Sweeps: 8 B to 128 MiB by factor 4 (checked), then 256 MiB to 1 GiB by factor 2 with
# fewer iterations (checked with CHECK_LARGE=1: the host writes and compares each GiB).
large_check=0
[ "${CHECK_LARGE:-0}" = 1 ] && large_check=1
if want sweeps; then
for coll in all_reduce all_gather reduce_scatter; do
  for n in $RANK_COUNTS; do
    step "${coll}_perf, $n ranks on GPU $GPU_DEVICE"
    run_perf "${coll}-t$n-small" 60 "${coll}_perf" --gpu "$GPU_DEVICE" -t "$n" -b 8 -e 128M -f 4 -n 20 -w 5 -c 1
    run_perf "${coll}-t$n-large" 90 "${coll}_perf" --gpu "$GPU_DEVICE" -t "$n" -b 256M -e 1G -f 2 -n 5 -w 2 \
      -c "$large_check"
  done
done
fi  # sweeps

# ---- 7. Summary
# busbw <log> <bytes>: "out-of-place/in-place" busbw of the row of that size (columns 8 and 12).
busbw() { awk -v s="$2" '$1 == s && $2 ~ /^[0-9]+$/ { print $8 "/" $12; exit }' "$LOG_DIR/$1.log" 2>/dev/null; }
# usTime <log>: the out-of-place time of the 8-byte row, and the p50 column where -I 1 added it.
usTime() {
  awk '$1 == 8 && $2 ~ /^[0-9]+$/ { if (NF >= 17) print $6 " (p50 " $11 ")"; else print $6; exit }' \
    "$LOG_DIR/$1.log" 2>/dev/null
}
pct() { # pct <ranks> <busbw> -> ranks x busbw as % of the copy rate
  [ -n "$COPY_GBPS" ] && [ -n "$2" ] && awk -v n="$1" -v b="$2" -v c="$COPY_GBPS" \
    'BEGIN { if (b + 0 > 0 && c + 0 > 0) printf "%.0f%%", 100 * n * b / c; else print "-" }'
}
step "summary (logs: $LOG_DIR)"
{
  echo "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader -i "$GPU_DEVICE" 2>/dev/null)"
  echo "build: $BUILD_DIR"
  echo "GPU tests: $TEST_SUMMARY"
  echo "GPU ranks under MPS: $MPS_SUMMARY"
  echo "PyTorch backend on CUDA tensors: $TORCH_SUMMARY"
  for l in "${STALL_LINES[@]}"; do echo "stalls: $l"; done
  [ -s "$LOG_DIR/stack.log" ] && echo "stack: $(cat "$LOG_DIR/stack.log")"
  echo "device-to-device copy: ${COPY_GBPS:-?} GB/s copied (256 MiB)"
  echo
  echo "busbw GB/s (out-of-place/in-place); ranks x out-of-place busbw as % of the copy rate"
  printf "%-16s %5s %16s %6s %16s %6s\n" collective ranks "256 MiB" "%copy" "1 GiB" "%copy"
  for coll in all_reduce all_gather reduce_scatter; do
    for n in $RANK_COUNTS; do
      b256=$(busbw "${coll}-t$n-large" 268435456)
      b1g=$(busbw "${coll}-t$n-large" 1073741824)
      printf "%-16s %5s %16s %6s %16s %6s\n" "$coll" "$n" "${b256:--}" "$(pct "$n" "${b256%%/*}")" "${b1g:--}" \
        "$(pct "$n" "${b1g%%/*}")"
    done
  done
  echo
  echo "probes: all_reduce busbw GB/s (out-of-place/in-place), 2 and 4 ranks at 1 GiB, 8 ranks at 256 MiB"
  for name in default allpollers cap16 cap8 cap4; do
    printf "  %-9s %16s %16s %16s\n" "$name" "$(busbw "$name-t2" 1073741824)" "$(busbw "$name-t4" 1073741824)" \
      "$(busbw "$name-t8" 268435456)"
  done
  echo
  echo "all_reduce forced, out-of-place us per operation (-n 50, back to back)"
  printf "  %-18s %9s %9s %9s %9s %9s %9s\n" "ranks choice" 8 512 8K 128K 2M 8M
  for f in "$LOG_DIR"/algo-t*.log; do
    [ -e "$f" ] || continue
    name=$(basename "$f" .log)
    printf "  %-18s" "${name#algo-}"
    for b in 8 512 8192 131072 2097152 8388608; do
      printf " %9s" "$(awk -v s="$b" '$1 == s && $2 ~ /^[0-9]+$/ { print $6; exit }' "$f")"
    done
    echo
  done
  echo
  echo "8-byte allreduce, us per operation: back to back (-n 1000) / one op then synchronize (-I 1)"
  for n in 1 2 8; do
    b2b=$(usTime "latency-t$n")
    each=$(usTime "latency-sync-t$n")
    printf "  %d rank(s): %s / %s\n" "$n" "${b2b:--}" "${each:--}"
  done
  for n in 4 8; do
    b2b=$(usTime "fused-latency-t$n")
    each=$(usTime "fused-latency-sync-t$n")
    [ -n "$b2b$each" ] && printf "  %d ranks, fused launch: %s / %s\n" "$n" "${b2b:--}" "${each:--}"
  done
  if [ -n "$NCCL_LINE" ]; then
    read -r nb ne <<<"$NCCL_LINE"
    echo "  NCCL 1 rank, torch.distributed: $nb / $ne"
  else
    echo "  NCCL 1 rank: not measured"
  fi
  if [ -n "$NCCL_DIRECT" ]; then
    read -r nb ne <<<"$NCCL_DIRECT"
    echo "  NCCL 1 rank, ncclAllReduce called directly: $nb / $ne"
  fi
  echo
  echo "took $(elapsed) s"
  if [ ${#FAILED[@]} = 0 ]; then
    echo "RESULT: every step passed"
  else
    echo "RESULT: ${#FAILED[@]} step(s) failed:"
    printf '  - %s\n' "${FAILED[@]}"
  fi
} | tee "$LOG_DIR/summary.txt"
[ ${#FAILED[@]} = 0 ]
