"""Engine features a user meets: subsystems in a running diagram, Ctrl-C keeping what was logged,
variants and overrides in a run, and the CLI's check, blocks, plot and simulate --out."""
import json
import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import numpy as np
import pytest

import blocksim
from blocksim.blocks.base import Block, Param, register

ROOT = Path(__file__).resolve().parents[1]

FILTER = """
inports: [u]
outports: [y, y_dot]
parameters:
  tau: 0.5        # time constant, s
  gain: 1.0
blocks:
  k:   {type: Gain, gain: "${gain / tau}"}
  e:   {type: Sum, signs: "+-"}
  x:   {type: Integrator, x0: 0.0}
connections:
  - inports.u -> e.in1
  - x -> e.in2
  - e -> k
  - k -> x
  - x -> outports.y
  - k -> outports.y_dot
"""

TOP = """
blocksim: 1
name: two first-order lags in series, as subsystems
blocks:
  step:  {type: Step, time: 0.0, initial: 0.0, final: 1.0}
  lag1:  {type: lag.yaml, tau: 0.5}
  lag2:  {type: lag.yaml, tau: 0.25, gain: 2.0}
connections:
  - step -> lag1.u
  - lag1.y -> lag2.u
simulation: {stop_time: 3.0, solver: dop853, rtol: 1.0e-11, atol: 1.0e-13}
log: {signals: [lag1.y, lag2.y, lag1.y_dot], every: 0.01}
"""


def write(folder, name, text):
    path = folder / name
    path.write_text(dedent(text))
    return path


def test_subsystems_flatten_and_run_with_mask_parameters(tmp_path):
    write(tmp_path, "lag.yaml", FILTER)
    top = write(tmp_path, "top.yaml", TOP)
    r = blocksim.simulate(blocksim.load(top))
    t = r.t
    y1 = 1 - np.exp(-t / 0.5)
    # second lag: x' = (gain / tau)(u - x), a unit-DC-gain lag of time constant 0.25 / 2, driven
    # by y1: the closed form of two distinct poles a = 2, b = 8 (1/s)
    a, b = 1 / 0.5, 2.0 / 0.25
    y2 = 1 - (b * np.exp(-a * t) - a * np.exp(-b * t)) / (b - a)
    np.testing.assert_allclose(r["lag1.y"][:, 0], y1, atol=1e-9)
    np.testing.assert_allclose(r["lag2.y"][:, 0], y2, atol=1e-9)
    np.testing.assert_allclose(r["lag1.y_dot"][:, 0], np.exp(-t / 0.5) / 0.5, atol=1e-8)
    assert "lag1/x.out" in r.names or "lag1.y" in r.names


def test_check_names_flattened_blocks(tmp_path):
    write(tmp_path, "lag.yaml", FILTER)
    top = write(tmp_path, "top.yaml", TOP)
    proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), "check", str(top)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    for name in ("lag1/x", "lag2/k", "step"):
        assert name in proc.stdout
    assert "states: 2 continuous" in proc.stdout


class InterruptAt(Block):
    """Test block: raises KeyboardInterrupt (as Ctrl-C would) once t passes `time`."""

    type_name = "TestInterruptAt"
    summary = "simulates Ctrl-C (tests only)"
    params = {"time": Param(1.0, "s", kind="time")}
    inputs = ()
    time_varying = True
    sample = "continuous"

    def resolve_widths(self, in_widths):
        return {"out": 1}

    def output(self, t, xc, xd, u, y):
        if t > float(self.p.time):
            raise KeyboardInterrupt
        y[0][...] = t


register(InterruptAt)


def test_interrupted_run_keeps_what_was_logged(tmp_path):
    path = write(tmp_path, "d.yaml", """
    blocksim: 1
    blocks:
      clock: {type: TestInterruptAt, time: 0.5}
      x:     {type: Integrator}
    connections: [clock -> x]
    simulation: {stop_time: 2.0, solver: rk4, step: 0.01}
    log: {every: 0.1}
    """)
    with pytest.raises(KeyboardInterrupt) as stop:
        blocksim.simulate(blocksim.load(path))
    r = stop.value.result                     # the caller gets the partial run
    assert r.interrupted
    assert 0.5 <= r.t[-1] <= 0.51 and r.t[0] == 0.0
    np.testing.assert_allclose(r["x.out"][:6, 0], 0.5 * r.t[:6] ** 2, atol=1e-12)


