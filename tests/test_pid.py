"""PID: each term against its analytic answer, the discrete forward-Euler form bit for bit against a
hand-written loop (WORKLOADS W2's law), anti-windup measured against none, and a closed loop with
a first-order plant that removes its steady-state error only with integral action."""
from textwrap import dedent

import numpy as np
import pytest

import blocksim
from blocksim.errors import BlocksimError
from blockcheck import BlockCheck

PORTS = {"ref": 2, "meas": 2, "ref_d": 2, "meas_d": 2}


def pid(params, connected=("ref", "meas"), widths=PORTS):
    return BlockCheck("PID", params, in_widths=dict(widths), connected=list(connected))


def write(tmp_path, text, name="d.yaml"):
    path = tmp_path / name
    path.write_text(dedent(text))
    return path


def test_proportional_term_with_setpoint_weight():
    blk = pid({"Kp": [400.0, 200.0], "b": 0.5})
    out = blk.output(0.0, [1.0, -2.0], [0.25, 0.5])
    np.testing.assert_array_equal(out[0], [400.0 * (0.5 - 0.25), 200.0 * (-1.0 - 0.5)])


def test_workload_law_with_velocity_inputs():
    """tau = Kp e + Ki z + Kd ed (WORKLOADS W1) when ref_d and meas_d are wired; z' = e."""
    Kp, Ki, Kd = np.array([400.0, 200.0]), np.array([100.0, 50.0]), np.array([40.0, 20.0])
    blk = pid({"Kp": Kp.tolist(), "Ki": Ki.tolist(), "Kd": Kd.tolist()}, connected=PORTS)
    assert blk.block.n_xc == 2                      # only the integral: no derivative filter
    rng = np.random.default_rng(1)
    r, m, rd, md, z = rng.normal(size=(5, 2))
    blk.xc[0] = z
    out = blk.output(0.0, r, m, rd, md)
    np.testing.assert_allclose(out[0], Kp * (r - m) + Ki * z + Kd * (rd - md), rtol=1e-15)
    np.testing.assert_allclose(blk.derivative(0.0, r, m, rd, md)[0], r - m, rtol=1e-15)
    # derivative weight c and derivative on measurement: D = Kd (c rd - md), c = 0 for measurement
    weighted = pid({"Kp": 0.0, "Kd": Kd.tolist(), "c": 0.5}, connected=PORTS)
    np.testing.assert_allclose(weighted.output(0.0, r, m, rd, md)[0], Kd * (0.5 * rd - md), rtol=1e-15)
    on_meas = pid({"Kp": 0.0, "Kd": Kd.tolist(), "derivative_on": "measurement"}, connected=PORTS)
    np.testing.assert_allclose(on_meas.output(0.0, r, m, rd, md)[0], -Kd * md, rtol=1e-15)


CONSTANT_ERROR = """
blocksim: 1
blocks:
  ref:  {type: Constant, value: [1.0, -0.5]}
  meas: {type: Constant, value: [0.25, 0.5]}
  pid:  {type: PID, Kp: [2.0, 3.0], Ki: [100.0, 50.0]}
connections: [ref -> pid.ref, meas -> pid.meas]
simulation: {stop_time: 1.0, solver: SOLVER, step: 0.01}
log: {signals: [pid.out], every: 0.01}
"""


@pytest.mark.parametrize("solver", ["euler", "rk4"])
def test_integral_of_a_constant_error_grows_linearly(tmp_path, solver):
    """e0 constant: u = Kp e0 + Ki e0 t, exact with any fixed-step solver (z' is constant)."""
    r = blocksim.simulate(blocksim.load(write(tmp_path, CONSTANT_ERROR.replace("SOLVER", solver))))
    e0, Kp, Ki = np.array([0.75, -1.0]), np.array([2.0, 3.0]), np.array([100.0, 50.0])
    np.testing.assert_allclose(r["pid.out"], Kp * e0 + Ki * e0 * r.t[:, None], rtol=1e-13, atol=1e-12)


RAMP = """
blocksim: 1
blocks:
  ref:  {type: Ramp, slope: 2.0}
  zero: {type: Constant, value: 0.0}
  pid:  {type: PID, Kp: 0.0, Kd: 0.5, N: 20.0}
connections: [ref -> pid.ref, zero -> pid.meas]
simulation: {stop_time: 1.0, solver: dopri5, rtol: 1.0e-11, atol: 1.0e-13}
log: {signals: [pid.out], every: 0.01}
"""


