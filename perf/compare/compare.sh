#!/usr/bin/env bash
# compare.sh - collcomm's host collectives against Open MPI, MPICH, Gloo and oneCCL, back to back, in one
# session on one machine (the rule in docs/perf.md).
#
#   bash perf/compare/compare.sh                              # everything, 3 repetitions
#   CASES=shm OPS=allreduce REPS=1 bash perf/compare/compare.sh   # a quick look
#
# Steps: (1) build collcomm (RelWithDebInfo, CUDA off, Ninja) into $BUILD_DIR; (2) build the peer
# benchmarks of $PEERS_DIR (perf/compare/peers: peers/build.sh) into $BUILD_DIR/peers; (3) run
# collcomm and the peers on the same sizes, repetitions interleaved; (4) write a markdown table of
# medians to $OUT_DIR/compare.md (and stdout), raw outputs in $OUT_DIR/raw/. Exit status 1 when any
# build or run failed (each failed run shows as FAILED with its log in the table).
#
# Cases (all float32 sum; time = mean per op of the slowest rank, collcomm with -a 3 to match):
#   shm      2 processes pinned one per core over shared memory: collcomm (ccrun --bind core) vs
#            Open MPI vader (ob1), MPICH (-bind-to core) and oneCCL (Open MPI's mpirun
#            --bind-to core; OFI shm provider, progress in the calling thread); every op in $OPS
#   oversub  4 ranks on 2 cores, no binding: collcomm (ccrun -n 4) vs Open MPI vader
#            (--oversubscribe --bind-to none, yield mode); allreduce, sizes <= $OVERSUB_MAX
#   net      2 processes pinned, over loopback sockets: collcomm with P2P and SHM disabled (NET
#            transport) vs Open MPI TCP (btl tcp on lo) and Gloo TCP (ring); allreduce
#
# Environment (defaults in brackets):
#   BUILD_DIR [$REPO/build-compare]  PEERS_DIR [$HERE/peers]  OUT_DIR [/tmp/collcomm-compare]
#   SIZES [8,1K,64K,1M,16M,256M] (K/M/G = powers of 1024)   CASES [shm,oversub,net]
#   OPS [allreduce,allgather,broadcast,reduce_scatter] (also bcast, reducescatter)
#   PEERS [ompi,mpich,gloo,oneccl]   REPS [3]      OVERSUB_MAX [16M]
#   TARGET_S [0.1] seconds of timed loop per size (collcomm: per variant; peers: their -t)
#   MIN_ITERS [5] MAX_ITERS [200000] bounds on the timed iterations (collcomm -n; peers -m/-n)
#   T_RUN [300] timeout of each command, seconds     NET_IFNAME [lo] collcomm's COLLCOMM_SOCKET_IFNAME
#   NO_BUILD=1 skip step 1 (use what is in $BUILD_DIR)   NO_APT=1 never call apt-get
#   NO_PIP=1 never call pip (oneCCL comes from PyPI: peers/install_oneccl.sh, into $BUILD_DIR/peers/oneccl)
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$REPO/build-compare}"
PEERS_DIR="${PEERS_DIR:-$HERE/peers}"
OUT_DIR="${OUT_DIR:-/tmp/collcomm-compare}"
SIZES="${SIZES:-8,1K,64K,1M,16M,256M}"
CASES="${CASES:-shm,oversub,net}"
OPS="${OPS:-allreduce,allgather,broadcast,reduce_scatter}"
PEERS="${PEERS:-ompi,mpich,gloo,oneccl}"
REPS="${REPS:-3}"
OVERSUB_MAX="${OVERSUB_MAX:-16M}"
TARGET_S="${TARGET_S:-0.1}"
MIN_ITERS="${MIN_ITERS:-5}"
MAX_ITERS="${MAX_ITERS:-200000}"
T_RUN="${T_RUN:-300}"
NET_IFNAME="${NET_IFNAME:-lo}"

T_START=$(date +%s)
log() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "error: $*"; exit 1; }

# ------------------------------------------------------------------ arguments
to_bytes() {  # 1K -> 1024; prints nothing for a malformed size
  local s="$1" n mult=1
  [[ "$s" =~ ^([0-9]+)([kKmMgG]?)$ ]] || return 1
  n="${BASH_REMATCH[1]}"
  case "${BASH_REMATCH[2]}" in
    k|K) mult=1024 ;; m|M) mult=$((1024 * 1024)) ;; g|G) mult=$((1024 * 1024 * 1024)) ;;
  esac
  echo $((n * mult))
}
split_list() { tr ',' ' ' <<<"$1"; }

