#!/usr/bin/env bash
# The install, checked as a user meets it: `cmake --install` of this build into a temporary prefix;
# then, from a directory outside the source tree and with no LD_LIBRARY_PATH, a C program (through
# libcollcomm_launch) and a C++ program (core library) built with find_package(collcomm) and with
# pkg-config, run alone and under the installed ccrun; and the installed all_reduce_perf under the
# installed ccrun, passing its correctness check.
#
#   install_test.sh BUILD_DIR SOURCE_DIR [SANITIZERS]
#
# SANITIZERS (the build's COLLCOMM_SANITIZE, e.g. address,undefined): the consumers are compiled
# with the same -fsanitize flags, so that they link the sanitizer runtime the installed library
# needs (a plain program cannot load an ASan-built libcollcomm: the runtime must come first).
# Exit status 0 when all held; 77 (ctest: skipped) when a tool it needs is missing; else 1.
set -euo pipefail
build_dir=$(cd "$1" && pwd)
source_dir=$(cd "$2" && pwd)
sanitizers=${3:-}
unset LD_LIBRARY_PATH  # the installed RPATHs must be enough

for tool in cmake ninja pkg-config cc c++; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIPPED: $tool is not installed"
    exit 77
  fi
done

work=$(mktemp -d /tmp/collcomm_install_test.XXXXXX)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() {
  echo "FAILED: $*" >&2
  exit 1
}
step() { echo "== $*"; }

step "install into $prefix"
cmake --install "$build_dir" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log"; fail "cmake --install"; }
for f in bin/ccrun bin/cc-topo bin/cc-plan bin/all_reduce_perf include/collcomm.h include/collcomm_launch.h; do
  [ -e "$prefix/$f" ] || fail "$f was not installed"
done
pc_file=$(find "$prefix" -name collcomm.pc | head -n 1)
[ -n "$pc_file" ] || fail "collcomm.pc was not installed"
[ -e "$(dirname "$pc_file")/collcomm-launch.pc" ] || fail "collcomm-launch.pc was not installed"

# Outside the source tree: a copy of the consumer project, built in its own directory.
cp -r "$source_dir/tests/install/consumer" "$work/src"
cd "$work"
flags=""
if [ -n "$sanitizers" ]; then flags="-fsanitize=$sanitizers -fno-omit-frame-pointer"; fi

step "every installed tool answers --version"
version=$(sed -n 's/^Version: //p' "$pc_file")
for tool in "$prefix"/bin/*; do
  out=$("$tool" --version) || fail "$(basename "$tool") --version failed"
  [ "$out" = "$(basename "$tool") (collcomm version $version)" ] || fail "$(basename "$tool") --version said '$out'"
done

step "find_package(collcomm): configure and build"
cmake -S src -B build-cmake -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" >"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; fail "cmake"; }
cmake --build build-cmake >"$work/build.log" 2>&1 || { cat "$work/build.log"; fail "building with find_package"; }

step "pkg-config collcomm, collcomm-launch: build"
export PKG_CONFIG_PATH=$(dirname "$pc_file")
libdir=$(pkg-config --variable=libdir collcomm)
mkdir -p build-pc
# shellcheck disable=SC2046,SC2086  # pkg-config's output is meant to be split into words
cc $flags -o build-pc/consumer_c src/consumer.c $(pkg-config --cflags --libs collcomm-launch) -Wl,-rpath,"$libdir" ||
  fail "building the C program with pkg-config"
# shellcheck disable=SC2046,SC2086
c++ $flags -std=c++17 -o build-pc/consumer_cxx src/consumer.cc $(pkg-config --cflags --libs collcomm) -pthread \
  -Wl,-rpath,"$libdir" || fail "building the C++ program with pkg-config"

expect() {  # expect TEXT COMMAND...: runs it (60 s at most), which must exit 0 and print TEXT
  local want=$1 out
  shift
  out=$(timeout 60 "$@" 2>&1) || { echo "$out"; fail "$* exited with status $?"; }
  grep -qF -- "$want" <<<"$out" || { echo "$out"; fail "$* did not print '$want'"; }
  echo "ok: $*"
}
for way in build-cmake build-pc; do
  step "run the programs built in $way"
  expect "consumer_c rank 0 of 1: sum 1 correct" "$way/consumer_c"
  expect "[1] consumer_c rank 1 of 2: sum 3 correct" "$prefix/bin/ccrun" -n 2 --timeout 50 "$way/consumer_c"
  expect "consumer_cxx: 2 ranks: sum 3 correct" "$way/consumer_cxx"
done

step "the installed all_reduce_perf under the installed ccrun"
expect "# Out of bounds values : 0 OK" "$prefix/bin/ccrun" -n 2 --timeout 50 "$prefix/bin/all_reduce_perf" -b 8 -e 64K -f 8 -n 2 -w 1
echo "install test: all passed"
