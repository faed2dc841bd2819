"""serve: the tuning page in real headless Chromium (a changed field reruns the diagram and the
figure shows the numbers of a Python run with that value; a dragged slider's runs are
coalesced, the latest value wins), and the server's rules without a browser (127.0.0.1 only,
overtaken requests answered "superseded", the diagram file never written, clear errors)."""
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import blocksim
from blocksim.errors import BlocksimError
from blocksim.web.page_data import STEPS
from blocksim.web.serve import Tuner, tuned_values

from browser import Browser, browser_or_skip

ROOT = Path(__file__).resolve().parents[1]
W1 = ROOT / "examples" / "two_link_pid_vs_ff.yaml"

SMALL = """
blocksim: 1
name: gain
blocks:
  s: {type: Sine, amplitude: 1.0, frequency: 1.0}
  g: {type: Gain, gain: [2.0, 3.0]}
  m: {type: Mux, inputs: 2}
connections: [s -> m.in1, s -> m.in2, m -> g]
simulation: {stop_time: 1, solver: rk4, step: 0.01}
log: {signals: [g.out]}
scopes:
  - {title: Gain, signals: [g.out]}
"""


def test_tuned_values_are_the_diagrams_and_a_wrong_name_is_named():
    d = blocksim.load(W1, variant="pid_ff")
    assert tuned_values(d, ["pid.Kp", "ff.param_error"]) == {"pid.Kp": [400.0, 200.0],
                                                            "ff.param_error": [0.0]}
    with pytest.raises(BlocksimError, match=r"--tune pid.Kq: block 'pid' has no parameter 'Kq' "
                                            r"\(did you mean 'Kp'\?\)"):
        tuned_values(d, ["pid.Kq"])
    with pytest.raises(BlocksimError, match=r"--tune pdi.Kp: no block 'pdi' \(did you mean "
                                            r"'pid'\?\)"):
        tuned_values(d, ["pdi.Kp"])


def test_an_overtaken_request_is_answered_superseded_and_the_latest_runs():
    d = blocksim.load(SMALL)
    tuner = Tuner(d, tuned_values(d, ["g.gain"]))
    assert tuner.initial()["runs"] == 1
    running, release = threading.Event(), threading.Event()
    plain_run = tuner._run

    def held_run(seq, values):              # the run of request 1 lasts until released
        if seq == 1:
            running.set()
            release.wait(60)
        return plain_run(seq, values)
    tuner._run = held_run
    answers = {}

    def ask(seq, gain):
        answers[seq] = tuner.request(seq, {"g.gain": [gain, 1.0]})
    first = threading.Thread(target=ask, args=(1, 5.0))
    first.start()
    assert running.wait(60)
    second = threading.Thread(target=ask, args=(2, 7.0))
    second.start()
    first.join(timeout=60)
    assert answers[1] == {"seq": 1, "superseded": True}     # answered while it still ran
    release.set()
    second.join(timeout=60)
    assert answers[2]["values"] == {"g.gain": [7.0, 1.0]} and answers[2]["runs"] == 3
    shown = answers[2]["figures"][0]["traces"]
    assert [t["label"] for t in shown] == ["g.out", "g.out"]
    assert tuner.request(1, {"g.gain": [9.0, 1.0]}) == {"seq": 1, "superseded": True}
    bad = tuner.request(3, {"g.gain": [1.0, 2.0, 3.0]})
    assert "superseded" not in bad and "'g'" in bad["error"], bad


def test_serve_refuses_to_start_without_a_tuned_parameter():
    proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), "serve", str(W1)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 1 and proc.stderr == (
        "error: serve needs at least one --tune block.param (e.g. --tune pid.Kp)\n")