SIZE_BYTES=()
for s in $(split_list "$SIZES"); do
  b=$(to_bytes "$s") || die "bad size '$s' in SIZES"
  ((b > 0)) || die "size must be > 0: '$s'"
  SIZE_BYTES+=("$b")
done
((${#SIZE_BYTES[@]})) || die "SIZES is empty"
OVERSUB_MAX_B=$(to_bytes "$OVERSUB_MAX") || die "bad OVERSUB_MAX '$OVERSUB_MAX'"
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || die "REPS must be a positive integer"

declare -A CC_BIN=([allreduce]=all_reduce_perf [allgather]=all_gather_perf
                   [broadcast]=broadcast_perf [reduce_scatter]=reduce_scatter_perf)
declare -A MPI_OP=([allreduce]=allreduce [allgather]=allgather [broadcast]=bcast
                   [reduce_scatter]=reducescatter)
OP_LIST=()
for o in $(split_list "$OPS"); do
  case "$o" in
    allreduce|all_reduce) o=allreduce ;;
    allgather|all_gather) o=allgather ;;
    broadcast|bcast) o=broadcast ;;
    reduce_scatter|reducescatter) o=reduce_scatter ;;
    *) die "unknown op '$o' in OPS (allreduce, allgather, broadcast, reduce_scatter)" ;;
  esac
  OP_LIST+=("$o")
done
CASE_LIST=()
for c in $(split_list "$CASES"); do
  case "$c" in shm|oversub|net) CASE_LIST+=("$c") ;; *) die "unknown case '$c' in CASES (shm, oversub, net)" ;; esac
done
declare -A WANT_PEER=()
for p in $(split_list "$PEERS"); do
  case "$p" in ompi|mpich|gloo|oneccl) WANT_PEER[$p]=1 ;; *) die "unknown peer '$p' in PEERS (ompi, mpich, gloo, oneccl)" ;; esac
done
has_op() { local x; for x in "${OP_LIST[@]}"; do [[ "$x" == "$1" ]] && return 0; done; return 1; }
has_case() { local x; for x in "${CASE_LIST[@]}"; do [[ "$x" == "$1" ]] && return 0; done; return 1; }

RAW="$OUT_DIR/raw"
mkdir -p "$OUT_DIR" || die "cannot create $OUT_DIR"
rm -rf "$RAW"
rm -f "$OUT_DIR/compare.md" "$OUT_DIR/runs.tsv" "$OUT_DIR/medians.tsv" "$OUT_DIR/commands.txt" "$OUT_DIR/notes.txt"
mkdir -p "$RAW"
MANIFEST="$OUT_DIR/runs.tsv"
printf 'case\top\trunner\trep\tnranks\tsizes\trc\tlog\n' >"$MANIFEST"
: >"$OUT_DIR/notes.txt"
note() { echo "$*" >>"$OUT_DIR/notes.txt"; log "note: $*"; }
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
build_failures=0

# ------------------------------------------------------------ 1. build collcomm
NEED_OPS=()   # the ops some selected case runs (shm: all of OPS; oversub and net: allreduce)
if has_case shm; then NEED_OPS=("${OP_LIST[@]}"); elif has_op allreduce; then NEED_OPS=(allreduce); fi
CC_TARGETS=(ccrun)
for o in "${NEED_OPS[@]}"; do CC_TARGETS+=("${CC_BIN[$o]}"); done
if [[ "${NO_BUILD:-0}" != 1 ]]; then
  log "building collcomm into $BUILD_DIR (log: $RAW/build-collcomm.log)"
  (
    set -ex
    cd "$REPO"
    if [[ "${NO_APT:-0}" != 1 ]]; then bash scripts/install_deps.sh; fi
    timeout 600 cmake -S "$REPO" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCOLLCOMM_CUDA=OFF -DCOLLCOMM_BUILD_TESTS=OFF
    timeout 3600 ninja -C "$BUILD_DIR" "${CC_TARGETS[@]}"
  ) >"$RAW/build-collcomm.log" 2>&1 </dev/null
  rc=$?
  ((rc == 0)) || { tail -30 "$RAW/build-collcomm.log" >&2; die "collcomm build failed (rc=$rc), see $RAW/build-collcomm.log"; }
