"""The HTML report without a browser: display decimation keeps each bucket's minimum and
maximum, the page's packed values decode to within the stated rounding, the page names every
scope, logged signal and block, and the report command's errors."""
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import blocksim
from blocksim.errors import BlocksimError
from blocksim.web.decimate import minmax_indices
from blocksim.web.page_data import STEPS, Packer, decode_values
from blocksim.web.report import page_state, write_report

ROOT = Path(__file__).resolve().parents[1]

SMALL = """
blocksim: 1
name: small report
blocks:
  s: {type: Sine, amplitude: [1.0, 2.0], frequency: 0.7}
  g: {type: Gain, gain: 3.0}
  c: {type: Constant, value: 1.5}
connections: [s -> g]
simulation: {stop_time: 1, solver: rk4, step: 0.001}
log: {signals: [s.out, g.out, c.out]}
metrics:
  - {name: peak, kind: peak, signal: g.out}
scopes:
  - {title: Gain, signals: [s.out, g.out], ylabel: "y [m]"}
variants:
  one: {}
  two: {g.gain: -1.0}
"""


def test_decimation_keeps_every_bucket_minimum_and_maximum_within_the_cap():
    rng = np.random.default_rng(3)
    y = np.cumsum(rng.normal(size=100_001))
    y[50_000] = 1e3                                  # a spike a plain stride would miss
    keep = minmax_indices(y, 1000)
    assert len(keep) <= 1000 and keep[0] == 0 and keep[-1] == len(y) - 1
    assert np.all(np.diff(keep) > 0)
    assert 50_000 in keep and y.argmin() in keep
    assert y[keep].max() == y.max() and y[keep].min() == y.min()
    np.testing.assert_array_equal(minmax_indices(y[:1000], 1000), np.arange(1000))
    z = np.sin(np.linspace(0, 30, 20_000))
    z[7000:7010] = np.nan
    kept = z[minmax_indices(z, 500)]
    assert np.isnan(kept).any()                      # a gap stays a gap


def test_packed_values_decode_to_within_the_stated_rounding():
    packer = Packer()
    y = np.array([0.25, -3.0, 7.5, np.nan, 1e-9, 7.5])
    ref = packer.values(y)
    back = decode_values(packer.blob(), ref)
    assert np.isnan(back[3]) and back[1] == -3.0 and back[2] == 7.5
    step = (7.5 - -3.0) / STEPS
    np.testing.assert_allclose(back[[0, 4, 5]], y[[0, 4, 5]], rtol=0, atol=step / 2 + 1e-15)
    flat = packer.values(np.full(4, 2.0))
    np.testing.assert_array_equal(decode_values(packer.blob(), flat), np.full(4, 2.0))


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("small")
    path = folder / "small.yaml"
    path.write_text(SMALL)
    out = folder / "run"
    proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), "simulate", str(path), "--out",
                           str(out), "--report", "--quiet"], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return out


def test_the_page_has_each_scope_each_logged_signal_and_the_diagram(small_run):
    from blocksim.plotting import load_run
    state = page_state(load_run(small_run), small_run)
    titles = [f["title"] for f in state["figures"]]
    assert titles == ["Gain", "logged: c.out"]
    gain = state["figures"][0]
    assert [r["label"] for r in gain["rows"]] == ["y [m]", "y [m]"]
    assert [(t["label"], t["row"]) for t in gain["traces"]][:4] == [
        ("s.out (one)", 0), ("s.out (one)", 1), ("g.out (one)", 0), ("g.out (one)", 1)]
    assert len(gain["traces"]) == 8 and {t["blocks"][0] for t in gain["traces"]} == {"s", "g"}
    two = [t for t in gain["traces"] if t["label"] == "g.out (two)" and t["element"] == 1][0]
    result = blocksim.Result.load(small_run / "two")
    shown = decode_values(state["blob"], two["values"])
    np.testing.assert_allclose(shown, result["g.out"][:, 1], rtol=0,
                               atol=(two["values"]["hi"] - two["values"]["lo"]) / STEPS)
    assert [row[:2] for row in state["metrics"]] == [["one", "peak"], ["two", "peak"]]
    assert state["metrics"][0][2:] == pytest.approx([3.0, 6.0], rel=1e-5)     # |3 A sin|
    assert state["metrics"][1][2:] == pytest.approx([1.0, 2.0], rel=1e-5)     # |-A sin|
    page = (small_run / "report.html").read_text()
    assert "<script src=" not in page                # self-contained
    for block in ("s", "g", "c"):
        assert f'<g id="{block}">' in page
    assert "At most 5,000 points per trace are drawn" in page
    prov = {row["variant"]: row for row in state["provenance"]}
    assert prov["two"]["solver"] == "rk4" and len(prov["two"]["diagram SHA-256"]) == 16
    assert prov["two"]["simulation"] == "stop_time: 1, solver: rk4, step: 0.001, start_time: 0.0"


def test_a_shared_plotly_is_written_once_beside_the_page(small_run, tmp_path):
    first = write_report(small_run, tmp_path / "a.html", plotly="shared")
    write_report(small_run, tmp_path / "b.html", plotly="shared")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.html", "b.html", "plotly.min.js"]
    assert '<script src="plotly.min.js"></script>' in first.read_text()


def test_report_errors_name_the_folder_and_the_option(tmp_path, small_run):
    with pytest.raises(BlocksimError, match=f"{tmp_path / 'nothing'}: no such run folder"):
        write_report(tmp_path / "nothing")
    with pytest.raises(BlocksimError, match=r"--out .*page.txt: the report's file name must end "
                                            r"in \.html"):
        write_report(small_run, tmp_path / "page.txt")
    proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), "report", str(small_run),
                           "--max-points", "3", "--out", str(tmp_path / "x.html")],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 1
    assert proc.stderr == "error: --max-points 3: a trace needs at least 4 points\n"


def test_browser_tests_skip_without_chromium_but_fail_where_it_is_required(monkeypatch):
    import browser
    monkeypatch.setattr(browser, "chromium_path", lambda: None)
    monkeypatch.delenv("BLOCKSIM_REQUIRE_BROWSER", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no headless Chromium here"):
        browser.browser_or_skip()
    monkeypatch.setenv("BLOCKSIM_REQUIRE_BROWSER", "1")
    with pytest.raises(pytest.fail.Exception, match="apt-get install chromium-headless-shell"):
        browser.browser_or_skip()


def test_the_page_carries_the_vendored_cartesian_plotly_with_its_licence(small_run):
    from blocksim.web.report import HERE, PLOTLY_FILE, plotly_js
    js, version = plotly_js()
    assert js.startswith("/**\n* plotly.js (cartesian - minified) v4.1.1\n")
    assert version.startswith("4.1.1") and len(js) < 1_600_000       # against the full 4.8 MB
    assert "MIT License" in (HERE / "vendor" / "plotly.js-LICENSE.txt").read_text()
    assert (HERE / "vendor" / PLOTLY_FILE).read_text() == js
    page = (small_run / "report.html").read_text()
    assert f"<script>{js}</script>" in page and len(page) < len(js) + 200_000


def test_a_closed_browser_leaves_no_chromium_process_behind():
    import os
    import browser
    with browser.Browser() as b:
        group = b.proc.pid
        assert b.evaluate("1 + 1") == 2
    with pytest.raises(ProcessLookupError):
        os.killpg(group, 0)                 # the whole group (wrapper script and browser) ended
