#!/usr/bin/env bash
# planner_check.sh - is the planner's default choice within 10% of the best forced choice?
#
#   bash perf/compare/planner_check.sh                  # allreduce, 2 pinned processes, 3 reps
#   OPS=all_reduce,broadcast RANKS=4 REPS=1 bash perf/compare/planner_check.sh
#   THREADS=1 STAT=min REPS=5 bash perf/compare/planner_check.sh   # 2 ranks as threads of one process
#
# For each op and size it times the default plan and every forced (COLLCOMM_ALGO x COLLCOMM_PROTO)
# choice, repetitions interleaved, and prints the median (or, with STAT=min, the fastest) time (us,
# out-of-place column, slowest rank) of each, the best forced choice and default/best. Rows where the default is more than
# TOLERANCE (1.10) slower than the best are marked "SLOW" (or "same plan" where the best forced
# choice is the plan the default ran: one plan timed twice); the exit status is 1 if any is SLOW.
#
# Environment: BUILD_DIR [$REPO/build-compare] (built like compare.sh when missing), OPS
# [all_reduce], SIZES [8,64,256,1K,4K,16K,64K,256K,1M,4M,16M,64M], RANKS [2] (processes; pinned one
# per core when RANKS <= cores), THREADS [0; 1: the RANKS ranks are threads of one process
# (`<op>_perf -t RANKS`, not pinned: the perf binaries leave a thread's affinity alone), whose
# planner has its own Direct thresholds], REPS [3], TOLERANCE [1.10], STAT [median; min: the
# fastest repetition, which a VM's slow phases (minutes in which cross-core hand-offs cost 5x)
# cannot inflate; use it with REPS >= 5], OUT_DIR [/tmp/collcomm-planner].
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$REPO/build-compare}"
OPS="${OPS:-all_reduce}"
SIZES="${SIZES:-8,64,256,1K,4K,16K,64K,256K,1M,4M,16M,64M}"
RANKS="${RANKS:-2}"
REPS="${REPS:-3}"
TOLERANCE="${TOLERANCE:-1.10}"
STAT="${STAT:-median}"
THREADS="${THREADS:-0}"
OUT_DIR="${OUT_DIR:-/tmp/collcomm-planner}"
[[ "$STAT" == median || "$STAT" == min ]] || { echo "STAT must be median or min" >&2; exit 2; }
[[ "$THREADS" == 0 || "$THREADS" == 1 ]] || { echo "THREADS must be 0 (processes) or 1 (threads)" >&2; exit 2; }

if [[ ! -x "$BUILD_DIR/perf/all_reduce_perf" ]]; then
  bash "$REPO/scripts/install_deps.sh" >/dev/null || exit 1
  cmake -S "$REPO" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOLLCOMM_CUDA=OFF >/dev/null || exit 1
  cmake --build "$BUILD_DIR" >/dev/null || exit 1
fi
mkdir -p "$OUT_DIR/raw"
# The command prefix that starts the ranks, and the perf binary's own rank option.
if [[ "$THREADS" == 1 ]]; then
  LAUNCH=()
  RANK_ARGS=(-t "$RANKS")
else
  BIND=(--bind none)
  (( RANKS <= $(nproc) )) && BIND=(--bind core)
  LAUNCH=("$BUILD_DIR/tools/ccrun/ccrun" -n "$RANKS" "${BIND[@]}")
  RANK_ARGS=()
fi
# name:env pairs; "default" forces nothing.
CHOICES=("default:" "Ring/Simple:COLLCOMM_ALGO=Ring COLLCOMM_PROTO=Simple" "Ring/LL:COLLCOMM_ALGO=Ring COLLCOMM_PROTO=LL")
CHOICES+=("OneShot/Simple:COLLCOMM_ALGO=OneShot COLLCOMM_PROTO=Simple" "OneShot/LL:COLLCOMM_ALGO=OneShot COLLCOMM_PROTO=LL")
# The tree on more than two ranks, where the host model weighs it (plan/host_model.h).
(( RANKS > 2 )) && CHOICES+=("Tree/Simple:COLLCOMM_ALGO=Tree COLLCOMM_PROTO=Simple")
# Direct (single copy: plain loads between threads, process_vm_readv between processes) where the
# op has it; not when the caller forces NET (COLLCOMM_P2P_DISABLE=1 COLLCOMM_SHM_DISABLE=1): Direct
# moves no byte over the network, so it is no choice a NET communicator's planner has (it never
# picks it there).
if [[ "${COLLCOMM_P2P_DISABLE:-0}" == 1 && "${COLLCOMM_SHM_DISABLE:-0}" == 1 ]]; then
  echo "NET forced: Direct left out of the choices" >&2
else
  CHOICES+=("Direct:COLLCOMM_ALGO=Direct")
