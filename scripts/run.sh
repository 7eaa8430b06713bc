#!/usr/bin/env bash
# Quick start, main job: install what is needed, build, run a host allreduce on 2 ranks, then an
# all_reduce_perf sweep (nccl-tests format) on 2 host ranks.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
BUILD_DIR=$BUILD_DIR bash scripts/build.sh -DCOLLCOMM_CUDA=OFF
"$BUILD_DIR/examples/host_allreduce"
"$BUILD_DIR/perf/all_reduce_perf" -b 8 -e 64M -f 4 -t 2