def test_filtered_derivative_of_a_ramp_settles_to_kd_times_slope(tmp_path):
    """D = Kd N s/(s + N) applied to slope t, filter from 0: Kd slope (1 - exp(-N t))."""
    r = blocksim.simulate(blocksim.load(write(tmp_path, RAMP)))
    expected = 0.5 * 2.0 * (1 - np.exp(-20.0 * r.t))
    np.testing.assert_allclose(r["pid.out"][:, 0], expected, atol=1e-9)
    tau = 1 / 20.0                                     # time constant 1/N: 63 % after one
    assert abs(np.interp(tau, r.t, r["pid.out"][:, 0]) - 1.0 * (1 - np.exp(-1))) < 1e-9


def test_discrete_methods_on_a_constant_error():
    """e0 constant, Ki = 1: forward y[k] = Ts e0 k, backward Ts e0 (k + 1), trapezoidal Ts e0 (k + 1/2)."""
    widths = {"ref": 1, "meas": 1, "ref_d": 1, "meas_d": 1}
    k = np.arange(6)
    for method, shift in (("forward", 0.0), ("backward", 1.0), ("trapezoidal", 0.5)):
        blk = pid({"Kp": 0.0, "Ki": 1.0, "period": 0.5, "method": method}, widths=widths)
        ys = blk.run_discrete([(2.0, 0.0)] * len(k))[:, 0, 0]
        np.testing.assert_allclose(ys, 0.5 * 2.0 * (k + shift), rtol=1e-15)


@pytest.mark.parametrize("method", ["forward", "backward", "trapezoidal"])
def test_discrete_filtered_derivative_of_a_ramp(method):
    """v[k] = s Ts k: D follows the hand-written filter recursion and settles to Kd s."""
    widths = {"ref": 1, "meas": 1, "ref_d": 1, "meas_d": 1}
    Ts, N, Kd, s = 0.01, 20.0, 0.5, 2.0
    blk = pid({"Kp": 0.0, "Kd": Kd, "N": N, "period": Ts, "filter_method": method}, widths=widths)
    n = 400
    ys = blk.run_discrete([(s * Ts * k, 0.0) for k in range(n)])[:, 0, 0]
    # hand-written filter: d = N (v - g) / (1 + w N Ts), g += Ts d, w = 0, 1, 1/2
    g, ref = 0.0, []
    w = {"forward": 0.0, "backward": 1.0, "trapezoidal": 0.5}[method]
    for k in range(n):
        d = N * (s * Ts * k - g) / (1 + w * N * Ts)
        ref.append(Kd * d)
        g += Ts * d
    np.testing.assert_allclose(ys, ref, rtol=1e-12, atol=1e-15)
    assert abs(ys[-1] - Kd * s) < 1e-9                 # settles to Kd * slope


DISCRETE_LOOP = """
blocksim: 1
blocks:
  ref:   {type: Sine, amplitude: 1.0, frequency: 1.5}
  refd:  {type: Sine, amplitude: 9.42477796076938, frequency: 1.5, phase: 1.5707963267948966}
  pid:   {type: PID, Kp: 8.0, Ki: 30.0, Kd: 0.4, period: 0.01}
  plant: {type: DiscreteStateSpace, A: [[0.9]], B: [[0.05]], C: [[1.0]], D: [[0.0]], period: 0.01}
connections: [ref -> pid.ref, refd -> pid.ref_d, plant -> pid.meas, pid -> plant]
simulation: {stop_time: 2.0, solver: rk4, step: 0.01}
log: {signals: [ref.out, refd.out, pid.out, plant.out], every: 0.01}
"""


def test_discrete_forward_euler_equals_a_hand_written_loop_bit_for_bit(tmp_path):
    """u[k] = Kp e[k] + Ki z[k] + Kd ed[k], z[k+1] = z[k] + Ts e[k] (W2's law), in a loop."""
    r = blocksim.simulate(blocksim.load(write(tmp_path, DISCRETE_LOOP)))
    Kp, Ki, Kd, Ts = 8.0, 30.0, 0.4, 0.01
    x = z = 0.0
    us, ys = [], []
    for k in range(len(r.t)):
        y = 1.0 * x
        e = r["ref.out"][k, 0] - y
        u = Kp * e + Ki * z + Kd * (r["refd.out"][k, 0] - 0.0)
        us.append(u)
        ys.append(y)
        z = z + Ts * e
        x = 0.9 * x + 0.05 * u
    np.testing.assert_array_equal(r["pid.out"][:, 0], us)
    np.testing.assert_array_equal(r["plant.out"][:, 0], ys)


