"""Engine semantics against analytic answers: integration accuracy, exact sample hits, multi-rate
agreement between solvers, batch runs equal to single runs, and the logged time grid."""
from fractions import Fraction
from textwrap import dedent

import numpy as np
import pytest

import blocksim
from blocksim.blocks.base import Block, Param, register

MSD = """
blocksim: 1
name: mass-spring-damper
parameters: {k: 4.0, c: 0.4}
blocks:
  v:      {type: Integrator, x0: 0.0}
  x:      {type: Integrator, x0: 1.0}
  spring: {type: Gain, gain: "${-k}"}
  damper: {type: Gain, gain: "${-c}"}
  force:  {type: Sum, signs: "++"}
connections:
  - v -> x
  - x -> spring
  - v -> damper
  - spring -> force.in1
  - damper -> force.in2
  - force -> v
simulation: {stop_time: 10, solver: dop853, rtol: 1.0e-10, atol: 1.0e-12}
log: {signals: [x.out, v.out], every: 0.01}
"""


def write(tmp_path, text, name="d.yaml"):
    path = tmp_path / name
    path.write_text(dedent(text))
    return path


def msd_exact(t, k=4.0, c=0.4, x0=1.0):
    """x(t) of x'' + c x' + k x = 0, x(0) = x0, x'(0) = 0 (underdamped)."""
    zeta_wn = c / 2
    wd = np.sqrt(k - zeta_wn ** 2)
    return x0 * np.exp(-zeta_wn * t) * (np.cos(wd * t) + zeta_wn / wd * np.sin(wd * t))


def test_mass_spring_damper_matches_analytic_solution_with_dop853(tmp_path):
    r = blocksim.simulate(blocksim.load(write(tmp_path, MSD)))
    assert len(r.t) == 1001 and r.t[0] == 0.0 and r.t[-1] == 10.0
    np.testing.assert_allclose(r.t, np.arange(1001) / 100, rtol=0, atol=0)
    err = np.max(np.abs(r["x.out"][:, 0] - msd_exact(r.t)))
    assert err < 1e-8


def test_fixed_step_rk4_converges_at_fourth_order_through_the_diagram(tmp_path):
    path = write(tmp_path, MSD)
    errors = []
    for h in (0.02, 0.01):
        r = blocksim.simulate(blocksim.load(path, set={"simulation.solver": "rk4",
                                                        "simulation.step": h,
                                                        "log.every": 0.02}))
        errors.append(np.max(np.abs(r["x.out"][:, 0] - msd_exact(r.t))))
    order = np.log2(errors[0] / errors[1])
    assert abs(order - 4) < 0.3


class HitRecorder(Block):
    """Test block: remembers the times of its discrete updates (instrumentation only)."""

    type_name = "TestHitRecorder"
    summary = "records its update times (tests only)"
    params = {"period": Param(units="s", kind="time", role="period"),
              "offset": Param(0, "s", kind="time", role="offset")}
    inputs = ()
    sample = "discrete"
    hits: list = []

    def resolve_widths(self, in_widths):
        return {"out": 1}

    def configure(self, in_widths, out_widths):
        self.n_xd = 1

    def output(self, t, xc, xd, u, y):
        y[0][...] = xd

    def update(self, t, xc, xd, u):
        HitRecorder.hits.append(t)
        xd += 1.0


register(HitRecorder)

COUNTER = """
blocksim: 1
blocks:
  counter: {type: TestHitRecorder, period: 0.1, offset: 0.05}
  plant:   {type: Integrator, x0: 0.0}
  one:     {type: Constant, value: 1.0}
connections:
  - one -> plant
simulation: {stop_time: 10.0, solver: SOLVER, step: 0.01}
log: {signals: [counter.out], every: 0.5}
"""


@pytest.mark.parametrize("solver", ["rk4", "dopri5", "euler"])
def test_discrete_counter_hits_exact_rational_times(tmp_path, solver):
    HitRecorder.hits = []
    r = blocksim.simulate(blocksim.load(write(tmp_path, COUNTER.replace("SOLVER", solver))))
    hits = HitRecorder.hits
    assert len(hits) == 100
    expected = [float(Fraction(k, 10) + Fraction(1, 20)) for k in range(100)]
    assert hits == expected          # each hit is the correctly rounded rational, never accumulated
    # logged at 0, 0.5, ..., 10: the output is held from the last hit, where it showed the state
    # before that hit's update (5k - 1 after 5k hits); before the first hit (t < 0.05) it is 0
    np.testing.assert_array_equal(r.t, [float(Fraction(k, 2)) for k in range(21)])
    np.testing.assert_array_equal(r["counter.out"][:, 0], [0] + [5 * k - 1 for k in range(1, 21)])


