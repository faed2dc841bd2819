"""The study page (`python cli.py report DIR` on a `sweep --out` folder) in real headless
Chromium: a grid study (3 x 2 grid points, 2 draws each) and a saltelli one of the pushed
mass-spring-damper of test_study.py (the structure the study tests compile). Each histogram's
counts, each quantile, each heat map cell and each Sobol index the page drew equal what numpy
computes from the summary (read here with the csv module) and sensitivity.json; the worst members
are ranked as the summary says, and the page's replay command, run, gives its member's row again."""
import csv
import io
import json
import shlex
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from blocksim.errors import BlocksimError
from blocksim.study import run_study
from blocksim.web.report import write_report

from browser import Browser, browser_or_skip
from test_study import write

ROOT = Path(__file__).resolve().parents[1]

GRID = ("study: 1\nname: pushed mass grid\ndiagram: msd.yaml\nseed: 3\nsamples: 2\nfactors:\n"
        "  x.x0: [0.5, 1.0, 1.5]\n  parameters.k: [2.0, 4.0]\n  damper.gain: {uniform: [-0.5, -0.3]}\n")
SALTELLI = ("study: 1\ndiagram: msd.yaml\nsampling: saltelli\nsamples: 4\nfactors:\n"
            "  x.x0: {uniform: [0.5, 1.5]}\n  parameters.k: {uniform: [2.0, 6.0]}\n")
COLUMNS = ["peak_x[0]", "rms_v[0]"]


