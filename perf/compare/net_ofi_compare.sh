#!/usr/bin/env bash
# net_ofi_compare.sh - allreduce over loopback, 2 processes pinned one per core: collcomm's NET
# transport over its socket backend and over libfabric (COLLCOMM_NET=ofi; tcp;ofi_rxm on 1.17), beside Open
# MPI over the same libfabric (pml cm, mtl ofi, provider tcp;ofi_rxm on lo) and Open MPI TCP (btl
# tcp) and the loopback floor (tcp-floor: socket_floor.cc's two-rank allreduce with the fewest
# copies and no library), in one run; the cases alternate (A B C D, then D C B A, ...) so that other
# programs' load falls on all of them, and the table gives medians (docs/net.md, "The OFI backend").
#
#   bash perf/compare/net_ofi_compare.sh
#   SIZES=1M,16M REPS=2 CASES=cc-socket,cc-ofi bash perf/compare/net_ofi_compare.sh
#
# Environment (defaults in brackets): BUILD_DIR [$REPO/build] (all_reduce_perf and ccrun built
# there), SIZES [8,64K,1M,16M,256M], REPS [4] (rounds; each runs every case once),
# CASES [cc-socket,cc-ofi,ompi-ofi,ompi-tcp,tcp-floor], OUT_DIR [/tmp/collcomm-net-ofi] (raw outputs),
# CC_LIB_B: a folder holding another libcollcomm.so.0 to run as case cc-ofi-b (LD_LIBRARY_PATH),
# for before/after comparisons in the same run; FABRIC_LIB: a folder holding another libfabric.so.1
# (a newer release built from source, say) to run collcomm and Open MPI over as cases cc-ofi-fab
# (tcp's own reliable endpoints, which libfabric has from 1.18 on) and ompi-ofi-fab (tcp;ofi_rxm:
# Open MPI 4.1's mtl ofi does not initialise over tcp's own endpoints). Open MPI's benchmark is built by peers/build.sh
# into $OUT_DIR/peers. Busbw in GB/s from 1 MiB up, time in microseconds below; out-of-place, the
# slowest rank (-a 3 for collcomm).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$REPO/build}"
SIZES="${SIZES:-8,64K,1M,16M,256M}"
REPS="${REPS:-4}"
CASES="${CASES:-cc-socket,cc-ofi,ompi-ofi,ompi-tcp,tcp-floor}"
OUT_DIR="${OUT_DIR:-/tmp/collcomm-net-ofi}"
mkdir -p "$OUT_DIR/raw"
[[ -n "${CC_LIB_B:-}" ]] && CASES="$CASES,cc-ofi-b"
[[ -n "${FABRIC_LIB:-}" ]] && CASES="$CASES,cc-ofi-fab,ompi-ofi-fab"
# A libfabric built with its providers as plugins (Intel MPI's, say) finds them in its prov/ folder
# only when told (FI_PROVIDER_PATH): that folder of library folder $1, or nothing.
providers_of() { [[ -n "$1" && -d "$1/prov" ]] && echo "$1/prov"; }
FABRIC_PROV=$(providers_of "${FABRIC_LIB:-}")

bash "$HERE/peers/install_packages.sh" "$OUT_DIR/apt.log" openmpi-bin libopenmpi-dev
bash "$HERE/peers/build.sh" "$OUT_DIR/peers" "$OUT_DIR/peers" ompi >/dev/null || echo "Open MPI's benchmark did not build" >&2
MPI_BENCH="$OUT_DIR/peers/mpi_bench.openmpi"
# The tcp-floor case: the two-rank allreduce with the fewest copies loopback TCP allows and nothing
# else (socket_floor.cc -m allreduce), what every case here sits on from 64 KiB up (below, its
# exchange, not built for latency, is slower than collcomm's).
FLOOR="$OUT_DIR/peers/socket_floor"
bash "$HERE/peers/build.sh" "$OUT_DIR/peers" "$OUT_DIR/peers" floor >/dev/null || echo "socket_floor did not build" >&2
OMPI=(timeout 600 mpirun --allow-run-as-root -np 2 --bind-to core --map-by core)
CC_ENV=(COLLCOMM_P2P_DISABLE=1 COLLCOMM_SHM_DISABLE=1 COLLCOMM_SOCKET_IFNAME=lo)

# collcomm's allreduce over one NET backend, libraries first looked up in $3 (may be empty).
cc_allreduce() {  # backend size_bytes library_path iters...
  local net="$1" size="$2" libs="$3" prov
  shift 3
  prov=$(providers_of "$libs")
  env "${CC_ENV[@]}" COLLCOMM_NET="$net" ${libs:+LD_LIBRARY_PATH="$libs"} ${prov:+FI_PROVIDER_PATH="$prov"} timeout 600 "$BUILD_DIR/tools/ccrun/ccrun" \
    -n 2 --bind core "$BUILD_DIR/perf/all_reduce_perf" -b "$size" -e "$size" -a 3 "$@"
}

# Open MPI's allreduce over its mtl ofi (provider tcp;ofi_rxm), extra mpirun options first.
ompi_ofi() {  # size_bytes mpirun_options...
  local size="$1"
  shift
  "${OMPI[@]}" "$@" --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "tcp;ofi_rxm" -x FI_TCP_IFACE=lo \
    "$MPI_BENCH" -o allreduce -s "$size" -t 0.1 -m 3 -n 1000
}

