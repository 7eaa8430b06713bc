#!/usr/bin/env bash
# Configures and builds collcomm into ${BUILD_DIR:-build} (extra cmake arguments pass through);
# TARGETS, when set, names the ninja targets to build instead of everything.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} "$@"
# shellcheck disable=SC2086  # TARGETS is a list of words
ninja -C "$BUILD_DIR" ${TARGETS:-}