fi
CCRUN="$BUILD_DIR/tools/ccrun/ccrun"
[[ -x "$CCRUN" ]] || die "$CCRUN not found (build failed, or NO_BUILD=1 with an empty BUILD_DIR)"
for o in "${NEED_OPS[@]}"; do
  [[ -x "$BUILD_DIR/perf/${CC_BIN[$o]}" ]] || die "$BUILD_DIR/perf/${CC_BIN[$o]} not found"
done

# ------------------------------------------------------------ 2. build the peers
PEERS_DIR="$(cd "$PEERS_DIR" 2>/dev/null && pwd)" || die "PEERS_DIR not found"
[[ -f "$PEERS_DIR/build.sh" ]] || die "$PEERS_DIR/build.sh not found"
PB="$BUILD_DIR/peers"
mkdir -p "$PB"
need_mpich=0; need_gloo=0; need_oneccl=0
has_case shm && [[ -n "${WANT_PEER[mpich]:-}" ]] && need_mpich=1
has_case shm && [[ -n "${WANT_PEER[oneccl]:-}" ]] && need_oneccl=1
has_case net && has_op allreduce && [[ -n "${WANT_PEER[gloo]:-}" ]] && need_gloo=1
# Packages are checked by name: the compiler wrappers can be present without the headers
# (openmpi-bin without libopenmpi-dev).
need_pkgs=(openmpi-bin libopenmpi-dev)
((need_mpich)) && need_pkgs+=(mpich libmpich-dev)
((need_gloo)) && need_pkgs+=(libgloo-dev)
((need_oneccl)) && need_pkgs+=(libfabric-dev)  # oneCCL's OFI transport dlopens libfabric.so
bash "$PEERS_DIR/install_packages.sh" "$RAW/apt.log" "${need_pkgs[@]}" || log "their runs will fail"
ONECCL_ROOT="$PB/oneccl"
if ((need_oneccl)); then
  bash "$PEERS_DIR/install_oneccl.sh" "$ONECCL_ROOT" "$RAW/pip-oneccl.log" || log "the oneccl runs will fail"
fi

declare -A PEER_BIN=([ompi]="$PB/mpi_bench.openmpi" [mpich]="$PB/mpi_bench.mpich" [gloo]="$PB/gloo_bench"
                     [oneccl]="$PB/oneccl_bench")
declare -A PEER_BUILD_LOG=()
PEER_NAMES=(ompi)
((need_mpich)) && PEER_NAMES+=(mpich)
((need_gloo)) && PEER_NAMES+=(gloo)
((need_oneccl)) && PEER_NAMES+=(oneccl)
for name in "${PEER_NAMES[@]}"; do PEER_BUILD_LOG[$name]="$RAW/build-$name.log"; done
log "building the peers: ${PEER_NAMES[*]}"
ONECCL_ROOT="$ONECCL_ROOT" bash "$PEERS_DIR/build.sh" "$PB" "$RAW" "${PEER_NAMES[@]}"
build_failures=$((build_failures + $?))
# The VM phase probe (phase_probe.cc): run before and after every command, its round trips go
# into the command's log ("# phase_probe before|after NS") and the report marks far runs.
PROBE="$PB/phase_probe"
bash "$PEERS_DIR/build.sh" "$PB" "$RAW" probe 2>/dev/null \
  || { log "could not build the phase probe (see $RAW/build-probe.log); runs go unprobed"; PROBE=""; }
# The loopback TCP floor (socket_floor.cc): not run here; built for measuring what the NET rows
# sit on (perf/compare/README.md).
bash "$PEERS_DIR/build.sh" "$PB" "$RAW" floor 2>/dev/null || log "could not build socket_floor (see $RAW/build-floor.log)"

