#!/usr/bin/env bash
# host_model.sh - measure the host cost model's constants on this machine (src/plan/host_model.cc).
#
#   bash perf/calibrate/host_model.sh            # prints the fitted table and each point's error
#                                                # (about 2 minutes on the quiet 2-vCPU VM)
#
# For each link class (threads: one process, 2 threads; processes: 2 processes pinned one per core;
# net: 2 processes with P2P and SHM disabled, so every byte goes through loopback sockets) it times
# sendrecv and AllReduce with each algorithm and protocol forced, two ranks, over sizes from 8 B to
# 16 MiB, and keeps the fastest of REPS repetitions (a shared machine's slow phases only ever add
# time). It also records each class's ring step payloads (Simple, LL) as the communicator's INFO
# line reports them, in steps.tsv: the model counts a slice's FIFO steps with them.
# fit_host_model.py fits the model's constants to those times and prints them as the rows of
# kHostConstants, and the model's error at every measured point.
#
# Environment: BUILD_DIR [$REPO/build] (must hold perf/ and tools/ccrun), REPS [3],
# SIZES [8,64,512,4K,32K,256K,1M,4M,16M,32M], CLASSES [threads,processes,net], OUT_DIR
# [/tmp/collcomm-calibrate].
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$REPO/build}"
REPS="${REPS:-3}"
SIZES="${SIZES:-8,64,512,4K,32K,256K,1M,4M,16M,32M}"
CLASSES="${CLASSES:-threads,processes,net}"
OUT_DIR="${OUT_DIR:-/tmp/collcomm-calibrate}"
for bin in perf/all_reduce_perf perf/sendrecv_perf tools/ccrun/ccrun; do
  [[ -x "$BUILD_DIR/$bin" ]] || { echo "host_model.sh: $BUILD_DIR/$bin is missing (build the perf tools and ccrun first)" >&2; exit 2; }
done
mkdir -p "$OUT_DIR/raw"

# series:binary:environment (LL only where it is ever planned or forced: small messages).
SERIES=("sendrecv:sendrecv:COLLCOMM_PROTO=Simple"
        "ring_simple:all_reduce:COLLCOMM_ALGO=Ring COLLCOMM_PROTO=Simple"
        "ring_ll:all_reduce:COLLCOMM_ALGO=Ring COLLCOMM_PROTO=LL"
        "oneshot:all_reduce:COLLCOMM_ALGO=OneShot COLLCOMM_PROTO=Simple"
        "direct:all_reduce:COLLCOMM_ALGO=Direct")
iters() {
  local s="$1" n="${1%[KMG]}"
  case "$s" in
    *M) (( n >= 4 )) && echo 30 || echo 200 ;;
    *K) (( n >= 256 )) && echo 500 || echo 5000 ;;
    *) echo 20000 ;;
  esac
}
launch() {  # class -> the command prefix that starts two ranks of it
  case "$1" in
    threads) echo "" ;;
    processes) echo "$BUILD_DIR/tools/ccrun/ccrun -n 2 --bind core" ;;
    net) echo "env COLLCOMM_P2P_DISABLE=1 COLLCOMM_SHM_DISABLE=1 $BUILD_DIR/tools/ccrun/ccrun -n 2 --bind core" ;;
  esac
}
TSV="$OUT_DIR/times.tsv"
: >"$TSV"
STEPS="$OUT_DIR/steps.tsv"
: >"$STEPS"
for cls in ${CLASSES//,/ }; do
  threads=1
  [[ "$cls" == threads ]] && threads=2
  # shellcheck disable=SC2046
  env COLLCOMM_DEBUG=INFO COLLCOMM_DEBUG_SUBSYS=INIT timeout 60 $(launch "$cls") "$BUILD_DIR/perf/all_reduce_perf" \
      -t "$threads" -b 8 -e 8 -n 1 -w 0 -c 0 2>&1 |
    sed -n 's/.*ring steps of \([0-9]*\) bytes (LL: \([0-9]*\)).*/\1\t\2/p' | head -1 | sed "s/^/$cls\t/" >>"$STEPS"
done
for rep in $(seq 1 "$REPS"); do
  for cls in ${CLASSES//,/ }; do
    threads=1
    [[ "$cls" == threads ]] && threads=2
    for entry in "${SERIES[@]}"; do
      IFS=: read -r series bin envs <<<"$entry"
      [[ "$series" == direct && "$cls" == net ]] && continue  # Direct moves no byte over a network
      for size in ${SIZES//,/ }; do
        n="${size%[KMG]}"
        [[ "$series" == ring_ll && "$size" == *M ]] && continue
        log="$OUT_DIR/raw/$cls.$series.$size.$rep.txt"
        # shellcheck disable=SC2046,SC2086
        if ! env $envs timeout 120 $(launch "$cls") "$BUILD_DIR/perf/${bin}_perf" -t "$threads" \
            -b "$size" -e "$size" -n "$(iters "$size")" -w 20 -c 0 >"$log" 2>&1; then
          echo "FAILED: $cls $series $size (see $log)" >&2
          continue
        fi
        sed 's/^\[0\] //' "$log" | awk -v c="$cls" -v s="$series" \
          '!/^#/ && NF >= 9 && $1 ~ /^[0-9]+$/ { print c "\t" s "\t" $1 "\t" $6; exit }' >>"$TSV"
      done
    done
  done
done
python3 "$HERE/fit_host_model.py" "$TSV" "$STEPS"
