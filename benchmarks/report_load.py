"""First load of the W1 HTML report in headless Chromium, each in a new browser profile (nothing
compiled or cached): navigation start to the page's own marks, "figures of the first screen
drawn" (#bs-first-screen) and "all figures drawn" (#bs-drawn), and then loaded again in the same
profile. The baseline, alternated with it in the same run: a blank page that only loads the
full plotly.js bundle of the plotly package (what the report carried before its cartesian
bundle), to its load event; so the ratio says how the report compares with merely loading the
full library on this machine at this load.

Run by hand (it simulates W1 once into a temporary folder, about a minute with a warm cache):
PYTHONPATH=. python benchmarks/report_load.py [--repeats 5] [--run RUN_DIR]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from browser import Browser  # noqa: E402

W1 = ROOT / "examples" / "two_link_pid_vs_ff.yaml"


def report_load(page: Path) -> tuple[float, float, float]:
    """(first screen, all figures, all figures loaded again) in ms."""
    with Browser(timeout=120) as b:
        b.goto(page.as_uri())
        b.evaluate("window.blocksimReady")
        first = float(b.evaluate("document.getElementById('bs-first-screen').dataset.ms"))
        drawn = float(b.evaluate("document.getElementById('bs-drawn').dataset.ms"))
        b.goto("about:blank")
        b.goto(page.as_uri())
        b.evaluate("window.blocksimReady")
        again = float(b.evaluate("document.getElementById('bs-drawn').dataset.ms"))
    return first, drawn, again


def baseline_load(page: Path) -> float:
    """ms from navigation start to the load event of a page holding the full plotly.js."""
    with Browser(timeout=120) as b:
        b.goto(page.as_uri())
        return float(b.evaluate("performance.getEntriesByType('navigation')[0].loadEventStart"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--run", help="a saved W1 run (simulate --out); default: simulate it now")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="blocksim-report-load-"))
    run = Path(args.run) if args.run else work / "w1"
    if not args.run:
        subprocess.run([sys.executable, str(ROOT / "cli.py"), "simulate", str(W1), "--out",
                        str(run), "--quiet"], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    from blocksim.web.report import write_report
    page = write_report(run, work / "report.html")
    base = work / "full_plotly.html"
    try:
        from plotly.offline import get_plotlyjs
    except ImportError:
        sys.exit("the baseline needs the full plotly.js of the plotly package: pip install plotly")
    base.write_text(f"<!DOCTYPE html><html><head><script>{get_plotlyjs()}</script></head>"
                    "<body>full plotly.js</body></html>")
    rows = []
    for _ in range(args.repeats):
        rows.append((*report_load(page), baseline_load(base)))
    load = os.getloadavg()[0]
    print(f"W1 report {page.stat().st_size:,} bytes; {args.repeats} first loads, each in a new "
          f"profile (load average {load:.1f}); ms from navigation start")
    print(f"{'':>4}{'first screen':>14}{'all figures':>13}{'again':>8}{'full plotly.js':>16}"
          f"{'ratio':>7}")
    for k, (first, drawn, again, full) in enumerate(rows):
        print(f"{k:>4}{first:>14.0f}{drawn:>13.0f}{again:>8.0f}{full:>16.0f}{drawn / full:>7.2f}")
    med = [statistics.median(c) for c in zip(*rows)]
    print(f"{'med':>4}{med[0]:>14.0f}{med[1]:>13.0f}{med[2]:>8.0f}{med[3]:>16.0f}"
          f"{med[1] / med[3]:>7.2f}")


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"({time.perf_counter() - started:.0f} s)")
