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
