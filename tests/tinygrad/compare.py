"""Compares pytest junit reports of the same tests on tinygrad's CPU device and on UOPD.

    compare.py [--exceptions FILE] NAME CPU.xml UOPD.xml [NAME CPU.xml UOPD.xml ...]

A test id is NAME::class::test (NAME as run.sh names the suite, e.g. tinygrad:test_tiny). Exits 1
when a test that passes on CPU fails or errors on UOPD (or is missing there) and the exceptions file
does not list it; prints the counts, the regressions, the listed exceptions that happened, and the
tests that pass on UOPD but not on CPU. A skip on UOPD of a test that passes on CPU is reported, not
failed (tinygrad skips by device name, e.g. dtypes it only knows for some devices).

Exceptions file: one test id per line, then whitespace, then the reason; '#' starts a comment; an id
may end in '*' to match a prefix.
"""
from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path


def outcomes(path: str, name: str) -> dict[str, str]:
    out: dict[str, str] = {}
    if not Path(path).exists():
        return out
    for case in ET.parse(path).getroot().iter("testcase"):
        cls = case.get("classname", "").rsplit(".", 1)[-1]
        tid = f"{name}::{cls}::{case.get('name')}"
        state = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                state = "failed"
            elif child.tag == "skipped":
                state = "skipped"
        out[tid] = state
    return out


def load_exceptions(path: str | None) -> dict[str, str]:
    found: dict[str, str] = {}
    if not path or not Path(path).exists():
        return found
    for line in Path(path).read_text().splitlines():
        line = line.split("#", 1)[0].strip() if not line.lstrip().startswith("#") else ""
        if line:
            tid, _, reason = line.partition(" ")
            found[tid] = reason.strip()
    return found


def excepted(tid: str, exceptions: dict[str, str]) -> str | None:
    for pattern, reason in exceptions.items():
        if tid == pattern or (pattern.endswith("*") and tid.startswith(pattern[:-1])):
            return reason or "(no reason given)"
    return None


def main(argv: list[str]) -> int:
    exc_path = None
    if argv[:1] == ["--exceptions"]:
        exc_path, argv = argv[1], argv[2:]
    exceptions = load_exceptions(exc_path)
    regressions, allowed, skipped, better = [], [], [], []
    for i in range(0, len(argv), 3):
        name, cpu_xml, uopd_xml = argv[i:i + 3]
        cpu, uopd = outcomes(cpu_xml, name), outcomes(uopd_xml, name)
        if not cpu:
            print(f"{name}: no CPU results ({cpu_xml})")
            regressions.append(f"{name}: no CPU results")
        if not uopd:
            print(f"{name}: no UOPD results ({uopd_xml})")
        c, u = Counter(cpu.values()), Counter(uopd.values())
        print(f"{name}: CPU {c['passed']} passed, {c['failed']} failed, {c['skipped']} skipped; "
              f"UOPD {u['passed']} passed, {u['failed']} failed, {u['skipped']} skipped")
        for tid in sorted(set(cpu) | set(uopd)):
            a, b = cpu.get(tid, "missing"), uopd.get(tid, "missing")
            if a == "passed" and b in ("failed", "missing"):
                reason = excepted(tid, exceptions)
                (allowed if reason else regressions).append(f"{tid} ({b} on UOPD)" + (f": {reason}" if reason else ""))
            elif a == "passed" and b == "skipped":
                skipped.append(tid)
            elif b == "passed" and a != "passed":
                better.append(f"{tid} ({a} on CPU)")
    for title, items in (("passes on CPU, skipped on UOPD", skipped),
                         ("passes on UOPD, not on CPU", better),
                         ("listed exceptions (fail on UOPD, pass on CPU)", allowed),
                         ("REGRESSIONS (pass on CPU, fail on UOPD, not listed)", regressions)):
        if items:
            print(f"{title}: {len(items)}")
            for x in items:
                print(f"  {x}")
    print(f"summary: {len(regressions)} regressions, {len(allowed)} listed exceptions, {len(skipped)} skipped on UOPD only")
    return 1 if regressions else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
