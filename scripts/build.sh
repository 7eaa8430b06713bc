#!/usr/bin/env bash
# Configures and builds collcomm into ${BUILD_DIR:-build} (extra cmake arguments pass through).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} "$@"
ninja -C "$BUILD_DIR"
