#!/usr/bin/env bash
# Quick start, main job: install what is needed, build, and run a host allreduce on 2 ranks.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build} bash scripts/build.sh -DCOLLCOMM_CUDA=OFF
"${BUILD_DIR:-build}/examples/host_allreduce"
