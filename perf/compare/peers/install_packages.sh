#!/usr/bin/env bash
# install_packages.sh - installs those of the named Debian packages that are missing (the peers'
# libraries), with apt-get when running as root and NO_APT is not 1; otherwise says what to
# install. compare.sh and run_baselines.sh both call it.
#
#   bash install_packages.sh LOG PACKAGE...     apt-get's output goes to LOG
# Exit status 0 when every package is installed afterwards, 1 otherwise (what needs a missing
# package then fails on its own, with its log).
set -uo pipefail
(($# >= 1)) || { echo "usage: install_packages.sh LOG PACKAGE..." >&2; exit 64; }
LOG="$1"
shift
installed() { [[ "$(dpkg-query -W -f '${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]; }
missing=()
for p in "$@"; do installed "$p" || missing+=("$p"); done
((${#missing[@]})) || exit 0
if [[ "${NO_APT:-0}" == 1 || $EUID -ne 0 ]]; then
  echo "missing packages: ${missing[*]} (apt-get install ${missing[*]}); what needs them will fail" >&2
  exit 1
fi
echo "installing ${missing[*]} (log: $LOG)" >&2
{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}"; } >"$LOG" 2>&1 || { echo "apt-get install failed, see $LOG" >&2; exit 1; }