def test_an_interrupt_in_a_solver_stage_logs_the_run_state_not_the_stage(tmp_path):
    """Ctrl-C in a Runge-Kutta stage of the step from 0.55 s (off the log grid), after the
    stage has computed `twice` (read by y's derivative) from its stage state: the last sample is
    at 0.55 s with the state and outputs there, not the stage's (x = t^2 / 2, exact under
    rk4)."""
    path = write(tmp_path, "d.yaml", """
    blocksim: 1
    blocks:
      x:     {type: Integrator}
      twice: {type: Gain, gain: 2.0}
      y:     {type: Integrator}
      clock: {type: TestInterruptAt, time: 0.55}
    connections: [clock -> x, x -> twice, twice -> y]
    simulation: {stop_time: 2.0, solver: rk4, step: 0.01}
    log: {signals: [x.out, twice.out], every: 0.1}
    """)
    with pytest.raises(KeyboardInterrupt) as stop:
        blocksim.simulate(blocksim.load(path))
    r = stop.value.result
    assert r.t[-1] == pytest.approx(0.55) and r.t[-2] == pytest.approx(0.5)
    np.testing.assert_allclose(r["x.out"][:, 0], 0.5 * r.t ** 2, atol=1e-12)
    np.testing.assert_allclose(r["twice.out"][:, 0], r.t ** 2, atol=1e-12)


def test_an_interrupt_inside_an_adaptive_step_logs_up_to_the_time_reached(tmp_path):
    """Ctrl-C in a solver stage of a long major step (an adaptive run, no discrete rate): the log
    ends at the last accepted step, after the last grid sample, with the state there (it ended
    with a sample stamped with the major step's time, 0)."""
    path = write(tmp_path, "d.yaml", """
    blocksim: 1
    blocks:
      clock: {type: TestInterruptAt, time: 0.55}
      x:     {type: Integrator}
    connections: [clock -> x]
    simulation: {stop_time: 2.0, solver: dopri5, rtol: 1.0e-10, atol: 1.0e-12, max_step: 0.01}
    log: {every: 0.1}
    """)
    sim = blocksim.Simulator(blocksim.load(path))
    with pytest.raises(KeyboardInterrupt):
        sim.run()
    r = sim.last_result
    assert r.interrupted and np.all(np.diff(r.t) > 0)
    assert 0.54 <= r.t[-1] <= 0.55 and r.t[-2] == pytest.approx(0.5)
    np.testing.assert_allclose(r["x.out"][:, 0], 0.5 * r.t ** 2, rtol=1e-9)


def test_an_interrupt_right_after_a_step_logs_the_state_of_the_time_reached(tmp_path, monkeypatch):
    """Ctrl-C landing just after the solver's step, while the major step takes in the time it
    reached (its tick and sample hits): the last sample pairs that time with its own state, not
    with the state one step ahead (seen once under SIGTERM in the test below, on CI)."""
    from blocksim.engine.scheduler import Simulation
    path = write(tmp_path, "d.yaml", """
    blocksim: 1
    blocks:
      x: {type: Integrator, x0: 1.0}
      k: {type: Gain, gain: -0.5}
    connections: [x -> k, k -> x]
    simulation: {stop_time: 10.0, solver: rk4, step: 0.1, mode: interpreted}
    log: {every: 1.0}
    """)
    calls = {"n": 0}
    hits_at = Simulation.hits_at

    def interrupted_at_the_25th(self, n):
        calls["n"] += 1
        if calls["n"] == 25:
            raise KeyboardInterrupt
        return hits_at(self, n)

    monkeypatch.setattr(Simulation, "hits_at", interrupted_at_the_25th)
    sim = blocksim.Simulator(blocksim.load(path))
    with pytest.raises(KeyboardInterrupt):
        sim.run()
    r = sim.last_result
    assert r.interrupted and r.t[-1] == pytest.approx(2.4)     # 24 steps of 0.1 s taken
    # rk4 on x' = -x/2: each step multiplies x by the degree-4 Taylor polynomial of exp(-h/2)
    z = -0.05
    growth = 1 + z + z ** 2 / 2 + z ** 3 / 6 + z ** 4 / 24
    np.testing.assert_allclose(r["x.out"][-1, 0], growth ** 24, rtol=1e-12)


