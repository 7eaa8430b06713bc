#!/usr/bin/env bash
# build.sh - builds the peer programs (the one place their compile commands live; compare.sh and
# run_baselines.sh both call it).
#
#   bash build.sh BIN_DIR LOG_DIR NAME...     NAME: ompi mpich gloo oneccl membw wake floor probe
#
# Each NAME gives BIN_DIR/<binary> (ompi: mpi_bench.openmpi, mpich: mpi_bench.mpich, gloo:
# gloo_bench, oneccl: oneccl_bench, membw: mem_bw_probe, wake: wake_latency_probe; and from the folder
# above, floor: socket_floor, probe: phase_probe), rebuilt only when its source,
# bench_common.h or mpi_sweep.h is newer, with its compiler output in LOG_DIR/build-NAME.log. A failed build
# leaves no binary behind. Exit status: the number of failed builds.
# oneccl builds with Open MPI's mpicxx against oneCCL in $ONECCL_ROOT (default BIN_DIR/oneccl,
# where compare.sh has install_oneccl.sh put it), with that lib folder as its RPATH.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
(($# >= 3)) || { echo "usage: build.sh BIN_DIR LOG_DIR NAME..." >&2; exit 64; }
BIN_DIR="$1" LOG_DIR="$2"
shift 2
mkdir -p "$BIN_DIR" "$LOG_DIR"
ONECCL_ROOT="$(realpath -m "${ONECCL_ROOT:-$BIN_DIR/oneccl}")"  # absolute: it becomes the RPATH

failed=0
for name in "$@"; do
  case "$name" in
    ompi) bin=mpi_bench.openmpi src=mpi_bench.cc cmd=(mpicxx.openmpi -O2 -std=c++17) libs=() ;;
    mpich) bin=mpi_bench.mpich src=mpi_bench.cc cmd=(mpicxx.mpich -O2 -std=c++17) libs=() ;;
    gloo) bin=gloo_bench src=gloo_bench.cc cmd=(g++ -O2 -std=c++17 -pthread) libs=(-lgloo) ;;
    oneccl) bin=oneccl_bench src=oneccl_bench.cc cmd=(mpicxx.openmpi -O2 -std=c++17 -I"$ONECCL_ROOT/include")
      libs=(-L"$ONECCL_ROOT/lib" -lccl -Wl,-rpath,"$ONECCL_ROOT/lib") ;;
    membw) bin=mem_bw_probe src=mem_bw_probe.cc cmd=(g++ -O3 -march=native -std=c++20 -pthread) libs=() ;;
    wake) bin=wake_latency_probe src=wake_latency_probe.cc cmd=(g++ -O2 -std=c++20) libs=() ;;
    floor) bin=socket_floor src=../socket_floor.cc cmd=(g++ -O2 -std=c++17 -pthread) libs=() ;;
    probe) bin=phase_probe src=../phase_probe.cc cmd=(g++ -O2 -std=c++17 -pthread) libs=() ;;
    *) echo "build.sh: unknown program '$name' (ompi, mpich, gloo, oneccl, membw, wake, floor, probe)" >&2; failed=$((failed + 1)); continue ;;
  esac
  out="$BIN_DIR/$bin" log="$LOG_DIR/build-$name.log"
  if [[ -x "$out" && "$out" -nt "$HERE/$src" && "$out" -nt "$HERE/bench_common.h" && "$out" -nt "$HERE/mpi_sweep.h" ]]; then
    echo "up to date: $out" >"$log"
    continue
  fi
  full=("${cmd[@]}" -o "$out" "$HERE/$src" "${libs[@]}")
  { echo "# cmd: ${full[*]}"; timeout 600 "${full[@]}"; } >"$log" 2>&1 </dev/null
  rc=$?
  if ((rc != 0)); then
    rm -f "$out"
    echo "build.sh: FAILED to build $name (rc=$rc), see $log" >&2
    failed=$((failed + 1))
  fi
done
exit "$failed"