# ------------------------------------------------------------------- 3. runs
ROOTFLAG=()
[[ $EUID -eq 0 ]] && ROOTFLAG=(--allow-run-as-root)
OMPI=(mpirun.openmpi "${ROOTFLAG[@]}" --mca btl_base_warn_component_unused 0)
OMPI2=("${OMPI[@]}" -np 2 --bind-to core --map-by core)
OMPI4=("${OMPI[@]}" -np 4 --oversubscribe --bind-to none)
SHM=(--mca pml ob1 --mca btl "self,vader")
TCP=(--mca pml ob1 --mca btl "self,tcp" --mca btl_tcp_if_include lo)
# oneCCL under the same launcher. CCL_WORKER_OFFLOAD=0: the calling thread drives each collective,
# as MPI's does; by default a oneCCL worker thread does, and with one core per process it and the
# waiting caller time-share that core (measured here: 20-150 ms per allreduce at every size).
# CCL_WORKER_AFFINITY=0,1 keeps each process's (idle) worker on its own core (the default crosses
# them). CCL_ATL_SHM=1: OFI's shared-memory provider between the two processes, where the default
# is tcp;ofi_rxm over loopback.
ONECCL_ENV=(-x CCL_WORKER_OFFLOAD=0 -x CCL_WORKER_AFFINITY=0,1 -x CCL_ATL_SHM=1)
NET_ENV=(env COLLCOMM_P2P_DISABLE=1 COLLCOMM_SHM_DISABLE=1 COLLCOMM_SOCKET_IFNAME="$NET_IFNAME")
PEER_ITERS=(-t "$TARGET_S" -m "$MIN_ITERS" -n "$MAX_ITERS")

case_nranks() { case "$1" in oversub) echo 4 ;; *) echo 2 ;; esac; }
case_launch() {  # the collcomm launcher for a case, one word per line
  case "$1" in
    shm) printf '%s\n' "$CCRUN" -n 2 --bind core ;;
    oversub) printf '%s\n' "$CCRUN" -n 4 ;;
    net) printf '%s\n' "${NET_ENV[@]}" "$CCRUN" -n 2 --bind core ;;
  esac
}
case_sizes() {  # the sizes (bytes) a case runs
  local b
  for b in "${SIZE_BYTES[@]}"; do
    [[ "$1" == oversub ]] && ((b > OVERSUB_MAX_B)) && continue
    echo "$b"
  done
}
case_ops() {
  case "$1" in
    shm) printf '%s\n' "${OP_LIST[@]}" ;;
    *) has_op allreduce && echo allreduce ;;
  esac
}
case_peers() {
  case "$1" in
    shm) [[ -n "${WANT_PEER[ompi]:-}" ]] && echo ompi-vader; [[ -n "${WANT_PEER[mpich]:-}" ]] && echo mpich
         [[ -n "${WANT_PEER[oneccl]:-}" ]] && echo oneccl ;;
    oversub) [[ -n "${WANT_PEER[ompi]:-}" ]] && echo ompi-vader-np4 ;;
    net) [[ -n "${WANT_PEER[ompi]:-}" ]] && echo ompi-tcp; [[ -n "${WANT_PEER[gloo]:-}" ]] && echo gloo-tcp ;;
  esac
  return 0
}
peer_cmd() {  # peer_cmd RUNNER OP SIZELIST: the command, one word per line
  local r="$1" op="$2" sizes="$3"
  case "$r" in
    ompi-vader) printf '%s\n' "${OMPI2[@]}" "${SHM[@]}" "${PEER_BIN[ompi]}" -o "${MPI_OP[$op]}" -s "$sizes" "${PEER_ITERS[@]}" ;;
    ompi-vader-np4) printf '%s\n' "${OMPI4[@]}" "${SHM[@]}" "${PEER_BIN[ompi]}" -o "${MPI_OP[$op]}" -s "$sizes" "${PEER_ITERS[@]}" ;;
    ompi-tcp) printf '%s\n' "${OMPI2[@]}" "${TCP[@]}" "${PEER_BIN[ompi]}" -o "${MPI_OP[$op]}" -s "$sizes" "${PEER_ITERS[@]}" ;;
    mpich) printf '%s\n' mpirun.mpich -np 2 -bind-to core "${PEER_BIN[mpich]}" -o "${MPI_OP[$op]}" -s "$sizes" "${PEER_ITERS[@]}" ;;
    gloo-tcp) printf '%s\n' "${PEER_BIN[gloo]}" -p 2 -B 1 -a ring -s "$sizes" "${PEER_ITERS[@]}" ;;
    oneccl) printf '%s\n' "${OMPI2[@]}" "${ONECCL_ENV[@]}" "${PEER_BIN[oneccl]}" -o "${MPI_OP[$op]}" -s "$sizes" "${PEER_ITERS[@]}" ;;
  esac
}
peer_key() { case "$1" in ompi*) echo ompi ;; mpich) echo mpich ;; gloo*) echo gloo ;; oneccl) echo oneccl ;; esac; }