def test_sigterm_stops_a_cli_run_as_ctrl_c_does_and_keeps_the_log(tmp_path):
    """A long run under `simulate --out`, sent SIGTERM: exit 130, one line (no traceback), and a
    saved run whose time vector rises to the time reached."""
    import signal
    import time as clock
    path = write(tmp_path, "d.yaml", """
    blocksim: 1
    blocks:
      x: {type: Integrator, x0: 1.0}
      k: {type: Gain, gain: -1.0e-6}
    connections: [x -> k, k -> x]
    simulation: {stop_time: 1.0e9, solver: rk4, step: 1.0, mode: interpreted}
    log: {every: 1000.0}
    """)
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, str(ROOT / "cli.py"), "simulate", str(path), "--out",
                             str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = clock.monotonic() + 120
    while not list(tmp_path.glob(".out.partial-*")) and clock.monotonic() < deadline:
        clock.sleep(0.1)                 # the staging folder: the command is past its start-up
    clock.sleep(5.0)                     # ... and past building the run (kernels, plan): stepping
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "interrupted at t = " in stderr
    r = blocksim.Result.load(out / "default")
    assert r.interrupted and len(r.t) > 1 and np.all(np.diff(r.t) > 0)
    np.testing.assert_allclose(r["x.out"][:, 0], np.exp(-1e-6 * r.t), rtol=1e-9)


def test_variants_and_overrides_in_a_run(tmp_path):
    path = write(tmp_path, "d.yaml", """
    blocksim: 1
    parameters: {rate: 1.0}
    blocks:
      c: {type: Constant, value: $rate}
      x: {type: Integrator}
    connections: [c -> x]
    simulation: {stop_time: 1.0, solver: rk4, step: 0.1}
    variants:
      slow: {parameters.rate: 0.5}
      off:  {c.enabled: false}
    """)
    finals = {}
    for variant in (None, "slow", "off"):
        r = blocksim.simulate(blocksim.load(path, variant=variant))
        finals[variant] = r["x.out"][-1, 0]
    assert abs(finals[None] - 1.0) < 1e-12 and abs(finals["slow"] - 0.5) < 1e-12
    assert finals["off"] == 0.0
    r = blocksim.simulate(blocksim.load(path, variant="slow", set={"parameters.rate": 3.0}))
    assert abs(r["x.out"][-1, 0] - 3.0) < 1e-12


def test_cli_simulate_out_plot_and_replot(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), "simulate",
                           str(ROOT / "examples" / "mass_spring_damper.yaml"), "--out", str(out),
                           "--plot"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert (out / "default" / "signals.npz").exists()
    assert json.loads((out / "metrics.json").read_text()) == {"default": {}}
    png = out / "position.png"
    assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "position.svg").exists()
    again = tmp_path / "figs"
    proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), "plot", str(out), "--signals",
                           "x.out", "--out", str(again)], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert (again / "signals.png").exists()


def test_cli_blocks_lists_library_with_units():
    proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), "blocks", "Integrator"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0
    assert "x0" in proc.stdout and "upper" in proc.stdout and "inputs:" in proc.stdout
    proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), "blocks", "Integratr"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "did you mean 'Integrator'" in proc.stderr


def test_stop_simulation_stops_at_its_crossing_and_at_the_start(tmp_path):
    path = write(tmp_path, "d.yaml", """
    blocksim: 1
    blocks:
      clock: {type: Clock}
      late:  {type: Function, expr: "u - 1.25"}
      pos:   {type: Sign}
      halt:  {type: Saturation, lower: 0.0, upper: 1.0}
      stop:  {type: StopSimulation}
    connections: [clock -> late, late -> pos, pos -> halt, halt -> stop]
    simulation: {stop_time: 5.0, solver: dopri5}
    log: {signals: [clock.out], every: 0.5}
    """)
    r = blocksim.simulate(blocksim.load(path))
    assert r.stopped_by == "stop" and abs(r.t[-1] - 1.25) < 1e-9
    np.testing.assert_array_equal(r.t[:-1], [0.0, 0.5, 1.0])
    r = blocksim.simulate(blocksim.load(path, set={"late.expr": "u + 1.0"}))
    assert r.stopped_by == "stop" and list(r.t) == [0.0]


def test_an_unwired_optional_input_reads_zeros_of_its_declared_width():
    """The Manipulator's unwired wrench input f_ext reads a (B, 6) zero wrench, not zeros as wide
    as its widest output (the 12-element pose)."""
    from pathlib import Path

    from blocksim.engine.simulate import make_simulation
    w1 = Path(__file__).resolve().parents[1] / "examples" / "two_link_pid_vs_ff.yaml"
    d = blocksim.load(w1, set={"simulation.mode": "interpreted"})
    sim = make_simulation(d.compile({"pid.Kp": [[100.0, 50.0]] * 3}), d.settings,
                          d.log_settings)
    plant = sim.cd.blocks["plant"]
    _, _, u, _, _, _ = sim.views["plant"]
    wrench = u[plant.input_names().index("f_ext")]
    assert "f_ext" not in plant.connected and wrench.shape == (3, 6) and not wrench.any()