# socket_floor's median time as Open MPI's benchmark prints a row (two ranks: busbw = algbw), over
# about 0.1 s of exchanges (the count from a rough time per exchange: 10 us + 1 us per 4 KiB).
floor_allreduce() {  # size_bytes
  local n=$((100000 / ($1 / 4096 + 10) + 3)) t
  t=$(timeout 600 "$FLOOR" -b "$1" -n "$n" -w $((n / 10 + 1)) -m allreduce | sed -n 's/.*median \([0-9.]*\) us.*/\1/p')
  [[ -n "$t" ]] && awk -v b="$1" -v t="$t" 'BEGIN { bw = b / t / 1000; printf "allreduce %d - - %s %.3f %.3f\n", b, t, bw, bw }'
}

run_case() {  # case size_bytes -> raw output on stdout
  # About a tenth of a second of timed operations at every size, as Open MPI's benchmark runs
  # (-t 0.1): 20 operations of 1 MiB took 8 ms, and single runs then spread 1.5x.
  local iters=(-n 20 -w 3)
  (($2 <= 4 << 20)) && iters=(-n 200 -w 20)
  (($2 >= 64 << 20)) && iters=(-n 3 -w 1)
  case "$1" in
    cc-socket) cc_allreduce socket "$2" "" "${iters[@]}" ;;
    cc-ofi) cc_allreduce ofi "$2" "" "${iters[@]}" ;;
    cc-ofi-b) cc_allreduce ofi "$2" "$CC_LIB_B" "${iters[@]}" ;;
    cc-ofi-fab) cc_allreduce ofi "$2" "$FABRIC_LIB" "${iters[@]}" ;;
    ompi-ofi) ompi_ofi "$2" ;;
    ompi-ofi-fab) ompi_ofi "$2" -x LD_LIBRARY_PATH="$FABRIC_LIB" ${FABRIC_PROV:+-x FI_PROVIDER_PATH="$FABRIC_PROV"} ;;
    ompi-tcp) "${OMPI[@]}" --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo \
        "$MPI_BENCH" -o allreduce -s "$2" -t 0.1 -m 3 -n 1000 ;;
    tcp-floor) floor_allreduce "$2" ;;
  esac 2>&1
}

to_bytes() {
  local s="$1" n mult=1
  [[ "$s" =~ ^([0-9]+)([kKmMgG]?)$ ]] || return 1
  n="${BASH_REMATCH[1]}"
  case "${BASH_REMATCH[2]}" in k | K) mult=1024 ;; m | M) mult=$((1 << 20)) ;; g | G) mult=$((1 << 30)) ;; esac
  echo $((n * mult))
}

IFS=, read -ra case_list <<<"$CASES"
IFS=, read -ra size_list <<<"$SIZES"
results="$OUT_DIR/results.tsv"
: >"$results"
for ((r = 0; r < REPS; r++)); do
  order=("${case_list[@]}")
  if ((r % 2 == 1)); then
    order=()
    for ((i = ${#case_list[@]} - 1; i >= 0; i--)); do order+=("${case_list[i]}"); done
  fi
  for s in "${size_list[@]}"; do
    b=$(to_bytes "$s") || { echo "bad size $s" >&2; exit 64; }
    for c in "${order[@]}"; do
      raw="$OUT_DIR/raw/$c-$b-$r.txt"
      run_case "$c" "$b" >"$raw"
      # collcomm: "[0] size count type redop root time algbw busbw ..."; MPI: "allreduce size count iters time algbw busbw".
      awk -v c="$c" -v b="$b" '
        $1 == "[0]" && $2 == b { print c "\t" b "\t" $7 "\t" $9; found = 1 }
        $1 == "allreduce" && $2 == b { print c "\t" b "\t" $5 "\t" $7; found = 1 }
        END { if (!found) print c "\t" b "\tFAILED\tFAILED" }' "$raw" >>"$results"
    done
  done
done

python3 - "$results" "$CASES" <<'EOF'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
cases = sys.argv[2].split(",")
sizes = sorted({int(r[1]) for r in rows})
def fmt(b):
    return f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB" if b >= 1024 else f"{b} B"
print("| case | " + " | ".join(fmt(s) for s in sizes) + " |")
print("|---|" + "---|" * len(sizes))
for c in cases:
    cells = []
    for s in sizes:
        v = [r for r in rows if r[0] == c and int(r[1]) == s]
        ok = [r for r in v if r[2] != "FAILED"]
        if not ok:
            cells.append("FAILED" if v else "-")
        elif s >= 1 << 20:
            cells.append(f"{statistics.median(float(r[3]) for r in ok):.2f} GB/s")
        else:
            cells.append(f"{statistics.median(float(r[2]) for r in ok):.1f} us")
    print(f"| {c} | " + " | ".join(cells) + f" |")
# Each case against cc-socket run beside it (same round and size), the median of those ratios:
# time over the socket backend's time below 1 MiB, busbw over its busbw from 1 MiB.
if "cc-socket" in cases and len(cases) > 1:
    print("\n| against cc-socket, same round | " + " | ".join(fmt(s) for s in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    rounds = {}
    for r in rows:
        rounds.setdefault((r[0], int(r[1])), []).append(r)
    for c in cases:
        if c == "cc-socket":
            continue
        cells = []
        for s in sizes:
            mine, base = rounds.get((c, s), []), rounds.get(("cc-socket", s), [])
            col = 3 if s >= 1 << 20 else 2
            q = [float(a[col]) / float(b[col]) for a, b in zip(mine, base)
                 if "FAILED" not in (a[col], b[col]) and float(b[col]) > 0]
            cells.append(f"{statistics.median(q):.2f}x {'busbw' if col == 3 else 'time'}" if q else "-")
        print(f"| {c} | " + " | ".join(cells) + " |")
print(f"\nmedians of {len(rows) // max(1, len(cases) * len(sizes))} runs per cell; raw outputs in {sys.argv[1].rsplit('/', 1)[0]}/raw")
EOF
