#!/bin/sh
# Debian packages needed to build and test collcomm. Run as root (or with sudo). Does nothing
# when all are already installed, so the build scripts can call it every time.
set -eu
PACKAGES="build-essential cmake ninja-build pkg-config libgtest-dev libgmock-dev libhwloc-dev libxml2-dev libfabric-dev clang libclang-rt-14-dev openmpi-bin python3"
missing=""
for p in $PACKAGES; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
echo "installing:$missing"
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends $missing
