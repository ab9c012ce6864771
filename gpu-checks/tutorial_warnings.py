"""The seed tutorial on the GPU machine, counting the warnings a user sees.

Runs ``examples/tutorial.py`` as a user does (``python examples/tutorial.py``, Python's default
warning filter), with steps 9 and 10 (Nsight Compute) only with ``--with-ncu``, and counts the
warnings printed on stderr (``file:line: Category: message``). Passes when there are at most
``--max`` (default 3) and none names a line of kprof itself (each must name the tutorial's line
that called kprof). A run of commit 90c9d34's wheel on the H100 printed 14, nearly all about NVML's
energy counter, each under kprof's own ``table = backend.run_benchmark(...)``.

    python gpu-checks/tutorial_warnings.py OUT [--with-ncu] [--max N]   # OUT/tutorial.{out,err}, OUT/tutorial_warnings.json
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TUTORIAL = os.path.join(HERE, "..", "examples", "tutorial.py")
WARNING = re.compile(r"^(?P<file>\S.*?):(?P<line>\d+): (?P<category>\w*Warning): (?P<message>.*)$")


def main() -> int:
    out = sys.argv[1]
    limit = int(sys.argv[sys.argv.index("--max") + 1]) if "--max" in sys.argv else 3
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ)
    if "--with-ncu" not in sys.argv:
        env["KPROF_NCU"] = "/nonexistent/ncu"  # steps 9 and 10 say ncu is missing and are skipped
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, TUTORIAL], cwd=out, env=env, capture_output=True, text=True, timeout=1800)
    wall = time.monotonic() - t0
    for name, text in (("tutorial.out", p.stdout), ("tutorial.err", p.stderr)):
        with open(os.path.join(out, name), "w") as f:
            f.write(text)
    found = [m.groupdict() for m in map(WARNING.match, p.stderr.splitlines()) if m]
    in_kprof = [w for w in found if f"{os.sep}kprof{os.sep}" in w["file"]]
    ok = p.returncode == 0 and len(found) <= limit and not in_kprof
    for w in found:
        print(f"  {os.path.basename(w['file'])}:{w['line']}: {w['category']}: {w['message'][:150]}")
    print(f"tutorial_warnings: {'PASS' if ok else 'FAIL'}: exit {p.returncode}, {len(found)} warning(s) (at most {limit}), "
          f"{len(in_kprof)} naming kprof's own lines, {wall:.0f} s")
    with open(os.path.join(out, "tutorial_warnings.json"), "w") as f:
        json.dump({"ok": ok, "returncode": p.returncode, "warnings": found, "wall_s": wall}, f, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
