"""Compiled mode for the actuator, FOC and sensor blocks: every block type of those modules has the
kernels compiled mode needs, small diagrams that use them give the interpreted run's numbers in
compiled mode (fixed step: the whole loop compiled, or the Python loop with compiled functions when
there are zero crossings; and adaptive), and W2 (examples/two_link_foc.yaml) runs compiled.

Each distinct diagram costs a numba compile of its generated module on first sight, so many blocks
share each diagram and the cache folder is shared by the tests of this file."""
from __future__ import annotations

import re
from pathlib import Path
from textwrap import dedent

import numpy as np
import pytest

import blocksim
from blockcheck import BlockCheck
from modecheck import assert_same, signal_changes
from blocksim.blocks import REGISTRY
from blocksim.engine.numba_backend import _import_name, missing_kernels
from blocksim.engine.simulate import make_simulation

MODULES = {f"blocksim.blocks.{m}" for m in ("actuators", "friction", "foc", "sensors")}
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# no zero crossings: a fixed-step compiled run executes its whole loop in compiled code.
# A dq current loop on a PMSM (decoupled, voltage circle reached), a q-axis loop on a DC motor, the
# FOC transforms around them, smooth and viscous friction, LuGre, and the sensors.
ELECTRIC = """
blocksim: 1
blocks:
  qd:    {type: Sine, amplitude: [0.8, -0.5], frequency: 3.0, bias: 0.1}
  q:     {type: Integrator, x0: [0.2, -0.1]}
  tau:   {type: Sine, amplitude: [1.5, 0.7], frequency: 2.0, phase: 0.4}
  t2c:   {type: TorqueToCurrent, N: [50, 80], Kt: 0.1, with_id: true}
  t2cq:  {type: TorqueToCurrent, N: 100, Kt: [0.1, 0.2]}
  pi:    {type: CurrentController, period: 1.0e-3, bandwidth: 600, R: 0.8, Ld: 2.0e-3, Lq: 3.0e-3,
          psi: 0.05, p: 4, N: [50, 80], decouple: true, v_max: 2.0}
  motor: {type: PMSM, R: 0.8, Ld: 2.0e-3, Lq: 3.0e-3, psi: 0.05, p: 4, N: [50, 80], iq0: 0.1}
  piq:   {type: CurrentController, axes: q, period: 5.0e-4, Kp: 3.14, Ki: 3142, psi: 0.1, N: 100,
          decouple: true, v_max: 4.0}
  dc:    {type: DCMotor, R: 0.5, L: 0.5e-3, Kt: [0.1, 0.2], N: 100}
  ipark: {type: InversePark}
  iclk:  {type: InverseClarke}
  clk:   {type: Clarke}
  park:  {type: Park}
  svm:   {type: SVPWM, vdc: 3.0}
  fr:    {type: JointFriction, model: stribeck, Fc: [0.5, 0.3], Fs: [0.8, 0.4], vs: 0.1, Fv: 0.05,
          eps: 1.0e-2}
  visc:  {type: JointFriction, model: viscous, Fv: [0.2, 0.1]}
  lugre: {type: LuGreFriction, sigma0: 1000, sigma1: 3, sigma2: 0.05, Fc: [0.5, 0.3],
          Fs: [0.8, 0.4], vs: 0.05, z0: [1.0e-4, 0]}
  enc:   {type: Encoder, counts: 1024, gear: [1, 50]}
  encn:  {type: Encoder, counts: 2048, rounding: nearest}
  noise: {type: MeasurementNoise, period: 2.0e-3, variance: [1.0e-4, 4.0e-4], mean: 0.01, seed: 3}
  dly:   {type: SampleDelay, period: 1.0e-3, delay: 3, x0: [0.5, -0.5]}
connections:
  - qd -> q
  - tau -> t2c
  - t2c.id -> pi.id_ref
  - t2c.iq -> pi.iq_ref
  - motor.id -> pi.id
  - motor.iq -> pi.iq
  - qd -> pi.qd
  - pi.vd -> motor.vd
  - pi.vq -> motor.vq
  - qd -> motor.qd
  - q -> motor.q
  - tau -> t2cq
  - t2cq -> piq.iq_ref
  - dc.i -> piq.iq
  - qd -> piq.qd
  - piq -> dc.v
  - qd -> dc.qd
  - pi.vd -> ipark.d
  - pi.vq -> ipark.q
  - motor.theta_e -> ipark.theta_e
  - ipark.alpha -> iclk.alpha
  - ipark.beta -> iclk.beta
  - iclk.a -> clk.a
  - iclk.b -> clk.b
  - iclk.c -> clk.c
  - clk.alpha -> park.alpha
  - clk.beta -> park.beta
  - motor.theta_e -> park.theta_e
  - ipark.alpha -> svm.v_alpha
  - ipark.beta -> svm.v_beta
  - qd -> fr
  - qd -> visc
  - qd -> lugre
  - q -> enc
  - q -> encn
  - q -> noise
  - q -> dly
simulation: {stop_time: 0.25, solver: rk4, step: 1.0e-4}
log: {every: 1.0e-3}
"""