failures=0
run_logged() {  # run_logged LOG CMD...: runs CMD under timeout, output (both streams) to LOG; sets RC
  local out="$1"; shift
  { printf '# cmd:'; printf ' %q' "$@"; printf '\n'; } >"$out"
  probe_phase before >>"$out"
  timeout -k 15 "$T_RUN" "$@" >>"$out" 2>&1 </dev/null
  RC=$?
  probe_phase after >>"$out"
  echo "# exit status: $RC" >>"$out"
}
probe_phase() {  # probe_phase WHEN: "# phase_probe WHEN NS" (nothing without a probe)
  [[ -n "$PROBE" ]] || return 0
  timeout 10 "$PROBE" 2>/dev/null | awk -v w="$1" '$1 == "phase_probe_rt_ns" { print "# phase_probe", w, $2 }'
}
record() {  # record CASE OP RUNNER REP NRANKS SIZES RC LOG
  local IFS=$'\t'
  echo "$*" >>"$MANIFEST"
  if (($7 != 0)); then
    failures=$((failures + 1))
    log "  FAILED rc=$7: $3 $1 $2 rep $4, see $8"
  fi
}
# the first row of collcomm's table in LOG: prints "oop_us ip_us" (empty when there is none)
cc_row_times() { sed -n 's/^\[0\] //p' "$1" | awk '$1 ~ /^[0-9]+$/ && NF >= 13 { print $6, $10; exit }'; }

declare -A CC_ITERS=()
set_cc_iters() {  # set_cc_iters CASE OP SIZE: sets ITERS, the timed iterations for this size
  # (probed once with a short run, then kept for every repetition). No subshell: the cache must stick.
  local key="$1/$2/$3" plog="$RAW/probe.$1.$2.$3.txt" pn=20 pw=5 t launch
  if [[ -z "${CC_ITERS[$key]:-}" ]]; then
    (($3 > 1048576)) && { pn=2; pw=1; }
    mapfile -t launch < <(case_launch "$1")
    run_logged "$plog" "${launch[@]}" "$BUILD_DIR/perf/${CC_BIN[$2]}" -b "$3" -e "$3" -a 3 -n "$pn" -w "$pw"
    ((RC == 0)) || log "  probe failed (rc=$RC), see $plog; timing with -n $MIN_ITERS"
    t=$(cc_row_times "$plog")
    CC_ITERS[$key]=$(awk -v t="$t" -v tgt="$TARGET_S" -v lo="$MIN_ITERS" -v hi="$MAX_ITERS" 'BEGIN {
      split(t, v, " "); m = (v[1] + 0 > v[2] + 0) ? v[1] + 0 : v[2] + 0
      if (m <= 0) { print lo; exit }               # probe failed: the measured run will tell
      n = int(tgt / (m * 1e-6) + 0.999); if (n < lo) n = lo; if (n > hi) n = hi; print n }')
  fi
  ITERS="${CC_ITERS[$key]}"
}
run_collcomm() {  # run_collcomm CASE OP REP: one invocation per size
  local c="$1" op="$2" rep="$3" b iters warm out launch
  mapfile -t launch < <(case_launch "$c")
  for b in $(case_sizes "$c"); do
    set_cc_iters "$c" "$op" "$b"; iters="$ITERS"
    warm=20; ((b > 1048576)) && warm=2
    out="$RAW/collcomm.$c.$op.$b.$rep.txt"
    log "rep $rep: collcomm $c $op $b B (-n $iters)"
    run_logged "$out" "${launch[@]}" "$BUILD_DIR/perf/${CC_BIN[$op]}" -b "$b" -e "$b" -a 3 -n "$iters" -w "$warm"
    record "$c" "$op" collcomm "$rep" "$(case_nranks "$c")" "$b" "$RC" "$out"
  done
}
run_peer() {  # run_peer RUNNER CASE OP REP: one invocation for every size
  local r="$1" c="$2" op="$3" rep="$4" sizes cmd out
  sizes=$(case_sizes "$c" | paste -sd,)
  mapfile -t cmd < <(peer_cmd "$r" "$op" "$sizes")
  out="$RAW/$r.$c.$op.$rep.txt"
  log "rep $rep: $r $c $op"
  local bin="${PEER_BIN[$(peer_key "$r")]}"
  if [[ ! -x "$bin" ]]; then
    { echo "# cmd: ${cmd[*]}"; echo "# not built: see ${PEER_BUILD_LOG[$(peer_key "$r")]:-the build step}"; } >"$out"
    RC=127
  else
    run_logged "$out" "${cmd[@]}"
  fi
  record "$c" "$op" "$r" "$rep" "$(case_nranks "$c")" "$sizes" "$RC" "$out"
}