@pytest.fixture(scope="module")
def studies(tmp_path_factory):
    folder = tmp_path_factory.mktemp("studies")
    grid = write(folder, GRID, name="grid.yaml")
    run_study(grid, folder / "grid", progress=False)
    salt = write(folder, SALTELLI, name="salt.yaml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # its intervals are wide with 16 members
        run_study(salt, folder / "salt", progress=False)
    write_report(folder / "grid")
    write_report(folder / "salt", folder / "salt" / "shared" / "page.html", plotly="shared")
    return folder


def summary(folder: Path) -> list[dict]:
    """The summary's rows read with the csv module (an independent reader)."""
    rows = list(csv.DictReader(io.StringIO((folder / "summary.csv").read_text())))
    return [{k: (v if k in ("status", "message", "host") else float(v)) for k, v in r.items()}
            for r in rows]


@pytest.fixture(scope="module")
def chromium():
    browser_or_skip()
    with Browser(timeout=120) as browser:
        yield browser


def open_page(chromium, page: Path) -> dict:
    chromium.goto("about:blank")
    chromium.goto(page.as_uri() + "#selftest")
    verdict = chromium.evaluate("window.blocksimReady")
    assert all(u.startswith(("file://", "data:", "blob:")) for u in chromium.requests)  # offline
    assert json.loads(chromium.evaluate("document.getElementById('bs-selftest').textContent")) \
        == verdict
    assert 0 < verdict["first_screen_ms"] <= verdict["drawn_ms"] < 30_000
    import matplotlib.image
    shot = matplotlib.image.imread(io.BytesIO(chromium.screenshot()), format="png")
    colours = np.unique((shot[..., :3] * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 50                                    # drawn, not blank
    return verdict


def js_number(v: float) -> str:
    """v as the page's tables show a number: JavaScript's Number(v.toPrecision(6)).toString()."""
    text = repr(float(f"{v:.6g}"))
    return text[:-2] if text.endswith(".0") else text


def check_distributions(verdict: dict, rows: list[dict]):
    hist = {f["title"]: f["data"][0] for f in verdict["figures"] if f["data"][0]["type"] == "bar"
            and f["title"].startswith("Distribution")}
    table = {r[0]: r[1:] for r in verdict["quantiles"][1:]}
    for col in COLUMNS:
        x = np.array([r[col] for r in rows if r["status"] == "ok"])
        bar = hist[f"Distribution of {col} over {len(x)} members"]
        counts, edges = np.histogram(x, bins=5)             # sqrt(12 or 16) < 5: five bins
        assert bar["y"] == counts.tolist() and sum(bar["y"]) == len(x)
        np.testing.assert_allclose(bar["x"], (edges[:-1] + edges[1:]) / 2, rtol=1e-12)
        q = np.quantile(x, [0, 0.5, 0.99, 1])
        assert table[col] == [str(len(x))] + [js_number(v) for v in q]


def test_the_grid_studys_page_draws_its_distributions_heat_maps_and_worst_members(
        studies, chromium):
    folder = studies / "grid"
    verdict = open_page(chromium, folder / "report.html")
    rows = summary(folder)
    assert len(rows) == 12
    check_distributions(verdict, rows)
    heat = [f for f in verdict["figures"] if f["data"][0]["type"] == "heatmap"]
    assert [f["title"] for f in heat] == [f"Mean {c} over the draws" for c in COLUMNS]
    for fig, col in zip(heat, COLUMNS):
        cell = fig["data"][0]
        assert cell["x"] == [0.5, 1.0, 1.5] and cell["y"] == [2.0, 4.0]
        for i, k in enumerate(cell["y"]):
            for j, x0 in enumerate(cell["x"]):
                there = [r[col] for r in rows if r["x.x0"] == x0 and r["parameters.k"] == k]
                assert len(there) == 2 and cell["z"][i][j] == pytest.approx(np.mean(there),
                                                                            rel=1e-14)
    # the peak of x from rest is x0 (docs: a damped oscillation released at x0)
    assert heat[0]["data"][0]["z"] == [[0.5, 1.0, 1.5], [0.5, 1.0, 1.5]]
    assert not any(f["title"].startswith("Sobol") for f in verdict["figures"])
    worst = verdict["worst"]
    assert worst[0] == ["metric column", "rank", "member", "value", "x.x0", "parameters.k",
                        "damper.gain", "replay"]
    by_rms = [r for r in worst[1:] if r[0] == "rms_v[0]"]
    expected = sorted(rows, key=lambda r: -r["rms_v[0]"])[:10]
    assert [int(r[2]) for r in by_rms] == [int(r["member"]) for r in expected]
    command = by_rms[0][-1]
    assert command == (f"python cli.py sweep {folder.parent / 'grid.yaml'} --out {folder} "
                       f"--replay {int(expected[0]['member'])}")
    argv = shlex.split(command)
    replayed = subprocess.run([sys.executable, *argv[1:]], capture_output=True, text=True,
                              timeout=300, cwd=ROOT)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.startswith(f"member {int(expected[0]['member'])}: its row again, "
                                      "bit for bit")


def test_the_saltelli_studys_page_draws_its_sobol_indices(studies, chromium):
    folder = studies / "salt"
    verdict = open_page(chromium, folder / "shared" / "page.html")
    assert sum(u.startswith("file://") for u in chromium.requests) == 2   # page + plotly.min.js
    rows = summary(folder)
    assert len(rows) == 16
    check_distributions(verdict, rows)
    stored = json.loads((folder / "sensitivity.json").read_text())
    sobol = [f for f in verdict["figures"] if f["title"].startswith("Sobol")]
    assert [f["title"] for f in sobol] == [f"Sobol indices of {c} (95 % intervals)"
                                           for c in COLUMNS]
    for fig, col in zip(sobol, COLUMNS):
        order = sorted(stored[col], key=lambda f: stored[col][f]["ST"])   # the largest on top
        for bars, key in zip(fig["data"], ("S1", "ST")):
            assert bars["name"] == key and bars["y"] == order
            assert bars["x"] == [stored[col][f][key] for f in order]
            assert bars["error"] == [stored[col][f][f"{key}_conf"] for f in order]
    assert not any(f["data"][0]["type"] == "heatmap" for f in verdict["figures"])  # no grid


def test_a_study_page_without_a_summary_or_with_max_points_is_refused(studies, tmp_path):
    import shutil
    unfinished = tmp_path / "unfinished"
    shutil.copytree(studies / "grid", unfinished)
    (unfinished / "summary.parquet").unlink()
    with pytest.raises(BlocksimError, match=f"^{unfinished}: the study has no summary yet .*"
                                            r"--resume` finishes it$"):
        write_report(unfinished)
    proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), "report", str(studies / "grid"),
                           "--max-points", "100", "--out", str(tmp_path / "x.html")],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 1 and not (tmp_path / "x.html").exists()
    assert proc.stderr.startswith(f"error: --max-points: {studies / 'grid'} is a study folder")