def test_a_reader_that_leaves_early_gets_no_traceback():
    """`blocksim blocks | head -1`: the reader has gone when the catalogue is written; the command
    stops quietly with 141, as Unix tools do on SIGPIPE."""
    proc = subprocess.Popen([sys.executable, str(ROOT / "cli.py"), "blocks", "PID"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()                           # before the command writes anything
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141
    assert err == ""


def test_a_failing_variant_is_reported_and_the_others_are_saved(tmp_path):
    """Variant 'bad' makes x' = 1000 x, which overflows within the 50 s (a divergence error);
    'good' and 'also_good' must still run, be saved and be in the table."""
    diagram = tmp_path / "d.yaml"
    diagram.write_text(dedent("""\
        blocksim: 1
        name: decay
        blocks:
          x: {type: Integrator, x0: 1.0}
          k: {type: Gain, gain: -1.0}
        connections: [x -> k, k -> x]
        simulation: {stop_time: 50.0, solver: rk4, step: 0.01}
        metrics: [{name: last, kind: final_value, signal: x.out}]
        variants:
          good: {}
          bad: {k.gain: 1000.0}
          also_good: {k.gain: -2.0}
        """))
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), "simulate", str(diagram), "--out",
                           str(out)], capture_output=True, text=True)
    assert proc.returncode == 1
    assert "error: [bad]" in proc.stderr and "Traceback" not in proc.stderr
    assert "1 of 3 variants failed: bad; the others (good, also_good) ran and were saved" \
        in proc.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics) == {"good", "also_good"}
    np.testing.assert_allclose(metrics["good"]["last"], [np.exp(-50.0)], rtol=1e-6)
    assert (out / "also_good" / "signals.npz").is_file() and not (out / "bad").exists()


def test_a_long_compilation_is_never_silent(monkeypatch, capsys):
    """A compilation that lasts past COMPILE_NOTICE_AFTER says what it compiles (and, the first
    time, why and for how long), then how long it took; a quick one says nothing."""
    import time as clock

    from blocksim.blocks import _kernels
    monkeypatch.setattr(_kernels, "COMPILE_NOTICE_AFTER", 0.05)
    monkeypatch.setattr(_kernels, "_compile_notices", {"told": False, "since": None})

    class Kernel:
        def py_func(self):
            pass
    fn = Kernel()                 # as a numba dispatcher: a py_func with a module and a name
    with _kernels.compile_notice(fn):
        pass
    _kernels.compile_notice_done()
    assert capsys.readouterr().err == ""
    for first in (True, False):
        with _kernels.compile_notice(fn):
            clock.sleep(0.3)
        _kernels.compile_notice_done()
        err = capsys.readouterr().err
        assert "note: compiling" in err and "Kernel.py_func" in err
        assert ("compiles the blocks' kernels once" in err) == first
        assert "note: kernels compiled and cached in 0 s" in err


def test_degrees_written_as_radians_are_warned_about_at_their_line(tmp_path):
    """An amplitude of 30 'rad' (degrees meant) warns, naming file, line, block and parameter;
    angles within a turn (W1's) and phases do not."""
    import warnings

    from blocksim.errors import BlocksimWarning
    path = tmp_path / "deg.yaml"
    path.write_text("blocksim: 1\nname: degrees by mistake\nblocks:\n"
                    "  ref: {type: CosineRamp, amplitude: [30.0, 0.5], period: 2}\n"
                    "  s: {type: Sine, phase: 20.0}\n"
                    "  t: {type: Terminator}\n  u: {type: Terminator}\n"
                    "connections: [ref.q -> t, s -> u]\n"
                    "simulation: {stop_time: 0.1, solver: rk4, step: 0.01}\n")
    with pytest.warns(BlocksimWarning) as caught:
        blocksim.load(path).compile()
    assert [str(w.message) for w in caught] == [
        f"{path}:4: block 'ref', parameter 'amplitude': 30 rad is more than a full turn (2 pi); "
        "angles are in rad: for degrees write ${radians(30)}"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", BlocksimWarning)
        blocksim.load(ROOT / "examples" / "two_link_pid_vs_ff.yaml").compile()
    proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), "check", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and f"warning: {path}:4: block 'ref'" in proc.stderr
