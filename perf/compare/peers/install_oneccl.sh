#!/usr/bin/env bash
# install_oneccl.sh - installs Intel oneCCL for CPUs (headers, libccl.so) from PyPI into PREFIX, the
# one place the oneCCL peer's pip install lives (compare.sh calls it; build.sh's `oneccl` builds
# against PREFIX). Nothing happens when PREFIX already has it.
#
#   bash install_oneccl.sh PREFIX LOG       pip's output goes to LOG
#
# The version is pinned: 2021.14.0 is the newest of the PyPI wheels whose libccl.so loads on its
# own; from 2021.15 on (checked: 2021.17.2, 2022.2.0) libccl.so.1 needs a libccl.so.2 that no wheel
# ships. --no-deps: the wheel's dependency impi-rt (Intel MPI) is not needed, oneCCL's OFI transport
# uses the system libfabric (Debian libfabric-dev gives the unversioned libfabric.so it dlopens).
# NO_PIP=1: never call pip (then what needs oneCCL fails on its own, with its log).
# Exit status 0 when PREFIX has oneCCL afterwards, 1 otherwise.
set -uo pipefail
(($# == 2)) || { echo "usage: install_oneccl.sh PREFIX LOG" >&2; exit 64; }
PREFIX="$1" LOG="$2"
VERSION=2021.14.0
[[ -f "$PREFIX/include/oneapi/ccl.hpp" && -e "$PREFIX/lib/libccl.so" ]] && exit 0
if [[ "${NO_PIP:-0}" == 1 ]]; then
  echo "oneCCL missing in $PREFIX (NO_PIP=1; pip install --no-deps --prefix $PREFIX oneccl-cpu==$VERSION" \
    "oneccl-cpu-devel==$VERSION); the oneccl peer will fail" >&2
  exit 1
fi
echo "installing oneCCL $VERSION from PyPI into $PREFIX (log: $LOG)" >&2
mkdir -p "$(dirname "$LOG")"
python3 -m pip install --no-deps --no-warn-script-location --disable-pip-version-check --prefix "$PREFIX" \
  "oneccl-cpu==$VERSION" "oneccl-cpu-devel==$VERSION" >"$LOG" 2>&1 \
  || { echo "pip install of oneCCL failed, see $LOG" >&2; exit 1; }
[[ -f "$PREFIX/include/oneapi/ccl.hpp" && -e "$PREFIX/lib/libccl.so" ]] \
  || { echo "pip installed oneCCL but $PREFIX/include/oneapi/ccl.hpp or lib/libccl.so is missing, see $LOG" >&2; exit 1; }