@pytest.fixture(scope="module")
def served():
    browser_or_skip()
    before = W1.read_bytes()
    proc = subprocess.Popen([sys.executable, str(ROOT / "cli.py"), "serve", str(W1), "--variant",
                             "pid_ff", "--tune", "pid.Kp", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            cwd=ROOT)
    try:
        line = proc.stdout.readline()
        assert " on http://127.0.0.1:" in line, line
        url = line.split(" on ", 1)[1].split()[0]
        with Browser(timeout=120) as browser:
            browser.goto(url)
            assert browser.evaluate("window.blocksimReady") == 1
            yield browser, url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        assert W1.read_bytes() == before          # the diagram file was not written


PLANT_Q0 = """(() => {
  const div = Array.from(document.querySelectorAll('.bs-figure'))
    .find(d => d.layout.title.text === 'Joint tracking');
  const tr = div.data.find(t => t.meta.signal === 'plant.q' && t.meta.element === 0);
  const k = div.data.indexOf(tr);
  const ref = BSserve.last.figures[0].traces[k].values;
  return {y: Array.from(tr.y), lo: ref.lo, hi: ref.hi};
})()"""


def test_a_changed_field_redraws_the_figure_with_the_numbers_of_a_python_run(served):
    browser, url = served
    assert url.startswith("http://127.0.0.1:")
    before = browser.evaluate(PLANT_Q0)
    run = browser.evaluate("""(async () => {
      const field = document.getElementById('bs-field-pid.Kp-0');
      const next = BSserve.drawn();
      field.value = 100; field.dispatchEvent(new Event('change'));
      const run = await next;
      return {values: run.values, runs: run.runs};
    })()""")
    assert run["values"] == {"pid.Kp": [100, 200]}
    after = browser.evaluate(PLANT_Q0)
    sim = blocksim.Simulator(blocksim.load(W1, variant="pid_ff"))
    sim.set_parameters({"pid.Kp": [100.0, 200.0]})
    q = sim.run()["plant.q"][:, 0]
    np.testing.assert_allclose(after["y"], q, rtol=0, atol=(after["hi"] - after["lo"]) / STEPS)
    assert np.max(np.abs(np.array(after["y"]) - np.array(before["y"]))) > 1e-3   # it changed


def test_a_dragged_slider_is_coalesced_and_the_latest_value_wins(served):
    browser, _ = served
    out = browser.evaluate("""(async () => {
      const slider = document.getElementById('bs-slider-pid.Kp-1');
      const first = BSserve.last.runs;
      for (let k = 1; k <= 25; k++) {
        slider.value = 8 * k; slider.dispatchEvent(new Event('input'));
        await new Promise(r => setTimeout(r, 10));
      }
      let run = await BSserve.drawn();
      while (run.values['pid.Kp'][1] !== 200) run = await BSserve.drawn();
      return {runs: run.runs - first, values: run.values,
              field: document.getElementById('bs-field-pid.Kp-1').value};
    })()""")
    assert out["values"] == {"pid.Kp": [100, 200]} and out["field"] == "200"
    assert 1 <= out["runs"] < 25                  # not one run per move


def test_a_taken_port_is_refused_with_its_number(tmp_path):
    import socket
    from blocksim.web.serve import serve
    path = tmp_path / "small.yaml"
    path.write_text(SMALL)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(BlocksimError, match=f"^--port {port}: Address already in use$"):
            serve(path, ["g.gain"], port=port, ready=lambda text: None)


# ------------------------------------------------------------------------ save as variant
COMMENTED = """\
# a gain on a sine: the tuning page's save test
blocksim: 1
name: gain
parameters:
  amp: 1.0          # m
blocks:
  s: {type: Sine, amplitude: "${amp}", frequency: 1.0}
  g: {type: Gain, gain: [2.0, 3.0]}     # the tuned one
  m: {type: Mux, inputs: 2}
connections: [s -> m.in1, s -> m.in2, m -> g]
simulation: {stop_time: 1, solver: rk4, step: 0.01}
log: {signals: [g.out]}
scopes:
  - {title: Gain, signals: [g.out]}
variants:
  # the louder sine
  loud: {parameters.amp: 2.0}

  quiet:
    parameters.amp: 0.5
# the end
"""


def test_a_variant_is_added_to_the_text_with_every_other_line_kept():
    from blocksim.web.variant_file import with_variant
    table = {"parameters.amp": 2.0, "g.gain": [5.0, 0.1 + 0.2]}
    out = with_variant(COMMENTED, "tuned", table, "a note", "f.yaml")
    lines = COMMENTED.splitlines(keepends=True)
    at = lines.index("    parameters.amp: 0.5\n") + 1           # after the last entry
    assert out == "".join(lines[:at] + ["  tuned:  # a note\n", "    parameters.amp: 2.0\n",
                                        "    g.gain: [5.0, 0.30000000000000004]\n"] + lines[at:])
    again = with_variant(out, "tuned", {"g.gain": [1.0, 2.0]}, "", "f.yaml")   # replaced
    assert again == "".join(lines[:at] + ["  tuned:\n", "    g.gain: [1.0, 2.0]\n"] + lines[at:])
    assert list(blocksim.load(out, variant="tuned").spec.blocks["g"].params["gain"]) == [5.0, 0.1 + 0.2]
    plain = with_variant(SMALL.lstrip(), "t", {"g.gain": [1.0, 2.0]}, "", "f.yaml")
    assert plain == SMALL.lstrip() + "\nvariants:\n  t:\n    g.gain: [1.0, 2.0]\n"
    empty = with_variant("a: 1\nvariants: {}\nb: 2\n", "t", {"x.y": 1}, "", "f.yaml")
    assert empty == "a: 1\nvariants:\n  t:\n    x.y: 1\nb: 2\n"
    with pytest.raises(BlocksimError, match=r"^f.yaml: its variants: is written in flow style"):
        with_variant("variants: {a: {x.y: 1}}\n", "t", {"x.y": 2}, "", "f.yaml")


def test_a_saved_variant_never_takes_a_name_of_the_diagrams_and_is_checked(tmp_path):
    from blocksim.web.variant_file import save_variant
    path = tmp_path / "gain.yaml"
    path.write_text(COMMENTED)
    with pytest.raises(BlocksimError, match=r"variant name 'loud': .*gain.yaml has a variant of "
                                            r"that name already"):
        save_variant(path, "loud", None, {}, {"g.gain": [1.0, 1.0]})
    with pytest.raises(BlocksimError, match=r"variant name 'a b': letters, digits"):
        save_variant(path, "a b", None, {}, {"g.gain": [1.0, 1.0]})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gain.yaml"]      # nothing written


@pytest.fixture(scope="module")
def served_copy(tmp_path_factory):
    browser_or_skip()
    folder = tmp_path_factory.mktemp("save")
    path = folder / "gain.yaml"
    path.write_text(COMMENTED)
    proc = subprocess.Popen([sys.executable, str(ROOT / "cli.py"), "serve", str(path),
                             "--variant", "loud", "--set", "simulation.stop_time=0.5",
                             "--tune", "g.gain", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
    try:
        line = proc.stdout.readline()
        assert " on http://127.0.0.1:" in line, line
        url = line.split(" on ", 1)[1].split()[0]
        with Browser(timeout=120) as browser:
            browser.goto(url)
            assert browser.evaluate("window.blocksimReady") == 1
            yield browser, url, path
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_save_as_variant_writes_a_copy_whose_variant_reruns_the_page(served_copy, tmp_path):
    browser, url, path = served_copy
    shown = browser.evaluate("""(async () => {
      const field = document.getElementById('bs-field-g.gain-0');
      const next = BSserve.drawn();
      field.value = 5; field.dispatchEvent(new Event('change'));
      await next;
      document.getElementById('bs-save').click();          // the button, as a user presses it
      const status = document.getElementById('bs-save-status');
      while (!status.textContent) await new Promise(r => setTimeout(r, 20));
      const tr = document.querySelector('.bs-figure').data[0];
      const ref = BSserve.last.figures[0].traces[0].values;
      return {status: status.textContent, values: BSserve.last.values, y: Array.from(tr.y),
              lo: ref.lo, hi: ref.hi};
    })()""")
    saved = path.with_name("gain.tuned.yaml")
    assert shown["values"] == {"g.gain": [5, 3]}
    assert shown["status"] == (f"saved variant tuned in {saved}; run it: python cli.py simulate "
                               f"{saved} --variant tuned")
    assert path.read_text() == COMMENTED                         # the user's file as it was
    text = saved.read_text()
    added = [line for line in text.splitlines() if line not in COMMENTED.splitlines()]
    assert added[0].startswith("  tuned:  # saved by `serve` ") and added[0].endswith(
        " from variant loud: g.gain")
    assert added[1:] == ["    parameters.amp: 2.0", "    simulation.stop_time: 0.5",
                         "    g.gain: [5.0, 3.0]"]
    assert [line for line in text.splitlines() if line in COMMENTED.splitlines()] == \
        COMMENTED.splitlines()                                   # every line kept, in order
    out = tmp_path / "rerun"
    proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), "simulate", str(saved),
                           "--variant", "tuned", "--out", str(out), "--quiet"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    rerun = blocksim.Result.load(out / "tuned" if (out / "tuned").is_dir() else out)["g.out"]
    sim = blocksim.Simulator(blocksim.load(path, variant="loud",
                                           set={"simulation.stop_time": 0.5}))
    sim.set_parameters({"g.gain": [5.0, 3.0]})
    np.testing.assert_array_equal(rerun, sim.run()["g.out"])      # the page's run, exactly
    np.testing.assert_allclose(shown["y"], rerun[:, 0], rtol=0,
                               atol=(shown["hi"] - shown["lo"]) / STEPS)   # as drawn
    assert np.max(np.abs(rerun[:, 0])) == pytest.approx(2.0 * 5.0, rel=1e-3)   # amp x gain


def test_a_save_from_another_site_is_refused_and_writes_nothing(served_copy):
    import urllib.error
    import urllib.request
    _, url, path = served_copy
    before = sorted(p.name for p in path.parent.iterdir())
    body = json.dumps({"name": "evil", "values": {"g.gain": [0.0, 0.0]}}).encode()
    for headers in ({"Content-Type": "application/json", "Origin": "http://example.com"},
                    {"Content-Type": "text/plain"}):
        request = urllib.request.Request(url + "save", data=body, headers=headers)
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(request, timeout=30)
        assert err.value.code == 403
    assert sorted(p.name for p in path.parent.iterdir()) == before
    if path.with_name("gain.tuned.yaml").is_file():
        assert "evil" not in path.with_name("gain.tuned.yaml").read_text()