# The commands, once each, for the report's header.
{
  for c in "${CASE_LIST[@]}"; do
    mapfile -t ops < <(case_ops "$c")
    ((${#ops[@]})) || continue
    mapfile -t launch < <(case_launch "$c")
    printf '%s collcomm: %s %s -b S -e S -a 3 -n N -w W   (N: iterations for %ss per variant, probed; W: 20, or 2 above 1 MiB)\n' \
      "$c" "${launch[*]}" "$BUILD_DIR/perf/<op>_perf" "$TARGET_S"
    while read -r r; do
      [[ -n "$r" ]] || continue
      mapfile -t cmd < <(peer_cmd "$r" "${ops[0]}" "$(case_sizes "$c" | paste -sd,)")
      line="${cmd[*]}"
      if ((${#ops[@]} > 1)) && [[ "$r" != gloo* ]]; then
        alts=""; for o in "${ops[@]}"; do alts+="${alts:+|}${MPI_OP[$o]}"; done
        line="${line/ -o ${MPI_OP[${ops[0]}]} / -o <$alts> }"
      fi
      printf '%s %s: %s\n' "$c" "$r" "$line"
    done < <(case_peers "$c")
  done
} >"$OUT_DIR/commands.txt"

for c in "${CASE_LIST[@]}"; do
  [[ -n "$(case_ops "$c")" ]] || note "case $c skipped: it runs allreduce only and OPS has no allreduce"
  [[ -n "$(case_sizes "$c")" ]] || note "case $c skipped: no size in SIZES is <= $OVERSUB_MAX"
done

for rep in $(seq 1 "$REPS"); do
  for c in "${CASE_LIST[@]}"; do
    [[ -n "$(case_sizes "$c")" ]] || continue
    for op in $(case_ops "$c"); do
      mapfile -t runners < <(echo collcomm; case_peers "$c")
      n=${#runners[@]}
      for ((i = 0; i < n; i++)); do   # rotate who goes first from one repetition to the next
        r="${runners[$(((i + rep - 1) % n))]}"
        if [[ "$r" == collcomm ]]; then run_collcomm "$c" "$op" "$rep"; else run_peer "$r" "$c" "$op" "$rep"; fi
      done
    done
  done
done

# ------------------------------------------------------------------ 4. report
ELAPSED=$(($(date +%s) - T_START))
{
  echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "ncpu=$(nproc)"
  echo "mem_gib=$(free -g | awk '/Mem:/{print $2}')"
  echo "kernel=$(uname -r)"
  echo "load_start=$LOAD_START"
  echo "load_end=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "elapsed_s=$ELAPSED"
  echo "reps=$REPS"
  echo "target_s=$TARGET_S"
  if rev=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null); then
    git -C "$REPO" diff --quiet HEAD -- src include perf tools CMakeLists.txt 2>/dev/null \
      || rev="$rev + uncommitted changes in src/include/perf/tools"
  else
    rev="$REPO (not a git checkout)"
  fi
  echo "collcomm=$rev, $BUILD_DIR (RelWithDebInfo)"
  oneccl_version=$(cd "$ONECCL_ROOT" 2>/dev/null && ls -d lib/python*/site-packages/oneccl_cpu-*.dist-info 2>/dev/null \
    | sed -n 's|.*/oneccl_cpu-\(.*\)\.dist-info|oneccl-cpu \1 (PyPI); |p' | head -1)
  echo "libs=$(dpkg-query -W -f '${Package} ${Version}; ' openmpi-bin mpich libgloo-dev 2>/dev/null)$oneccl_version"
  echo "build_failures=$build_failures"
} >"$OUT_DIR/host.txt"
python3 "$HERE/compare_report.py" --out-dir "$OUT_DIR" >"$OUT_DIR/compare.md"
report_rc=$?
cat "$OUT_DIR/compare.md"
log "table: $OUT_DIR/compare.md  (all numbers: $OUT_DIR/medians.tsv, raw outputs: $RAW/), ${ELAPSED}s"
if ((report_rc != 0)); then log "the report found failures (rc=$report_rc)"; fi
if ((failures || build_failures || report_rc)); then
  log "$failures run(s) failed, $build_failures build(s) failed"
  exit 1
fi
exit 0