# zero crossings: exact-sign Coulomb friction, Karnopp's band edges and static limit, the inverter's
# voltage circle (both frames); integrators give the adaptive solver continuous states
CROSSINGS = """
blocksim: 1
blocks:
  qd:    {type: Sine, amplitude: [0.8, -0.5], frequency: 3.0, bias: 0.1}
  ta:    {type: Sine, amplitude: [1.0, 0.5], frequency: 2.0}
  vd:    {type: Sine, amplitude: 20.0, frequency: 4.0}
  vq:    {type: Sine, amplitude: [15.0, 10.0], frequency: 3.0, phase: 1.0}
  fr:    {type: JointFriction, model: coulomb, Fc: [0.5, 0.3], Fv: 0.1}
  kp:    {type: KarnoppFriction, Fc: [0.5, 0.3], Fs: 0.7, vs: 0.2, dv: 0.05}
  inv:   {type: Inverter, vdc: 24.0}
  invab: {type: Inverter, vdc: [24.0, 30.0], frame: alphabeta}
  e1:    {type: Integrator}
  e2:    {type: Integrator}
  e3:    {type: Integrator}
connections:
  - qd -> fr
  - qd -> kp.qd
  - ta -> kp.tau_applied
  - vd -> inv.vd_ref
  - vq -> inv.vq_ref
  - vq -> invab.v_alpha_ref
  - vd -> invab.v_beta_ref
  - fr.tau -> e1
  - kp.tau -> e2
  - inv.vq -> e3
simulation: {stop_time: 0.6, solver: rk4, step: 1.0e-3}
"""

DIAGRAMS = {"electric": ELECTRIC, "crossings": CROSSINGS}


pytestmark = pytest.mark.usefixtures("compiled_cache")


def run(tmp_path, text, mode, **sets):
    path = tmp_path / "d.yaml"
    path.write_text(dedent(text))
    overrides = {"simulation.mode": mode}
    overrides.update(sets)
    return blocksim.simulate(blocksim.load(path, set=overrides))


# ---- every block type has kernels ---------------------------------------------------------------

CONFIGS = {
    "JointFriction": [{"model": "viscous", "Fv": 0.1}, {"Fc": 0.5},
                      {"model": "stribeck", "Fc": 0.5, "Fs": 0.8, "vs": 0.1, "eps": 1e-3}],
    "KarnoppFriction": [{"Fc": 0.5}],
    "LuGreFriction": [{"sigma0": 1e3, "Fc": 0.5}],
    "DCMotor": [{"R": 0.5, "L": 1e-3, "Kt": 0.1}, {"R": 0.5, "L": 1e-3, "Kt": 0.1, "J_load": 0.01}],
    "PMSM": [{"R": 0.5, "Ld": 1e-3, "psi": 0.02}, {"R": 0.5, "Ld": 1e-3, "Lq": 2e-3, "Kt": 0.1}],
    "TorqueToCurrent": [{"Kt": 0.1}, {"Kt": 0.1, "with_id": True}],
    "CurrentController": [{"period": 1e-4, "Kp": 1.0, "Ki": 10.0},
                          {"period": 1e-4, "axes": "q", "Kp": 1.0, "Ki": 10.0},
                          {"period": 1e-4, "bandwidth": 500.0, "R": 0.5, "L": 1e-3}],
    "Inverter": [{"vdc": 24.0}, {"vdc": 24.0, "frame": "alphabeta"}],
    "SVPWM": [{"vdc": 24.0}],
    "Clarke": [{}], "InverseClarke": [{}], "Park": [{}], "InversePark": [{}],
    "Encoder": [{"counts": 1024}, {"counts": 1024, "rounding": "nearest"}],
    "MeasurementNoise": [{"period": 1e-3}],
    "SampleDelay": [{"period": 1e-3, "delay": 2}],
}


def types_here():
    return sorted(name for name, cls in REGISTRY.items() if cls.__module__ in MODULES)


def test_every_actuator_foc_sensor_block_type_has_the_kernels_compiled_mode_needs():
    types = types_here()
    assert len(types) >= 16
    assert set(types) <= set(CONFIGS), sorted(set(types) - set(CONFIGS))
    for type_name in types:
        for params in CONFIGS[type_name]:
            blk = BlockCheck(type_name, params, in_widths=2).block
            k = blk.kernels()
            assert k is not None, f"{type_name} {params}: no kernels"
            kind = blk.sample_time().kind
            needs = ["output"]
            if blk.n_xc:
                needs.append("derivative")
            # an inherited block runs at a discrete rate when a discrete block drives it
            if kind in ("discrete", "inherited") or blk.n_xd:
                needs.append("update")
            if blk.n_zc:
                needs.append("zero_crossings")
            for part in needs:
                fn = getattr(k, part)
                assert fn is not None, f"{type_name} {params}: no compiled {part}"
                _import_name(fn)
            assert isinstance(k.params, tuple)
            assert len(k.params) <= 3, f"{type_name}: pack the parameters into one array"
            for value in k.params:
                assert isinstance(value, (np.ndarray, int, float, bool, np.integer, np.floating)), \
                    f"{type_name}: parameter {value!r} is not an array or a number"
                if isinstance(value, np.ndarray):
                    assert value.flags.writeable and value.flags.c_contiguous, type_name


