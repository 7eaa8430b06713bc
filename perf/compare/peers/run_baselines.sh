#!/usr/bin/env bash
# run_baselines.sh - the peer baselines on their own, without collcomm: every peer configuration
# and the two machine probes, REPS times, then summarize.py's tables. compare.sh is the tool for
# collcomm against the peers; this is for the peers' own landscape (oversubscription, TCP vs
# shared memory, Gloo's algorithms) and the machine's limits.
#
#   bash perf/compare/peers/run_baselines.sh           # 3 repetitions, ~6 min on 2 vCPUs
#   REPS=1 bash perf/compare/peers/run_baselines.sh    # one pass
#   SUMMARY_ONLY=1 bash ...                            # only redo the summary from results/raw
#
# Output under $PEERS_OUT (/tmp/collcomm-peers): build/ (binaries and build logs),
# results/raw/<config>.<rep>.txt (first line: the command), results/summary.md, results/medians.tsv.
# Debian packages openmpi-bin libopenmpi-dev mpich libmpich-dev libgloo-dev are installed with
# apt-get when missing and running as root (NO_APT=1: never). T_RUN: timeout of each command (300 s).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="${PEERS_OUT:-/tmp/collcomm-peers}"
REPS="${REPS:-3}"
T_RUN="${T_RUN:-300}"
BUILD="$OUT/build"
RES="$OUT/results"
RAW="$RES/raw"
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || { echo "REPS must be a positive integer" >&2; exit 2; }
log() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*" >&2; }

# The configurations, in the order the summary lists them.
CONFIGS=(membw wake ompi-vader ompi-tcp ompi-ucx mpich gloo-tcp-bound gloo-tcp-unbound gloo-tcp-legacy
  ompi-vader-np4-yield ompi-vader-np4-spin mpich-np4 gloo-tcp-np4-unbound)
KEY_SIZES=8,1K,64K,1M,16M,256M
OVERSUB_SIZES=8,1K,64K,1M,16M
ROOTFLAG=()
[[ $EUID -eq 0 ]] && ROOTFLAG=(--allow-run-as-root)
OMPI=(mpirun.openmpi "${ROOTFLAG[@]}" --mca btl_base_warn_component_unused 0)
OMPI2=("${OMPI[@]}" -np 2 --bind-to core --map-by core)
OMPI4=("${OMPI[@]}" -np 4 --oversubscribe --bind-to none)
SHM=(--mca pml ob1 --mca btl self,vader)
TCP=(--mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo)
UCX=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca btl '^openib,ofi')
OVERSUB_LOOP=(-s "$OVERSUB_SIZES" -t 0.05 -n 2000)

config_cmd() {  # config_cmd CONFIG: its command, one word per line
  local mpi="$BUILD/mpi_bench.openmpi" mpich="$BUILD/mpi_bench.mpich" gloo="$BUILD/gloo_bench"
  case "$1" in
    membw) printf '%s\n' "$BUILD/mem_bw_probe" ;;
    wake) printf '%s\n' "$BUILD/wake_latency_probe" 3 ;;
    ompi-vader) printf '%s\n' "${OMPI2[@]}" "${SHM[@]}" "$mpi" -o all ;;
    ompi-tcp) printf '%s\n' "${OMPI2[@]}" "${TCP[@]}" "$mpi" -o all ;;
    ompi-ucx) printf '%s\n' "${OMPI2[@]}" "${UCX[@]}" "$mpi" -o allreduce ;;
    mpich) printf '%s\n' mpirun.mpich -np 2 -bind-to core "$mpich" -o all ;;
    gloo-tcp-bound) printf '%s\n' "$gloo" -p 2 -B 1 -a ring,bcube ;;
    gloo-tcp-unbound) printf '%s\n' "$gloo" -p 2 -B 0 -a ring -s "$KEY_SIZES" ;;
    gloo-tcp-legacy) printf '%s\n' "$gloo" -p 2 -B 1 -a legacy_ring,legacy_ring_chunked,legacy_hd,legacy_bcube \
      -s "$KEY_SIZES" ;;
    ompi-vader-np4-yield) printf '%s\n' "${OMPI4[@]}" "${SHM[@]}" "$mpi" -o allreduce "${OVERSUB_LOOP[@]}" ;;
    ompi-vader-np4-spin) printf '%s\n' "${OMPI4[@]}" "${SHM[@]}" --mca mpi_yield_when_idle 0 "$mpi" -o allreduce \
      "${OVERSUB_LOOP[@]}" ;;
    mpich-np4) printf '%s\n' mpirun.mpich -np 4 "$mpich" -o allreduce "${OVERSUB_LOOP[@]}" ;;
    gloo-tcp-np4-unbound) printf '%s\n' "$gloo" -p 4 -B 0 -a ring -s "$OVERSUB_SIZES" -t 0.05 ;;
  esac
}

failures=0
if [[ "${SUMMARY_ONLY:-0}" != 1 ]]; then
  mkdir -p "$BUILD"
  bash "$HERE/install_packages.sh" "$BUILD/apt.log" openmpi-bin libopenmpi-dev mpich libmpich-dev libgloo-dev
  log "building into $BUILD"
  bash "$HERE/build.sh" "$BUILD" "$BUILD" ompi mpich gloo membw wake || failures=$((failures + $?))

  rm -rf "$RAW"
  mkdir -p "$RAW"
  for rep in $(seq 1 "$REPS"); do
    for cfg in "${CONFIGS[@]}"; do
      mapfile -t cmd < <(config_cmd "$cfg")
      out="$RAW/$cfg.$rep.txt"
      log "rep $rep: $cfg"
      echo "# cmd: ${cmd[*]}" >"$out"
      timeout -k 15 "$T_RUN" "${cmd[@]}" >>"$out" 2>"$RAW/$cfg.$rep.err" </dev/null
      rc=$?
      if ((rc != 0)); then
        log "  FAILED rc=$rc, see $RAW/$cfg.$rep.err"
        failures=$((failures + 1))
      fi
      [[ -s "$RAW/$cfg.$rep.err" ]] || rm -f "$RAW/$cfg.$rep.err"
    done
  done
fi

mkdir -p "$RES"
files=()
for cfg in "${CONFIGS[@]}"; do
  for f in "$RAW/$cfg".*.txt; do [[ -e "$f" ]] && files+=("$f"); done
done
{
  echo "# Peer baselines: $(date -u '+%Y-%m-%d %H:%M UTC'), $REPS repetition(s)"
  echo
  echo "Host: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -g | awk '/Mem:/{print $2}') GiB, kernel $(uname -r)"
  echo "Libraries: $(dpkg-query -W -f '${Package} ${Version}; ' openmpi-bin mpich libgloo-dev 2>/dev/null)"
  echo
  python3 "$HERE/summarize.py" --medians "$RES/medians.tsv" "${files[@]}"
} >"$RES/summary.md"
cat "$RES/summary.md"
log "summary: $RES/summary.md (every size: $RES/medians.tsv)"
((failures == 0)) || { log "$failures build(s) or run(s) failed"; exit 1; }