TRACKING = """
blocksim: 1
blocks:
  ref:  {type: SineTrajectory, amplitude: [0.5, 0.3], frequency: [1.0, 0.5]}
  arm:  {type: SineTrajectory, amplitude: [0.45, 0.35], frequency: [1.1, 0.45], phase: [0.1, -0.2]}
  pid:  {type: PID, Kp: [400, 200], Ki: [100, 50], Kd: [40, 20], period: 0.001, offset: 0.0005}
connections: [ref.q -> pid.ref, ref.qd -> pid.ref_d, arm.q -> pid.meas, arm.qd -> pid.meas_d]
simulation: {stop_time: 0.5, solver: rk4, step: 0.0005, mode: MODE}
log: {signals: [ref.q, ref.qd, arm.q, arm.qd, pid.out], every: 0.0005}
"""


@pytest.mark.parametrize("mode", ["interpreted", "compiled"])
def test_discrete_pid_with_velocity_inputs_bit_for_bit_in_both_modes(tmp_path, mode):
    """W2's controller on two joints, sampled at offset 0.5 ms of a 1 ms period: the hand loop on
    the logged inputs gives the same torques bit for bit, held between hits (0 before the first)."""
    r = blocksim.simulate(blocksim.load(write(tmp_path, TRACKING.replace("MODE", mode), f"{mode}.yaml")))
    Kp, Ki, Kd, Ts = np.array([400.0, 200.0]), np.array([100.0, 50.0]), np.array([40.0, 20.0]), 0.001
    z = np.zeros(2)
    held = np.zeros(2)
    expected = []
    for k in range(len(r.t)):
        if k % 2 == 1:                                   # hits at 0.5 ms, 1.5 ms, ...
            e = r["ref.q"][k] - r["arm.q"][k]
            held = Kp * e + Ki * z + Kd * (r["ref.qd"][k] - r["arm.qd"][k])
            z = z + Ts * e
        expected.append(held)
    np.testing.assert_array_equal(r["pid.out"], np.array(expected))


def test_discrete_output_is_held_between_hits(tmp_path):
    text = DISCRETE_LOOP.replace("every: 0.01", "every: 0.002")
    text = text.replace("step: 0.01", "step: 0.002")
    r = blocksim.simulate(blocksim.load(write(tmp_path, text)))
    u = r["pid.out"][:, 0].reshape(-1)[:1000].reshape(200, 5)
    assert np.all(u == u[:, :1]) and np.any(np.diff(u[:, 0]) != 0)


WINDUP = """
blocksim: 1
blocks:
  ref:   {type: Step, time: 3.0, initial: 2.0, final: 0.5}
  pid:   {type: PID, Kp: 2.0, Ki: 4.0, upper: 1.0, lower: -1.0, antiwindup: AW}
  plant: {type: TransferFunction, num: [1.0], den: [1.0, 1.0]}
connections: [ref -> pid.ref, plant -> pid.meas, pid -> plant]
simulation: {stop_time: 12.0, solver: rk4, step: 0.005}
log: {signals: [pid.out, plant.out], every: 0.01}
"""


def settle_time(t, y, target, band, after):
    """First time after `after` from which |y - target| stays within band (s)."""
    outside = np.nonzero((t > after) & (np.abs(y - target) > band))[0]
    return t[outside[-1] + 1] - after if len(outside) else 0.0


def test_clamping_stops_the_integrator_while_saturated_and_recovers_faster(tmp_path):
    runs = {aw: blocksim.simulate(blocksim.load(write(tmp_path, WINDUP.replace("AW", aw), f"{aw}.yaml")))
            for aw in ("none", "clamping")}
    for r in runs.values():                    # the plant cannot reach 2: saturated until t = 3
        assert np.all(runs["none"]["pid.out"][(r.t > 0) & (r.t < 3)] == 1.0)
    t = runs["none"].t
    times = {aw: settle_time(t, r["plant.out"][:, 0], 0.5, 0.02, 3.0) for aw, r in runs.items()}
    # measured: with windup, Ki z ~ 4 * 1.9 t has to unwind through a long undershoot
    assert times["clamping"] < 0.5 * times["none"], times
    leave = {aw: t[np.nonzero((t > 3.0) & (r["pid.out"][:, 0] < 1.0))[0][0]] - 3.0
             for aw, r in runs.items()}
    assert leave["clamping"] <= 0.011 and leave["none"] > 1.0, leave
    # block level: the integral rate is 0 while saturated and e pushes outward, e otherwise (the
    # mode is set at a major step, the output call, and held by the derivative)
    blk = pid({"Kp": 2.0, "Ki": 4.0, "upper": 1.0, "lower": -1.0, "antiwindup": "clamping"},
              widths={"ref": 1, "meas": 1, "ref_d": 1, "meas_d": 1})
    assert major_rate(blk, 2.0, 0.5) == 0.0                 # u = 3 > 1 and e > 0: frozen
    assert major_rate(blk, -2.0, 0.5) == 0.0                # u = -5 < -1 and e < 0: frozen
    blk.xc[0, 0] = 1.0                                       # u = -0.2 + 4 > 1 but e < 0 pulls back
    assert major_rate(blk, 0.4, 0.5) == pytest.approx(-0.1, rel=1e-15)