def test_missing_kernels_finds_nothing_in_the_diagrams_even_at_a_discrete_rate(tmp_path):
    """The diagrams below compile with every block in compiled mode, also when a ZeroOrderHold
    makes the inherited blocks discrete."""
    used = set()
    for text in DIAGRAMS.values():
        used |= set(re.findall(r"type: (\w+)", text))
        path = tmp_path / "d.yaml"
        path.write_text(dedent(text))
        assert missing_kernels(blocksim.load(path).compile()) == []
        held = re.sub(r"(  qd: +\{type: Sine[^}]*\})", r"\1\n  zoh:   {type: ZeroOrderHold, period: 0.01}",
                      dedent(text)).replace("- qd ->", "- zoh ->").replace(
            "connections:\n", "connections:\n  - qd -> zoh\n")
        path.write_text(held)
        cd = blocksim.load(path).compile()
        assert cd.sample_times["fr"].kind == "discrete"
        assert missing_kernels(cd) == []
    assert set(types_here()) <= used, sorted(set(types_here()) - used)


# ---- compiled equals interpreted ----------------------------------------------------------------

@pytest.mark.parametrize("diagram", list(DIAGRAMS))
@pytest.mark.parametrize("solver", ["rk4", "dopri5"])
def test_compiled_equals_interpreted(tmp_path, diagram, solver):
    text = DIAGRAMS[diagram]
    a = run(tmp_path, text, "interpreted", **{"simulation.solver": solver})
    b = run(tmp_path, text, "compiled", **{"simulation.solver": solver})
    if solver == "rk4" and diagram == "electric":
        assert b.stats.get("mode") == "compiled"     # the whole loop ran in compiled code
    assert_same(a, b, 1e-12)
    for name in a.names:
        if name not in ("t2c.id", "clk.zero"):            # zero by construction
            assert signal_changes(a, name), f"{name} never changes in this diagram"
    if diagram == "electric":
        assert np.max(np.hypot(a["pi.vd"], a["pi.vq"])) == pytest.approx(2.0)   # circle reached
        assert np.max(np.abs(a["piq.vq"])) == pytest.approx(4.0)               # clamp reached
    else:
        assert [(e.block, e.index) for e in a.events] == [(e.block, e.index) for e in b.events]
        assert {e.block for e in a.events} >= {"fr", "kp", "inv", "invab"}


def test_compiled_batch_sweeps_motor_and_friction_parameters_like_interpreted(tmp_path):
    """A batch of two members (same structure and array types: the cached module is reused)."""
    path = tmp_path / "d.yaml"
    path.write_text(dedent(ELECTRIC))
    batch = {"motor.R": [0.8, 1.6], "lugre.sigma0": [1000.0, 500.0], "dc.Kt": [[0.1, 0.2], [0.3, 0.1]],
             "pi.v_max": [2.0, 1.5], "noise.mean": [0.01, -0.02]}
    runs = {mode: blocksim.simulate(blocksim.load(path, set={"simulation.mode": mode,
                                                             "simulation.stop_time": 0.05}),
                                    batch=batch) for mode in ("interpreted", "compiled")}
    a, b = runs["interpreted"], runs["compiled"]
    assert b.stats.get("mode") == "compiled"
    assert_same(a, b, 1e-12)
    for name in ("motor.iq", "lugre.tau", "dc.tau", "noise.out"):
        assert not np.array_equal(a[name][0], a[name][1]), name


def test_w2_two_link_foc_runs_compiled_and_equals_interpreted():
    d = {mode: blocksim.load(EXAMPLES / "two_link_foc.yaml",
                             set={"simulation.mode": mode, "simulation.stop_time": 0.05})
         for mode in ("interpreted", "compiled")}
    a = blocksim.simulate(d["interpreted"])
    b = blocksim.simulate(d["compiled"])
    assert b.stats.get("mode") == "compiled"
    assert_same(a, b, 1e-12)
    assert np.max(np.abs(a["act/pi.vq"])) > 0
    # the reference, feedforward and sum are read by the 1 kHz controller and hold alone: the
    # 10 kHz loop computes them at its 1 kHz hits (the reference also when it is logged)
    sim = make_simulation(d["compiled"].compile())
    when = {o.block: (o.when_rates, o.when_logged) for o in sim.plan.output_steps if o.lazy}
    assert set(when) == {"ref", "ff", "u"}
    assert when["ff"] == when["u"] and when["ref"][1] and not when["ff"][1]