fi
# Timed iterations: roughly 0.05-0.2 s per run at every size on the 2-vCPU VM with two ranks (four
# ranks' LL choices take minutes from 16 KiB up).
iters() {
  local s="$1" n="${1%[KMG]}"
  case "$s" in
    *G) echo 5 ;;
    *M) (( n >= 16 )) && echo 30 || echo 300 ;;
    *K) (( n >= 256 )) && echo 1000 || echo 20000 ;;
    *) echo 50000 ;;
  esac
}
TSV="$OUT_DIR/times.tsv"
: >"$TSV"
failed=0
for rep in $(seq 1 "$REPS"); do
  for op in ${OPS//,/ }; do
    for size in ${SIZES//,/ }; do
      for choice in "${CHOICES[@]}"; do
        name="${choice%%:*}"
        envs="${choice#*:}"
        # OneShot and Tree exist for AllReduce only: forced elsewhere they run the ring, a second
        # sample of Ring that would only add a chance for noise to pose as a better choice.
        [[ ( "$name" == OneShot/* || "$name" == Tree/* ) && "$op" != all_reduce ]] && continue
        log="$OUT_DIR/raw/$op.$size.${name//\//_}.$rep.txt"
        # shellcheck disable=SC2086
        if ! env $envs timeout 300 "${LAUNCH[@]}" "$BUILD_DIR/perf/${op}_perf" "${RANK_ARGS[@]}" \
            -b "$size" -e "$size" -a 3 -n "$(iters "$size")" -w 20 -c 1 >"$log" 2>&1; then
          echo "FAILED: $op $size $name (see $log)" >&2
          failed=1
          continue
        fi
        sed 's/^\[0\] //' "$log" | awk -v op="$op" -v size="$size" -v name="$name" \
          '!/^#/ && NF >= 9 && $1 ~ /^[0-9]+$/ { print op "\t" size "\t" name "\t" $6; exit }' >>"$TSV"
      done
    done
  done
done

# The default's plan per op and size, from one more short run with the plan lines on (the perf
# tools print "<bytes> B plan: algorithm A, protocol P, ..." under COLLCOMM_DEBUG=INFO): a default
# slower than the best forced choice that is its own plan is that plan timed twice, not a miss.
PLANS="$OUT_DIR/plans.tsv"
: >"$PLANS"
for op in ${OPS//,/ }; do
  for size in ${SIZES//,/ }; do
    # shellcheck disable=SC2086
    env COLLCOMM_DEBUG=INFO COLLCOMM_DEBUG_SUBSYS=PLAN timeout 300 "${LAUNCH[@]}" "$BUILD_DIR/perf/${op}_perf" \
      "${RANK_ARGS[@]}" -b "$size" -e "$size" -a 3 -n 1 -w 0 -c 0 2>&1 | sed 's/^\[0\] //' |
      awk -v op="$op" -v size="$size" 'match($0, /B plan: algorithm [A-Za-z]+, protocol [A-Za-z0-9]+/) {
        split(substr($0, RSTART, RLENGTH), w, /[ ,]+/); print op "\t" size "\t" w[4] "/" w[6]; exit }' >>"$PLANS"
  done
done

python3 - "$TSV" "$TOLERANCE" "$STAT" "$PLANS" <<'PY'
import sys, statistics, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    op, size, name, t = line.rstrip("\n").split("\t")
    rows[(op, size, name)].append(float(t))
# The default's plan, named as the forced choices are (Direct has no protocol choice).
plan_of = {}
for line in open(sys.argv[4]):
    op, size, plan = line.rstrip("\n").split("\t")
    plan_of[(op, size)] = "Direct" if plan.startswith("Direct/") else plan
tol = float(sys.argv[2])
agg = min if sys.argv[3] == "min" else statistics.median
names = []
for (_, _, n) in rows:
    if n not in names: names.append(n)
print("| op | size | " + " | ".join(f"{n} (us)" for n in names) + " | default's plan | best forced | default/best |")
print("|---|---|" + "---|" * len(names) + "---|---|---|")
slow = 0
seen = []
for (op, size, _) in rows:
    if (op, size) in seen: continue
    seen.append((op, size))
    med = {n: agg(rows[(op, size, n)]) for n in names if (op, size, n) in rows}
    forced = {n: t for n, t in med.items() if n != "default"}
    best = min(forced, key=forced.get)
    ratio = med["default"] / forced[best] if "default" in med and forced[best] > 0 else float("nan")
    plan = plan_of.get((op, size), "?")
    mark = (" (same plan)" if plan == best else " SLOW") if ratio > tol else ""
    slow += mark == " SLOW"
    print(f"| {op} | {size} | " + " | ".join(f"{med[n]:.2f}" if n in med else "-" for n in names)
          + f" | {plan} | {best} | {ratio:.2f}{mark} |")
sys.exit(1 if slow else 0)
PY
status=$?
exit $(( failed || status ))
