#!/usr/bin/env python3
"""The layers include only what is below them (docs/architecture.md, "Layers").

Fails, naming file, line and include, when a source file includes a file of a layer it must not
see:
  - src/core/ includes nothing from src/device/host/ or src/device/cuda/: core reaches an executor
    only through src/device/executor.h;
  - src/collectives/ (the portable algorithms) includes nothing from src/core/;
  - src/device/*.h (the portable device headers and the executor interface) include nothing from
    src/core/.
An include is resolved as the compiler would: from the including file's folder (when that file
exists), else from src/ (the library's include root).

Usage: layering_test.py [ROOT]        check ROOT (default: the repository holding this file)
       layering_test.py --self-test   check the checker on a made-up tree with known answers
"""
import os
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SOURCE_EXTS = (".h", ".hpp", ".cc", ".cpp", ".c", ".cu", ".cuh")

# (which files, what they must not include, why): paths relative to the repository root.
RULES = [
    (lambda p: p.startswith("src/core/"), ("src/device/host/", "src/device/cuda/"),
     "core reaches executors only through src/device/executor.h"),
    (lambda p: p.startswith("src/collectives/"), ("src/core/",),
     "the portable algorithms know nothing of communicators"),
    (lambda p: p.startswith("src/device/") and p.count("/") == 2 and p.endswith(".h"), ("src/core/",),
     "the portable device headers know nothing of communicators"),
]


def source_files(root):
    found = []
    for folder, dirs, files in os.walk(os.path.join(root, "src")):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.endswith(SOURCE_EXTS):
                found.append(os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/"))
    return found


def resolve(root, path, included):
    """The repository-relative path the include names."""
    beside = os.path.normpath(os.path.join(os.path.dirname(path), included)).replace(os.sep, "/")
    if os.path.isfile(os.path.join(root, beside)):
        return beside
    return os.path.normpath(os.path.join("src", included)).replace(os.sep, "/")


def violations(root):
    found = []
    for path in source_files(root):
        rules = [(banned, why) for applies, banned, why in RULES if applies(path)]
        if not rules:
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = resolve(root, path, m.group(1))
                for banned, why in rules:
                    if target.startswith(banned):
                        found.append(f"{path}:{number}: includes {m.group(1)} ({target}): {why}")
    return found


def self_test():
    tree = {
        # Allowed: core through the interface; the host executor may include its own headers.
        "src/core/enqueue.cc": '#include "device/executor.h"\n#include "core/comm.h"\n',
        "src/core/comm.h": '#include "device/fifo.h"\n',
        "src/device/executor.h": '#include "device/fifo.h"\n',
        "src/device/fifo.h": "",
        "src/device/host/host_executor.cc": '#include "device/host/host_platform.h"\n#include "device/executor.h"\n',
        "src/device/host/host_platform.h": "",
        "src/device/host/core_distance.h": "",
        "src/device/cuda/cuda_launch.h": "",
        "src/collectives/all_reduce.h": '#include "device/primitives.h"\n',
        # Injected violations, one per rule and form.
        "src/core/init.cc": '#include "device/host/core_distance.h"\n',
        "src/core/gpu_ops.cc": '  #  include "device/cuda/cuda_launch.h"\n',
        "src/core/relative.cc": '#include "../device/host/host_platform.h"\n',
        "src/collectives/ring.h": '#include "core/comm.h"\n',
        "src/device/primitives.h": '#include "core/enqueue.h"\n',
    }
    expected = {"src/core/init.cc:1", "src/core/gpu_ops.cc:1", "src/core/relative.cc:1",
                "src/collectives/ring.h:1", "src/device/primitives.h:1"}
    with tempfile.TemporaryDirectory() as root:
        for path, text in tree.items():
            os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        got = {v.split(": ")[0] for v in violations(root)}
    if got != expected:
        print(f"FAIL: the checker found {sorted(got)}, expected {sorted(expected)}")
        return 1
    print(f"ok: the checker catches the {len(expected)} injected includes and passes the allowed ones")
    return 0


def main(argv):
    if len(argv) > 1 and argv[1] == "--self-test":
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    found = violations(root)
    for v in found:
        print(v)
    if found:
        print(f"FAIL: {len(found)} include(s) cross a layer boundary (docs/architecture.md, Layers)")
        return 1
    print(f"ok: {len(source_files(root))} source files keep to their layers")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
