#!/usr/bin/env python3
"""The house rules of the source tree that a scan can keep
(docs/architecture.md, "Libraries and what may depend on what"):

  - every source file (.cpp, .h, .td, .cuh, .inc, .in) under include/,
    lib/, passes/, driver/, runtime/ and tools/ is at most 900 lines;
  - nothing under lib/ includes memfit/Passes/, memfit/JIT/ or
    memfit/Frontend/ (the passes and the driver are above it);
  - nothing under passes/ includes memfit/Target/, memfit/JIT/ or
    memfit/Frontend/ (passes do not depend on the target or the driver);
  - nothing under runtime/ includes an MLIR or LLVM header;
  - the C++ API's header and what it includes pull in no LLVM header.

  source_layout.py SRC_ROOT

Prints one line per broken rule and FAIL, or PASS with the largest file.
"""

import os
import re
import sys

MAX_LINES = 900
SOURCE_DIRS = ["include", "lib", "passes", "driver", "runtime", "tools"]
SUFFIXES = (".cpp", ".h", ".td", ".cuh", ".inc", ".in")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
FORBIDDEN = {
    "lib": re.compile(r"^memfit/(Passes|JIT|Frontend)/"),
    "passes": re.compile(r"^memfit/(Target|JIT|Frontend)/"),
    "runtime": re.compile(r"^(mlir|llvm)/"),
}


def sources(root):
    for top in SOURCE_DIRS:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if name.endswith(SUFFIXES):
                    yield top, os.path.join(dirpath, name)


def api_includes(root, header, seen):
    """Every header the public API header reaches inside the tree."""
    if header in seen:
        return
    seen.add(header)
    for base in ("include", "runtime/include"):
        path = os.path.join(root, base, header)
        if os.path.exists(path):
            for inc in INCLUDE.findall(open(path).read()):
                seen.add(inc)
                api_includes(root, inc, seen)


def main():
    root = sys.argv[1]
    problems = []
    largest = (0, "")
    for top, path in sources(root):
        text = open(path, errors="replace").read()
        rel = os.path.relpath(path, root)
        lines = text.count("\n")
        largest = max(largest, (lines, rel))
        if lines > MAX_LINES:
            problems.append(f"{rel}: {lines} lines (at most {MAX_LINES})")
        rule = FORBIDDEN.get(top)
        if rule:
            for inc in INCLUDE.findall(text):
                if rule.match(inc):
                    problems.append(f"{rel}: includes {inc}")
    reached = set()
    api_includes(root, "memfit/JIT/Compiler.h", reached)
    for inc in sorted(reached):
        if inc.startswith(("llvm/", "mlir/")):
            problems.append(f"memfit/JIT/Compiler.h reaches {inc}")
    for p in problems:
        print(p)
    if problems:
        print(f"FAIL source-layout: {len(problems)} problems")
        return 1
    print(f"PASS source-layout: largest {largest[1]} ({largest[0]} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