def major_rate(blk, *inputs):
    """The integral's rate after a major step (which sets the held modes) at these inputs."""
    blk.output(0.0, *inputs)
    return blk.derivative(0.0, *inputs)[0, 0]

def test_back_calculation_reduces_overshoot(tmp_path):
    text = WINDUP.replace("initial: 2.0, final: 0.5", "initial: 0.0, final: 0.9").replace(
        "time: 3.0", "time: 0.0").replace("Ki: 4.0", "Ki: 10.0")
    runs = {}
    for aw in ("none", "back_calculation"):
        runs[aw] = blocksim.simulate(blocksim.load(write(tmp_path, text.replace("AW", aw), f"{aw}.yaml")))
    overshoot = {aw: np.max(r["plant.out"][:, 0]) - 0.9 for aw, r in runs.items()}
    assert overshoot["none"] > 0.05
    assert overshoot["back_calculation"] < 0.5 * overshoot["none"], overshoot
    for r in runs.values():
        assert abs(r["plant.out"][-1, 0] - 0.9) < 1e-3         # both still reach the setpoint


CLOSED_LOOP = """
blocksim: 1
blocks:
  ref:   {type: Constant, value: [1.0, -0.5]}
  pid:   {type: PID, Kp: 1.0, Ki: KI}
  plant: {type: TransferFunction, num: [2.0], den: [0.5, 1.0]}
connections: [ref -> pid.ref, plant -> pid.meas, pid -> plant]
simulation: {stop_time: 10.0, solver: rk4, step: 0.005}
log: {signals: [plant.out], every: 0.01}
"""


def test_closed_loop_first_order_plant_zero_steady_state_error_only_with_integral(tmp_path):
    ref = np.array([1.0, -0.5])
    p_only = blocksim.simulate(blocksim.load(write(tmp_path, CLOSED_LOOP.replace("KI", "0.0"), "p.yaml")))
    # P only: y = K G(0) / (1 + K G(0)) r = 2/3 r, steady-state error r / 3
    np.testing.assert_allclose(ref - p_only["plant.out"][-1], ref / 3, rtol=1e-9)
    pi = blocksim.simulate(blocksim.load(write(tmp_path, CLOSED_LOOP.replace("KI", "[4.0, 8.0]"), "pi.yaml")))
    np.testing.assert_allclose(pi["plant.out"][-1], ref, atol=1e-6)


def test_parameter_and_wiring_errors():
    with pytest.raises(BlocksimError, match="N must be > 0"):
        pid({"Kd": 1.0, "N": 0.0})
    with pytest.raises(BlocksimError, match="offset needs a period"):
        pid({"offset": 0.1})
    with pytest.raises(BlocksimError, match="one length"):
        pid({"Kp": [1.0, 2.0], "Ki": [1.0, 2.0, 3.0]})
    with pytest.raises(BlocksimError, match="width 3"):
        pid({"Kp": [1.0, 2.0]}, widths={"ref": 3, "meas": 2, "ref_d": 2, "meas_d": 2})


def test_continuous_compiled_form_is_importable_and_computes_the_same():
    from blocksim.engine.numba_backend import _import_name
    blk = pid({"Kp": [400.0, 200.0], "Ki": [100.0, 50.0], "Kd": [40.0, 20.0], "upper": 50.0,
               "antiwindup": "back_calculation"})
    k = blk.block.runtime_kernels()
    assert {_import_name(f)[0] for f in (k.output, k.derivative, k.modes, k.zero_crossings)} == \
        {"blocksim.blocks.control"}
    blk.xc[...] = [[0.1, -0.2, 0.15, -0.3]]         # integral and derivative-filter states
    u = blk.u(([0.3, -0.1], [0.1, 0.2]))
    y, dx = (np.zeros((1, 2)),), np.zeros((1, 4))
    k.modes(0.0, blk.xc, blk.xd, u, k.params)              # a major step: the held regions
    k.output(0.0, blk.xc, blk.xd, u, y, k.params)
    k.derivative(0.0, blk.xc, blk.xd, u, dx, k.params)
    np.testing.assert_array_equal(y[0], blk.output(0.0, [0.3, -0.1], [0.1, 0.2]))
    np.testing.assert_array_equal(dx, blk.derivative(0.0, [0.3, -0.1], [0.1, 0.2]))
    assert y[0][0, 0] == 50.0 and dx[0, 0] < 0.2          # saturated: back-calculation bleeds z
