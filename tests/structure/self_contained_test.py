#!/usr/bin/env python3
"""The repository refers to nothing outside itself.

Fails, naming file, line and text, when a file of the repository (in a git checkout: the tracked
files and the untracked ones git does not ignore, i.e. what a commit of everything would hold;
elsewhere every file below the root but build and VCS folders) refers to a path outside the
repository:
  - a machine path (/work/..., /home/..., /root/..., /Users/..., /mnt/..., /scratch/...);
  - a relative path that climbs above the repository root: resolved from the file's folder
    (markdown links, includes, code), or from the root after a variable that names it ($REPO,
    ${PROJECT_SOURCE_DIR}, ...); and in prose (markdown outside link targets, comments), where
    paths are usually written from the root, also from the root when it names nothing from the
    file's folder (a sibling checkout's folder, one level up, named in docs/a.md or in a comment of
    perf/compare/x.sh).
System paths (/tmp, /usr, /proc, /dev, /etc, ...) are not references to another checkout and pass.

Usage: self_contained_test.py [ROOT]        check ROOT (default: the repository holding this file)
       self_contained_test.py --self-test   check the checker on a made-up tree with known answers
"""
import os
import re
import subprocess
import sys
import tempfile

MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:work|home|root|Users|mnt|scratch|workspace)/[\w.-]")
# An optional root-naming variable, then one or more "../" (or "..\"), then what follows.
UPWARD = re.compile(r"(?:\$\{?(?P<var>[A-Za-z_][A-Za-z0-9_]*)\}?/)?(?<![\w.])(?P<ups>(?:\.\.[/\\])+)(?P<rest>[\w.-]*)")
ROOT_VARS = {"REPO", "ROOT", "REPO_ROOT", "REPO_DIR", "TOP", "TOPDIR", "SRCDIR", "SOURCE_DIR",
             "PROJECT_SOURCE_DIR", "CMAKE_SOURCE_DIR", "COLLCOMM_SOURCE_DIR"}
# Variables naming a place only known at run time, not a folder of the checkout: the dynamic
# loader's $ORIGIN (the installed binary's folder) climbs within the install prefix.
RUNTIME_VARS = {"ORIGIN"}
SKIP_DIRS = {".git", "node_modules", "__pycache__"}
MAX_BYTES = 2 << 20