MULTIRATE = """
blocksim: 1
name: multi-rate loop
blocks:
  ref:    {type: Sine, amplitude: 1.0, frequency: 2.0}
  err:    {type: Sum, signs: "+-"}
  sample: {type: ZeroOrderHold, period: 0.001}
  ctrl:   {type: DiscreteIntegrator, period: 0.001, x0: 0.0}
  kp:     {type: Gain, gain: 20.0}
  u:      {type: Sum, signs: "++"}
  filt:   {type: UnitDelay, period: 0.0001}
  plant:  {type: TransferFunction, num: [1.0], den: [0.05, 1.0]}
  vel:    {type: Integrator, x0: 0.0}
  damp:   {type: Gain, gain: -3.0}
connections:
  - ref -> err.in1
  - plant -> err.in2
  - err -> sample
  - sample -> ctrl
  - sample -> kp
  - kp -> u.in1
  - ctrl -> u.in2
  - u -> filt
  - filt -> plant
  - plant -> damp
  - damp -> vel
simulation: {stop_time: 1.0, solver: SOLVER, step: 0.0001, rtol: 1.0e-10, atol: 1.0e-12}
log: {signals: [plant.out, ctrl.out, filt.out, vel.out], every: 0.001}
"""


def test_multirate_rk4_and_dopri5_agree(tmp_path):
    runs = {}
    for solver in ("rk4", "dopri5"):
        path = write(tmp_path, MULTIRATE.replace("SOLVER", solver), f"{solver}.yaml")
        runs[solver] = blocksim.simulate(blocksim.load(path))
    a, b = runs["rk4"], runs["dopri5"]
    np.testing.assert_array_equal(a.t, b.t)
    assert len(a.t) == 1001
    for name in ("plant.out", "ctrl.out", "filt.out", "vel.out"):
        scale = np.max(np.abs(a[name])) + 1e-12
        assert np.max(np.abs(a[name] - b[name])) / scale < 1e-8, name
    # the loop really tracks: the plant follows the 2 Hz reference
    assert np.max(np.abs(a["plant.out"][500:, 0] - np.sin(4 * np.pi * a.t[500:]))) < 0.3


def test_batch_equals_single_runs_fixed_step(tmp_path):
    path = write(tmp_path, MSD.replace("solver: dop853", "solver: rk4, step: 0.001"))
    d = blocksim.load(path)
    ks = np.linspace(1.0, 9.0, 64)
    rb = blocksim.simulate(d, batch={"spring.gain": list(-ks)})
    assert rb["x.out"].shape == (64, 1001, 1)
    for m in (0, 17, 63):
        single = blocksim.simulate(blocksim.load(path, set={"spring.gain": float(-ks[m])}))
        assert np.max(np.abs(rb["x.out"][m] - single["x.out"])) <= 1e-12


def test_batch_equals_single_runs_adaptive_to_tolerance(tmp_path):
    path = write(tmp_path, MSD.replace("rtol: 1.0e-10, atol: 1.0e-12", "rtol: 1.0e-8, atol: 1.0e-10"))
    d = blocksim.load(path)
    ks = np.linspace(1.0, 9.0, 64)
    rb = blocksim.simulate(d, batch={"parameters.k": list(ks)})
    for m in (0, 40, 63):
        exact = msd_exact(rb.t, k=ks[m])
        assert np.max(np.abs(rb["x.out"][m, :, 0] - exact)) < 1e-6
        single = blocksim.simulate(blocksim.load(path, set={"parameters.k": float(ks[m])}))
        assert np.max(np.abs(rb["x.out"][m] - single["x.out"])) < 1e-6


def test_purely_discrete_diagram_runs(tmp_path):
    path = write(tmp_path, """
    blocksim: 1
    blocks:
      one:   {type: Constant, value: 0.5}
      acc:   {type: DiscreteIntegrator, period: 0.25, x0: 0.0}
    connections: [one -> acc]
    simulation: {stop_time: 2.0}
    log: {every: 0.25}
    """)
    r = blocksim.simulate(blocksim.load(path))
    np.testing.assert_allclose(r.t, np.arange(9) * 0.25)
    # forward Euler: y[k] = 0.25 * 0.5 * k
    np.testing.assert_allclose(r["acc.out"][:, 0], 0.125 * np.arange(9), rtol=0, atol=1e-15)


