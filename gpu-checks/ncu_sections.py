"""The metric names of Nsight Compute's section files (``sections/*.section``, protobuf text
format), as kprof's section table records them.

``python gpu-checks/ncu_sections.py SECTIONS_DIR`` prints, as JSON, every section's identifier,
sets and metrics (name and the compute capabilities its filter admits); ``gpu-checks/
speed_of_light.py`` compares kprof's table with the section files of the installed ncu this way,
and ``tests/fixtures/ncu-sections/`` was written by it.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

_TOKEN = re.compile(r'\s*(?:(#[^\n]*|[,;])|("(?:[^"\\]|\\.)*")|([{}:])|([A-Za-z0-9_.+-]+))')
_METRIC = re.compile(r"\b[a-z0-9]+__[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*")


def _tokens(text: str):
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            if text[pos:].strip():
                raise ValueError(f"cannot read the section text at {pos}: {text[pos:pos + 40]!r}")
            return
        pos = m.end()
        if m.group(1):
            continue
        if m.group(2):
            yield ("str", json.loads(m.group(2)))
        elif m.group(3):
            yield (m.group(3), m.group(3))
        else:
            yield ("word", m.group(4))


def parse(text: str) -> list:
    """The message as a list of (field, value) pairs; a value is a str or a nested list."""
    stack: list[list] = [[]]
    toks = list(_tokens(text))
    i = 0
    while i < len(toks):
        kind, val = toks[i]
        if kind == "}":
            done = stack.pop()
            stack[-1][-1] = (stack[-1][-1][0], done)
            i += 1
            continue
        field = val
        if toks[i + 1][0] == ":" and toks[i + 2][0] == "{":
            i += 1  # `Field: { ... }`, the same as `Field { ... }`
        if toks[i + 1][0] == ":":
            stack[-1].append((field, toks[i + 2][1]))
            i += 3
        elif toks[i + 1][0] == "{":
            stack[-1].append((field, None))
            stack.append([])
            i += 2
        else:
            raise ValueError(f"unexpected {toks[i + 1]!r} after {field!r}")
    return stack[0]


def _cc(word: str) -> int:
    return int(word.removeprefix("CC_"))


def _arch_ranges(filt: list) -> list[list[int]]:
    """[min, max] compute capabilities (x10) a Filter admits; [] for no arch condition."""
    items = [v for k, v in filt if k == "Items" and isinstance(v, list)] or [filt]
    ranges = []
    for it in items:
        lo = next((_cc(v) for k, v in it if k == "MinArch"), None)
        hi = next((_cc(v) for k, v in it if k == "MaxArch"), None)
        if lo is not None or hi is not None:
            ranges.append([lo if lo is not None else 0, hi if hi is not None else 999])
    return ranges


def _metric_refs(msg: list, out: list, derived: dict) -> None:
    """Every message with a metric Name (and its arch-specific Options), depth first."""
    name = next((v for k, v in msg if k == "Name" and isinstance(v, str)), None)
    if name and _METRIC.fullmatch(name) and not name.startswith("derived__"):
        filt = next((v for k, v in msg if k == "Filter" and isinstance(v, list)), [])
        out.append({"name": name, "arch": _arch_ranges(filt)})
    elif name and name in derived:
        for ref in _METRIC.findall(derived[name]):
            if not ref.startswith("derived__"):
                out.append({"name": ref, "arch": []})
    for k, v in msg:
        if isinstance(v, list) and k not in ("Filter", "MetricDefinitions"):
            _metric_refs(v, out, derived)


def section_metrics(text: str) -> dict:
    msg = parse(text)
    derived = {}
    for k, v in msg:
        if k == "MetricDefinitions":
            for k2, d in v:
                if k2 == "MetricDefinitions":
                    dd = dict((a, b) for a, b in d if isinstance(b, str))
                    derived[dd["Name"]] = dd.get("Expression", "")
    refs: list = []
    _metric_refs(msg, refs, derived)
    merged: dict[str, list] = {}
    for r in refs:
        prev = merged.get(r["name"])
        if prev is None:
            merged[r["name"]] = r["arch"]
        elif prev and r["arch"]:
            merged[r["name"]] = sorted({tuple(x) for x in prev + r["arch"]})
            merged[r["name"]] = [list(x) for x in merged[r["name"]]]
        else:
            merged[r["name"]] = []  # admitted somewhere without an arch condition
    breakdowns = sorted({v.split(":", 1)[1] for v in re.findall(r'"(breakdown:[^"]+)"', text)})
    return {
        "identifier": next(v for k, v in msg if k == "Identifier"),
        "sets": [dict(v)["Identifier"] for k, v in msg if k == "Sets"],
        "extends": next((v for k, v in msg if k == "Extends"), None),
        "metrics": [{"name": n, "arch": a} for n, a in merged.items()],
        "breakdowns": breakdowns,
    }


def read_dir(folder: Path) -> list[dict]:
    return [section_metrics(p.read_text()) for p in sorted(folder.glob("*.section"))]


if __name__ == "__main__":
    json.dump(read_dir(Path(sys.argv[1])), sys.stdout, indent=1)
    print()