def repository_files(root):
    """Relative paths of the files to check."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             capture_output=True, check=True, timeout=60).stdout
        top = subprocess.run(["git", "-C", root, "rev-parse", "--show-toplevel"], capture_output=True, check=True,
                             text=True, timeout=60).stdout.strip()
        if os.path.realpath(top) == os.path.realpath(root):
            return sorted({p.decode() for p in out.split(b"\0") if p})
    except (OSError, subprocess.SubprocessError):
        pass
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith("build")]
        for name in files:
            found.append(os.path.relpath(os.path.join(folder, name), root))
    return sorted(found)


def escapes(root, base, ups):
    """True when `ups` ("../../") taken from `base` (a folder relative to root) leaves root."""
    depth = 0 if base in ("", ".") else len(os.path.normpath(base).split(os.sep))
    return ups.count("..") > depth


COMMENT = re.compile(r"(//|/\*|^\s*\*|(^|\s)#(\s|$)|(^|\s)--\s)")
PROSE_SUFFIXES = (".md", ".txt", ".rst")


def in_prose(rel, line, start):
    """Whether the text before `start` makes the match prose: markdown outside a link target, or a
    comment of code."""
    before = line[:start]
    if rel.endswith(PROSE_SUFFIXES):
        return not before.endswith("](")
    return COMMENT.search(before) is not None


def problems_in(root, rel, text):
    folder = os.path.dirname(rel)
    for number, line in enumerate(text.splitlines(), 1):
        for m in MACHINE_PATH.finditer(line):
            yield f"{rel}:{number}: machine path {m.group(0)!r}...: {line.strip()[:160]}"
        for m in UPWARD.finditer(line):
            var, ups, rest = m.group("var"), m.group("ups"), m.group("rest")
            if var in RUNTIME_VARS:
                continue
            base = "" if var and var.upper() in ROOT_VARS else folder
            outside = escapes(root, base, ups)
            if not outside and not var and in_prose(rel, line, m.start()):
                named = os.path.normpath(os.path.join(root, folder, ups, rest))
                outside = not os.path.exists(named) and escapes(root, "", ups)
            if outside:
                yield f"{rel}:{number}: path outside the repository {m.group(0)!r}: {line.strip()[:160]}"


def check(root, exclude=()):
    found = []
    for rel in repository_files(root):
        if rel in exclude:
            continue
        path = os.path.join(root, rel)
        if os.path.islink(path) or not os.path.isfile(path) or os.path.getsize(path) > MAX_BYTES:
            continue
        with open(path, "rb") as f:
            data = f.read()
        if b"\0" in data:
            continue  # binary
        found.extend(problems_in(root, rel, data.decode("utf-8", errors="replace")))
    return found


def self_test():
    """The checker against a made-up tree whose answers are known; returns the failures."""
    up = ".." + "/"  # spelled apart so that this file holds no reference itself
    machine = "/" + "work" + "/"
    cases = {  # relative path -> (text, whether it must be flagged)
        "README.md": (f"see [the design]({up}shared/DESIGN.md)", True),
        "docs/a.md": (f"[lab]({up}lab/x.md) and [top]({up}README.md)", False),
        "docs/lab/b.md": (f"[perf]({up}{up}perf/x.md)", False),
        "docs/lab/c.md": (f"[out]({up}{up}{up}elsewhere.md)", True),
        "perf/x.sh": (f'PEERS_DIR="${{PEERS_DIR:-$REPO/{up}shared/peers}}"', True),
        "perf/compare/y.sh": (f'REPO="$(cd "$HERE/{up}{up}" && pwd)"', False),
        "src/a.cc": (f"// measured in {machine}shared/peers", True),
        "src/b.cc": ('#include "common/x.h"  // /tmp/x and /usr/include are fine', False),
        "tools/z.py": (f"open('{machine}main/build')", True),
        "docs/d.md": (f"run `{up}shared/peers/run.sh` first", True),
        "perf/compare/c.sh": (f"# the rule in {up}shared/peers/README.md", True),
        "perf/compare/d.sh": (f'cat "$HERE/{up}compare/c.sh"  # {up}{up}docs/a.md', False),
        "src/topo/e.cc": (f'readSysfs(dir + "{up}max_link_speed", &x);', False),
        "tests/unit/f.cc": (f'#include "{up}{up}src/a.cc"', False),
        "CMakeLists.txt": (f'set(CMAKE_INSTALL_RPATH "$ORIGIN/{up}lib")  # $ORIGIN/{up}{up}x too', False),
    }
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for rel, (text, _) in cases.items():
            os.makedirs(os.path.join(tmp, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(tmp, rel), "w") as f:
                f.write(text + "\n")
        flagged = {p.split(":", 1)[0] for p in check(tmp)}
        for rel, (_, bad) in cases.items():
            if (rel in flagged) != bad:
                failures.append(f"self-test: {rel} {'not ' if bad else ''}flagged: {cases[rel][0]!r}")
    return failures


def main(argv):
    if argv[1:] == ["--self-test"]:
        failures = self_test()
        print("\n".join(failures) or "self-test: every made-up reference caught, every inside path passed")
        return 1 if failures else 0
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.abspath(argv[1]) if len(argv) > 1 else os.path.dirname(os.path.dirname(here))
    this = os.path.relpath(os.path.abspath(__file__), root)
    problems = check(root, exclude={this})
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} reference(s) to paths outside the repository {root}: keep what the project "
              "needs inside it (docs/lab/ for measurements, perf/compare/peers/ for peer benchmarks)")
        return 1
    print(f"self-contained: no file of {root} refers outside it")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