def test_feeding_back_a_state_output_is_not_an_algebraic_loop(tmp_path):
    """A block whose one output reads state and another reads its input is split, not a loop."""
    path = write(tmp_path, """
    blocksim: 1
    blocks:
      plant: {type: StateSpace, A: [[0, 1], [-1, 0]], B: [[0], [1]], C: [[1, 0]], D: [[0]], x0: [1, 0]}
      k:     {type: Gain, gain: -0.5}
    connections: [plant -> k, k -> plant]
    simulation: {stop_time: 1.0, solver: rk4, step: 0.01}
    """)
    r = blocksim.simulate(blocksim.load(path))
    assert np.isfinite(r["plant.out"]).all()


def test_result_save_writes_signals_metrics_and_metadata(tmp_path):
    r = blocksim.simulate(blocksim.load(write(tmp_path, MSD)))
    out = r.save(tmp_path / "run")
    with np.load(out / "signals.npz") as npz:
        np.testing.assert_array_equal(npz["t"], r.t)
        np.testing.assert_array_equal(npz["x.out"], r["x.out"])
    header = (out / "signals.csv").read_text().splitlines()[0]
    assert header == "t,x.out[0],v.out[0]"
    import json
    meta = json.loads((out / "run.json").read_text())
    assert meta["numpy"] == np.__version__ and meta["stats"]["nsteps"] > 0
    again = blocksim.Result.load(out)
    np.testing.assert_array_equal(again["v.out"], r["v.out"])


LIMITED = """
blocksim: 1
blocks:
  clock: {type: Clock}
  rate:  {type: Function, expr: "cos(u)"}
  x:     {type: Integrator, x0: 0.0, upper: 0.5}
connections: [clock -> rate, rate -> x]
simulation: {stop_time: 2.5, solver: SOLVER, rtol: 1.0e-10, atol: 1.0e-12}
log: {signals: [x.out], every: 0.01}
"""


@pytest.mark.parametrize("solver", ["dopri5", "dop853", "rk23"])
def test_integrator_limit_event_time_is_located_exactly(tmp_path, solver):
    """x' = cos t from 0 reaches its upper limit 0.5 at t = pi/6, stays there while cos t > 0, and
    leaves at t = pi/2: x = 0.5 + sin t - 1 afterwards."""
    r = blocksim.simulate(blocksim.load(write(tmp_path, LIMITED.replace("SOLVER", solver))))
    hits = [e.t for e in r.events if e.block == "x"]
    assert hits and abs(hits[0] - np.pi / 6) < 1e-9
    t, x = r.t, r["x.out"][:, 0]
    np.testing.assert_allclose(x[t <= np.pi / 6], np.sin(t[t <= np.pi / 6]), atol=1e-8)
    held = (t > np.pi / 6) & (t < np.pi / 2)
    assert np.all(x[held] == 0.5)
    after = t > np.pi / 2 + 1e-6
    np.testing.assert_allclose(x[after], 0.5 + np.sin(t[after]) - 1.0, atol=1e-8)


HELD_FROM_AN_OFFSET = """
blocksim: 1
blocks:
  one:  {type: Constant, value: 1.0}
  hold: {type: ZeroOrderHold, period: 0.1, offset: 0.05}
  area: {type: Integrator, x0: 0.0}
  loop: {type: CurrentController, axes: q, Kp: 0.5, Ki: 40.0, period: 0.01}
connections: [one -> hold, hold -> area, one -> loop.iq_ref, area -> loop.iq]
simulation: {stop_time: 0.5, solver: rk4, step: 0.01, mode: MODE}
log: {signals: [area.out, loop.vq]}
"""


@pytest.mark.parametrize("mode", ["interpreted", "compiled"])
def test_every_run_of_a_simulator_starts_from_zero_as_the_first(tmp_path, mode):
    """A second run() gives the first run's numbers, where a block holds a discrete state it has
    no initial value for (the current loop's integral z, Block.initial_state left as it is) and a
    signal is first computed at a later hit (the hold's output before t = 0.05 s is 0).

    Analytic: area = (t - 0.05) for t >= 0.05; the integral z of the loop, from z = 0, at its hits
    t_k = 0.01 k, is the sum of 0.01 (1 - area(t_j)) over j < k, and vq = Kp e + Ki z."""
    path = write(tmp_path, HELD_FROM_AN_OFFSET.replace("MODE", mode))
    sim = blocksim.Simulator(blocksim.load(path))
    first, second = sim.run(), sim.run()
    t = first.t
    area = np.clip(t - 0.05, 0.0, None)
    np.testing.assert_allclose(first["area.out"][:, 0], area, atol=1e-12)
    e = 1.0 - area
    z = np.concatenate([[0.0], np.cumsum(0.01 * e)[:-1]])
    np.testing.assert_allclose(first["loop.vq"][:, 0], 0.5 * e + 40.0 * z, atol=1e-9)
    for name in ("area.out", "loop.vq"):
        np.testing.assert_array_equal(second[name], first[name])
