"""Actuator, FOC and sensor blocks against their formulas, conservation laws and independent loops:
friction maps and dissipation, Karnopp stick-slip, LuGre pre-sliding and its Stribeck curve, the
current loop's bandwidth, voltage limit and W2 anti-windup, motor power balances, transform round
trips, and the JointActuator subsystem."""
from pathlib import Path

import numpy as np
import pytest

import blocksim
from blocksim.errors import ParameterError
from blocksim.models import foc as foc_model
from blocksim.models import friction as friction_model
from blocksim.models import motor as motor_model
from blockcheck import BlockCheck

DATA = Path(__file__).parent / "data" / "actuators"
RNG = np.random.default_rng(4)


def run(name, **kwargs):
    return blocksim.simulate(blocksim.load(DATA / f"{name}.yaml", **kwargs))


# ---- block level: formulas and the models they wrap -------------------------------------------------

def test_static_friction_block_equals_the_model_law_per_member_and_joint():
    params = {"model": "stribeck", "Fc": [1.0, 0.5], "Fs": [1.6, 0.9], "vs": [0.02, 0.05],
              "delta": [2.0, 1.0], "Fv": [0.5, 0.3]}
    b = BlockCheck("JointFriction", params, in_widths=2, batch=3)
    qd = RNG.normal(scale=0.1, size=(3, 2))
    tau, p = b.output(0.0, qd)
    law = friction_model.StribeckFriction(Fc=[1.0, 0.5], Fs=[1.6, 0.9], vs=[0.02, 0.05],
                                          delta=[2.0, 1.0], Fv=[0.5, 0.3])
    np.testing.assert_allclose(tau, law.torque(qd), rtol=1e-15)
    np.testing.assert_allclose(p, tau * qd, rtol=1e-15)
    assert b.block.n_zc == 2
    np.testing.assert_array_equal(b.zero_crossings(0.0, qd), qd)


def test_smoothed_friction_declares_no_crossings_and_uses_tanh():
    b = BlockCheck("JointFriction", {"Fc": 2.0, "Fv": 0.1, "eps": 1e-3}, in_widths=1)
    assert b.block.n_zc == 0
    tau, _ = b.output(0.0, 4e-4)
    assert tau[0, 0] == pytest.approx(2.0 * np.tanh(0.4) + 0.1 * 4e-4, rel=1e-14)


def test_karnopp_block_sticks_inside_the_band_and_slips_outside():
    b = BlockCheck("KarnoppFriction", {"Fc": 1.0, "Fs": 2.0, "vs": 0.1, "dv": 1e-3}, in_widths=1)
    assert b.output(0.0, 5e-4, 1.5)[0][0, 0] == 1.5          # sticks: balances the applied torque
    assert b.output(0.0, 5e-4, -3.0)[0][0, 0] == -2.0        # breakaway: clamped at Fs
    slip = b.output(0.0, 0.05, 0.0)[0][0, 0]
    assert slip == pytest.approx(1.0 + np.exp(-0.25), rel=1e-14)
    # the region is a mode: a solver stage inside the band still slips, and the band edge, held
    # as v - dv while slipping forwards, stays below zero once v has passed through the band
    assert b.output(0.0, 5e-4, 1.5, major=False)[0][0, 0] == pytest.approx(
        1.0 + np.exp(-(5e-4 / 0.1) ** 2), rel=1e-14)
    np.testing.assert_allclose(b.zero_crossings(0.0, -0.05, 2.5), [[-0.051, 0.5]])
    b.output(0.0, -0.05, 2.5)                                 # a major step: slipping backwards
    np.testing.assert_allclose(b.zero_crossings(0.0, -0.05, 2.5), [[0.049, 0.5]])
    b.output(0.0, 5e-4, 2.5)                                  # sticking at +Fs
    np.testing.assert_allclose(b.zero_crossings(0.0, 5e-4, -2.5), [[-5e-4, -4.5]])


def test_lugre_block_derivative_and_torque_equal_the_model():
    params = {"sigma0": 1e4, "sigma1": 50.0, "sigma2": 0.3, "Fc": 1.0, "Fs": 1.4, "vs": 0.01}
    b = BlockCheck("LuGreFriction", params, in_widths=3)
    z = np.array([[1e-5, -2e-4, 5e-5]])
    qd = np.array([[0.003, -0.1, 0.0]])
    law = friction_model.LuGreFriction(**params)
    np.testing.assert_allclose(b.derivative(0.0, qd, xc=z), law.state_derivative(qd, z), rtol=1e-15)
    b.xc[...] = z
    np.testing.assert_allclose(b.output(0.0, qd)[0], law.torque(qd, z), rtol=1e-15)


def test_motor_blocks_equal_the_motor_models():
    dc = BlockCheck("DCMotor", {"R": 0.5, "L": 5e-4, "Kt": 0.1, "Ke": 0.12, "N": [100, 50]},
                    in_widths=2)
    dc.xc[...] = [[2.0, -1.0]]
    v, qd = np.array([[12.0, -3.0]]), np.array([[0.4, -0.2]])
    model = motor_model.DCMotor(R=0.5, L=5e-4, Kt=0.1, Ke=0.12, N=[100, 50])
    np.testing.assert_allclose(dc.derivative(0.0, v, qd), model.current_derivative(dc.xc, v, qd),
                               rtol=1e-15)
    np.testing.assert_allclose(dc.output(0.0, v, qd)[1], model.joint_torque(dc.xc), rtol=1e-15)

    pm = BlockCheck("PMSM", {"R": 0.3, "Ld": 4e-4, "Lq": 6e-4, "Kt": 0.12, "p": 4, "N": 50},
                    in_widths=1)
    pm.xc[...] = [[-1.5, 7.0]]
    model = motor_model.PMSM.from_torque_constant(Kt=0.12, R=0.3, Ld=4e-4, Lq=6e-4, p=4, N=50)
    did, diq = model.current_derivative(-1.5, 7.0, 3.0, 10.0, 0.7)
    np.testing.assert_allclose(pm.derivative(0.0, 3.0, 10.0, 0.7), [[did, diq]], rtol=1e-14)
    out = dict(zip(pm.outputs, pm.output(0.0, 3.0, 10.0, 0.7, 0.25)))
    assert out["tau"][0, 0] == pytest.approx(model.joint_torque(-1.5, 7.0), rel=1e-14)
    assert out["theta_e"][0, 0] == pytest.approx(4 * 50 * 0.25, rel=1e-15)
    assert out["p_elec"][0, 0] == pytest.approx(model.electrical_power(-1.5, 7.0, 3.0, 10.0), rel=1e-14)
    assert out["e_mag"][0, 0] == pytest.approx(model.magnetic_energy(-1.5, 7.0), rel=1e-14)


def test_current_controller_q_axis_is_the_w2_pi_sample_by_sample():
    b = BlockCheck("CurrentController", {"axes": "q", "period": 1e-4, "Kp": 3.14, "Ki": 3142.0,
                                         "v_max": 48.0}, in_widths=2, connected=["iq_ref", "iq"])
    z = np.zeros((1, 2))
    for k in range(30):
        ref, meas = RNG.normal(scale=20.0, size=(1, 2)), RNG.normal(scale=5.0, size=(1, 2))
        v_expected, z = foc_model.pi_current_step(ref, meas, z, 3.14, 3142.0, 48.0, 1e-4)
        np.testing.assert_allclose(b.output(k * 1e-4, ref, meas), v_expected, rtol=1e-15)
        b.update(k * 1e-4, ref, meas)
        np.testing.assert_allclose(b.xd, z, rtol=1e-15)


def test_current_controller_dq_with_decoupling_equals_the_model_step():
    params = {"period": 1e-4, "bandwidth": 2000.0, "R": 0.3, "Ld": 4e-4, "Lq": 6e-4, "psi": 0.02,
              "p": 4, "N": 50, "decouple": True, "v_max": 24.0}
    b = BlockCheck("CurrentController", params, in_widths=1)
    gains = foc_model.tune_current_pi(0.3, 4e-4, 2000.0, 6e-4)
    assert b.block.gains["Kp_q"][0, 0] == pytest.approx(6e-4 * 2000.0)
    zd = zq = 0.0
    for k in range(20):
        idr, iqr, i_d, i_q, qd = RNG.normal(scale=[1.0, 30.0, 1.0, 10.0, 2.0])
        vd, vq, zd, zq = foc_model.dq_current_pi_step(idr, iqr, i_d, i_q, 4 * 50 * qd, zd, zq, gains,
                                                      24.0, 1e-4, Ld=4e-4, Lq=6e-4, psi=0.02,
                                                      decouple=True)
        out = b.output(k * 1e-4, idr, iqr, i_d, i_q, qd)
        np.testing.assert_allclose(np.ravel(out), [vd, vq], rtol=1e-14)
        assert np.hypot(*np.ravel(out)) <= 24.0 * (1 + 1e-15)
        b.update(k * 1e-4, idr, iqr, i_d, i_q, qd)
        np.testing.assert_allclose(b.xd, [[zd, zq]], rtol=1e-14)


def test_current_controller_rejects_gains_and_bandwidth_together():
    with pytest.raises(ParameterError, match="not both"):
        BlockCheck("CurrentController", {"period": 1e-4, "Kp": 1.0, "Ki": 1.0, "bandwidth": 100.0,
                                         "R": 1.0, "L": 1e-3})
    with pytest.raises(ParameterError, match="R and L"):
        BlockCheck("CurrentController", {"period": 1e-4, "bandwidth": 100.0})


def test_friction_parameters_that_do_not_belong_to_the_model_are_errors():
    with pytest.raises(ParameterError, match="stribeck"):
        BlockCheck("JointFriction", {"model": "coulomb", "Fc": 1.0, "Fs": 2.0})
    with pytest.raises(ParameterError, match="viscous"):
        BlockCheck("JointFriction", {"model": "viscous", "Fc": 1.0})
    with pytest.raises(ParameterError, match="psi or Kt|psi"):
        BlockCheck("PMSM", {"R": 1.0, "Ld": 1e-3})


def test_torque_to_current_and_optional_id():
    b = BlockCheck("TorqueToCurrent", {"N": [100, 80], "Kt": 0.1, "with_id": True}, in_widths=2)
    iq, i_d = b.output(0.0, [30.0, -12.0])
    np.testing.assert_allclose(iq, [[3.0, -1.5]], rtol=1e-15)
    np.testing.assert_array_equal(i_d, 0.0)
    assert BlockCheck("TorqueToCurrent", {"Kt": 0.1}).outputs == ["iq"]


def test_transforms_round_trip_on_random_batches():
    B, n = 4, 3
    a, b_, c = (RNG.normal(size=(B, n)) for _ in range(3))
    theta = RNG.uniform(-20, 20, size=(B, n))
    clarke = BlockCheck("Clarke", {}, in_widths=n, batch=B)
    park = BlockCheck("Park", {}, in_widths=n, batch=B)
    ipark = BlockCheck("InversePark", {}, in_widths=n, batch=B)
    iclarke = BlockCheck("InverseClarke", {}, in_widths=n, batch=B)
    alpha, beta, zero = clarke.output(0.0, a, b_, c)
    d, q = park.output(0.0, alpha, beta, theta)
    al2, be2 = ipark.output(0.0, d, q, theta)
    back = iclarke.output(0.0, al2, be2, zero)
    for x, y in zip(back, (a, b_, c)):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-12)
    ref = foc_model.park(alpha, beta, theta)
    np.testing.assert_allclose(d, ref[0], rtol=1e-15)
    np.testing.assert_allclose(q, ref[1], rtol=1e-15)


def test_inverter_limits_to_the_circle_and_svpwm_reproduces_the_command():
    inv = BlockCheck("Inverter", {"vdc": 48.0, "frame": "alphabeta"}, in_widths=1, batch=200)
    v = RNG.normal(scale=30.0, size=(200, 2))
    va, vb, sat = inv.output(0.0, v[:, :1], v[:, 1:])
    mag = np.hypot(va, vb)
    assert mag.max() <= 48.0 / np.sqrt(3) * (1 + 1e-15)
    inside = np.hypot(v[:, 0], v[:, 1]) <= 48.0 / np.sqrt(3)
    np.testing.assert_array_equal(sat[:, 0] == 0.0, inside)
    np.testing.assert_allclose(va[inside, 0], v[inside, 0], rtol=0)
    pwm = BlockCheck("SVPWM", {"vdc": 48.0}, in_widths=1, batch=200)
    da, db, dc = pwm.output(0.0, va, vb)
    assert da.min() >= 0.0 and da.max() <= 1.0
    phases = foc_model.average_phase_voltages(da, db, dc, 48.0)
    alpha, beta, _ = foc_model.clarke(*phases)
    np.testing.assert_allclose(alpha, va, atol=1e-12)
    np.testing.assert_allclose(beta, vb, atol=1e-12)


def test_encoder_quantises_to_counts_per_revolution_through_the_gear():
    b = BlockCheck("Encoder", {"counts": 4096, "gear": 100}, in_widths=1, batch=50)
    q = RNG.uniform(-3, 3, size=(50, 1))
    q_out, count = b.output(0.0, q)
    res = 2 * np.pi / (4096 * 100)
    np.testing.assert_array_equal(count, np.floor(q / res))
    assert np.all((q - q_out >= 0) & (q - q_out < res))
    near = BlockCheck("Encoder", {"counts": 1000, "rounding": "nearest"}, in_widths=1)
    assert near.output(0.0, 2 * np.pi / 1000 * 2.6)[1][0, 0] == 3.0


def test_measurement_noise_is_seeded_and_has_its_statistics():
    params = {"period": 1e-3, "variance": 4e-4, "mean": 0.01, "seed": 7}
    a = BlockCheck("MeasurementNoise", params, in_widths=2, batch=2).run_discrete([[1.0, -2.0]] * 2000)
    b = BlockCheck("MeasurementNoise", params, in_widths=2, batch=2).run_discrete([[1.0, -2.0]] * 2000)
    np.testing.assert_array_equal(a, b)
    noise = a - np.array([1.0, -2.0])
    assert abs(noise.mean() - 0.01) < 3 * 0.02 / np.sqrt(noise.size)
    assert noise.std() == pytest.approx(0.02, rel=0.05)
    assert not np.allclose(noise[:, 0, 0], noise[:, 1, 0])       # members are independent streams
    assert abs(np.corrcoef(noise[:, 0, 0], noise[:, 0, 1])[0, 1]) < 0.1


def test_sample_delay_delays_by_n_samples():
    b = BlockCheck("SampleDelay", {"period": 1e-3, "delay": 3, "x0": [-1.0, -2.0]}, in_widths=2)
    y = b.run_discrete([[k, 10.0 * k] for k in range(8)])[:, 0]
    np.testing.assert_array_equal(y[:3], [[-1.0, -2.0]] * 3)
    np.testing.assert_array_equal(y[3:], [[k, 10.0 * k] for k in range(5)])


# ---- engine level -----------------------------------------------------------------------------------

def test_friction_maps_equal_their_formulas_and_never_feed_energy_in():
    r = run("friction_maps")
    v = r["speed.out"]
    Fc, Fv = np.array([1.0, 0.5, 0.2]), np.array([0.5, 0.3, 0.0])
    np.testing.assert_allclose(r["visc.tau"], np.array([0.5, 0.3, 0.1]) * v, rtol=1e-15)
    np.testing.assert_allclose(r["coul.tau"], Fc * np.sign(v) + Fv * v, rtol=1e-15)
    Fs, vs, delta = np.array([1.6, 0.9, 0.25]), np.array([0.02, 0.05, 0.1]), np.array([2.0, 1.0, 0.5])
    stribeck = (Fc + (Fs - Fc) * np.exp(-np.abs(v / vs) ** delta)) * np.sign(v) + Fv * v
    np.testing.assert_allclose(r["strib.tau"], stribeck, rtol=1e-14)
    np.testing.assert_allclose(r["smooth.tau"], Fc * np.tanh(v / 1e-3) + Fv * v, rtol=1e-14)
    assert r.stats["events"] > 0            # the exact-sign laws put steps on qd = 0
    for name in ("E_visc", "E_coul", "E_strib", "E_smooth"):
        energy = r[f"{name}.out"]
        assert energy.min() >= 0.0
        assert np.all(np.diff(energy, axis=0) >= -1e-12)
    # Coulomb + viscous energy in closed form: int Fc |v| + Fv v^2 over the sine's own time grid
    t = np.linspace(0.0, 2.0, 200001)
    vv = 0.3 * np.sin(2 * np.pi * np.array([1.0, 1.3, 0.7]) * t[:, None] + np.array([0.2, 0.0, 1.0]))
    power = Fc * np.abs(vv) + Fv * vv ** 2
    exact = ((power[1:] + power[:-1]) / 2 * np.diff(t)[:, None]).sum(axis=0)
    np.testing.assert_allclose(r["E_coul.out"][-1], exact, rtol=1e-6)


def test_karnopp_stick_slip_has_stick_phases_and_a_sawtooth_peaking_at_fs():
    """Spring force rises at k V while the mass sticks, breaks away at Fs, drops to 2 Fc - Fs in half
    a spring period. The peak exceeds Fs only by the force built up while the mass crosses the band
    and catches up with the drive, O(k V sqrt(m dv / (k V)) + k m V^2 / (Fs - Fc)): 0.3 % here."""
    r = run("stick_slip")
    F, v, f = r["spring.out"][:, 0], r["v.out"][:, 0], r["friction.tau"][:, 0]
    stuck = np.abs(v) < 1e-6
    assert 0.8 < stuck.mean() < 0.95                      # mostly sticking, as 2 s of 2.3 s
    assert f.max() == pytest.approx(2.0, rel=1e-12)       # the friction peak is exactly Fs
    interior = (F[1:-1] > F[:-2]) & (F[1:-1] >= F[2:])
    peaks, times = F[1:-1][interior], r.t[1:-1][interior]
    assert len(peaks) == 3
    np.testing.assert_allclose(peaks, 2.0, rtol=5e-3)
    period = 2 * (2.0 - 1.0) / (100 * 0.01) + np.pi / np.sqrt(100 / 1.0)
    np.testing.assert_allclose(np.diff(times), period, rtol=0.02)
    assert F.min() == pytest.approx(2 * 1.0 - 2.0, abs=0.01)
    assert r["E_fric.out"].min() >= 0.0
    assert r.stats["events"] >= 9
    assert r.stats["nrejected"] < 0.05 * r.stats["nsteps"]  # the region held: no step across a switch


def test_lugre_is_a_spring_of_stiffness_sigma0_in_presliding_and_follows_stribeck_when_sliding():
    r = run("lugre")
    q, qd, tau = r["angle.out"][:, 0], r["wiggle.out"][:, 0], r["pre.tau"][:, 0]
    (stiffness, damping), *_ = np.linalg.lstsq(np.c_[q, qd], tau, rcond=None)
    assert stiffness == pytest.approx(1e4, rel=1e-3)
    assert damping == pytest.approx(100.0 + 0.4, rel=0.05)
    v = np.array([-0.1, -0.004, 0.001, 0.005, 0.01, 0.03, 0.2])
    g = 1.0 + 0.5 * np.exp(-(v / 0.01) ** 2)
    np.testing.assert_allclose(r["slide.tau"][-1], g * np.sign(v) + 0.4 * v, rtol=1e-5)
    assert r["E_cycle.out"].min() >= -1e-15


def current_step_t63(result, t_step=1e-3):
    i = result["motor.i"][..., 0]
    return result.t[np.argmax(i >= 1 - np.exp(-1), axis=-1)] - t_step


def test_current_loop_bandwidth_is_the_design_value_far_below_the_sampling_rate():
    r = run("current_step")
    wc = 2 * np.pi * 1e4 / 50
    assert 1 / current_step_t63(r) / wc == pytest.approx(1.0, abs=0.1)
    assert r["motor.i"][-1, 0] == pytest.approx(1.0, rel=1e-8)
    np.testing.assert_allclose(r["motor.tau"][-1], 100 * 0.1 * r["motor.i"][-1], rtol=1e-15)


def test_current_loop_bandwidth_ratio_grows_as_wc_nears_the_sampling_rate():
    """Measured/design bandwidth (63 % rise) against wc / ws, ws = 2 pi 10 kHz: 1/50 -> 1.03,
    1/20 -> 1.13, 1/10 -> 1.40, 1/5 -> 1.53: Kp = L wc, Ki = R wc assume a continuous controller;
    the sampled loop's pole 1 - wc Ts moves away from exp(-wc Ts) as wc Ts grows."""
    ws = 2 * np.pi * 1e4
    fractions = [1 / 50, 1 / 20, 1 / 10, 1 / 5]
    r = blocksim.simulate(blocksim.load(DATA / "current_step.yaml"),
                          batch={"cc.bandwidth": [ws * f for f in fractions]})
    ratio = 1 / current_step_t63(r) / (ws * np.array(fractions))
    np.testing.assert_allclose(ratio, [1.033, 1.129, 1.396, 1.530], rtol=0.01)
    assert np.all(np.diff(ratio) > 0)


def test_voltage_limit_holds_and_the_loop_is_w2s_pi_with_conditional_integration():
    r = run("voltage_limit")
    i, v = r["motor.i"][:, 0], r["cc.vq"][:, 0]
    assert np.abs(v).max() <= 48.0
    assert v.max() == 48.0                                 # the limit was reached
    # hand-written W2 loop: exact R-L step response between hits (qd = 0), PI on the sampled current
    R, L, Ts = 0.5, 0.5e-3, 1e-4
    a = np.exp(-R * Ts / L)
    ii, z = 0.0, 0.0
    for k, t in enumerate(r.t):
        ref = 60.0 if k >= 5 else 0.0
        e = ref - ii
        u = 3.14 * e + 3142.0 * z
        vk = min(max(u, -48.0), 48.0)
        if abs(u) <= 48.0:
            z += Ts * e
        assert v[k] == pytest.approx(vk, rel=1e-8, abs=1e-9)
        assert i[k] == pytest.approx(ii, rel=1e-8, abs=1e-9)
        ii = a * ii + (1 - a) * vk / R
    assert i[-1] == pytest.approx(60.0, rel=1e-4)
    assert i.max() < 60.0 * 1.05                           # no wind-up overshoot


@pytest.mark.parametrize("name", ["power_balance_dc", "power_balance_pmsm"])
def test_motor_energy_balance_holds_to_1e_9(name):
    r = run(name)
    E_elec, E_cu, W = r["E_elec.out"], r["E_cu.out"], r["W_mech.out"]
    e_mag = r["motor.e_mag"]
    residual = E_elec - E_cu - (e_mag - e_mag[0]) - W
    scale = np.abs(E_elec).max(axis=0) + np.abs(E_cu).max(axis=0) + np.abs(W).max(axis=0)
    assert np.all(np.abs(residual).max(axis=0) <= 1e-9 * scale)
    assert np.all(np.abs(W[-1]) > 1e-3 * scale)            # the joint did work: a real test


def test_pmsm_chain_respects_the_voltage_circle():
    r = run("power_balance_pmsm")
    assert np.hypot(r["cc.vd"], r["cc.vq"]).max() <= 24.0 * (1 + 1e-15)
    np.testing.assert_allclose(r["motor.theta_e"], 4 * 50 * r["angle.out"], rtol=1e-15)


def test_clarke_park_blocks_round_trip_in_a_diagram():
    r = run("transforms")
    for p in "abc":
        np.testing.assert_allclose(r[f"iclarke.{p}"], r[f"i{p}.out"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(r["park.d"], 3.0 * np.sin(0.4), atol=1e-12)
    np.testing.assert_allclose(r["park.q"], -3.0 * np.cos(0.4), atol=1e-12)
    np.testing.assert_allclose(r["clarke.zero"], 0.2, atol=1e-12)


def test_joint_actuator_subsystem_delivers_the_commanded_torque():
    r = run("joint_actuator")
    np.testing.assert_allclose(r["act.tau"][-1], [30.0, -12.0], rtol=1e-6)
    np.testing.assert_allclose(r["act.tau"][-1], np.array([100, 80]) * 0.1 * r["act.iq"][-1],
                               rtol=1e-15)
    t90 = r.t[np.argmax(r["act.tau"][:, 0] >= 27.0)] - 1e-3
    assert 0.2e-3 <= t90 <= 0.5e-3        # about ln(10) / wc = 0.37 ms for W2's wc = 2 pi 1 kHz


def test_two_link_foc_example_is_workload_w2():
    """examples/two_link_foc.yaml: 1 kHz PID + feedforward, 10 kHz current loops, N = 100 gears with
    N^2 Jm in the plant; W2's hand-written loop (benchmarks/README.md) gives max |e| = [0.00761, 0.00640] rad."""
    example = Path(__file__).parent.parent / "examples" / "two_link_foc.yaml"
    r = blocksim.simulate(blocksim.load(example))
    assert len(r.t) == 2001
    max_error = np.abs(r["ref.q"] - r["plant.q"]).max(axis=0)
    np.testing.assert_allclose(max_error, [0.00761, 0.00640], rtol=0.02)
    assert np.abs(r["act/pi.vq"]).max() <= 48.0
    np.testing.assert_allclose(r["act.tau"], 100 * 0.1 * r["act.iq"], rtol=1e-15)


MOTOR_WITH_LOAD = """\
blocksim: 1
name: a geared DC motor with its own load, 12 V applied
blocks:
  v:     {type: Constant, value: 12.0}
  motor: {type: DCMotor, R: 0.8, L: 2.0e-3, Kt: 0.05, N: 20.0, Jm: 2.0e-5, J_load: 0.01,
          b_load: 0.02, q0: 0.1, qd0: -1.0, MODE_KEY}
  drag:  {type: Constant, value: 0.3}
connections: [v -> motor.v, drag -> motor.tau_load]
simulation: {stop_time: 0.5, solver: dopri5, rtol: 1.0e-11, atol: 1.0e-12, mode: MODE}
log: {signals: [motor.i, motor.q, motor.qd, motor.tau], every: 0.01}
"""


@pytest.mark.parametrize("mode", ["interpreted", "compiled"])
def test_a_motor_with_its_own_load_is_the_linear_motor_and_inertia(mode):
    """L di/dt = v - R i - Ke N qd, (J_load + N^2 Jm) qdd = N Kt i - b qd - tau_load: a linear
    system from (i, q, qd) = (0, 0.1, -1), solved exactly by the matrix exponential."""
    from scipy.linalg import expm
    r = blocksim.simulate(blocksim.load(MOTOR_WITH_LOAD.replace(", MODE_KEY", "").replace(
        "MODE", mode)))
    R, L, Kt, N, J, b = 0.8, 2e-3, 0.05, 20.0, 0.01 + 20.0 ** 2 * 2e-5, 0.02
    A = np.array([[-R / L, 0, -Kt * N / L], [0, 0, 1], [N * Kt / J, 0, -b / J]])
    u = np.array([12.0 / L, 0.0, -0.3 / J])          # the constant inputs, per second
    big = np.zeros((4, 4))
    big[:3, :3], big[:3, 3] = A, u
    x0 = np.array([0.0, 0.1, -1.0, 1.0])
    exact = np.array([expm(big * t) @ x0 for t in r.t])[:, :3]
    got = np.column_stack([r["motor.i"][:, 0], r["motor.q"][:, 0], r["motor.qd"][:, 0]])
    np.testing.assert_allclose(got, exact, rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(r["motor.tau"][:, 0], N * Kt * got[:, 0], rtol=1e-15)


PMSM_WITH_LOAD = """\
blocksim: 1
name: a PMSM with its own load, constant dq voltages
blocks:
  vd:    {type: Constant, value: 1.0}
  vq:    {type: Constant, value: 6.0}
  drag:  {type: Constant, value: 0.05}
  motor: {type: PMSM, R: 0.3, Ld: 4.0e-4, Lq: 6.0e-4, psi: 0.01, p: 4, N: 10.0, Jm: 1.0e-5,
          J_load: 0.005, b_load: 0.01, qd0: 0.5}
connections: [vd -> motor.vd, vq -> motor.vq, drag -> motor.tau_load]
simulation: {stop_time: 0.2, solver: dop853, rtol: 1.0e-12, atol: 1.0e-12, mode: MODE}
log: {signals: [motor.id, motor.iq, motor.q, motor.qd, motor.theta_e], every: 0.005}
"""


@pytest.mark.parametrize("mode", ["interpreted", "compiled"])
def test_a_pmsm_with_its_own_load_follows_the_hand_written_equations(mode):
    """The dq stator equations at we = p N qd and (J_load + N^2 Jm) qdd = tau - b qd - tau_load,
    written out here and solved by SciPy's DOP853: the block's states agree to 1e-9."""
    from scipy.integrate import solve_ivp
    R, Ld, Lq, psi, pp, N = 0.3, 4e-4, 6e-4, 0.01, 4.0, 10.0
    J, b, tl = 0.005 + N ** 2 * 1e-5, 0.01, 0.05

    def f(t, x):
        i_d, i_q, q, w = x
        we = pp * N * w
        tau = N * 1.5 * pp * (psi * i_q + (Ld - Lq) * i_d * i_q)
        return [(1.0 - R * i_d + we * Lq * i_q) / Ld, (6.0 - R * i_q - we * (Ld * i_d + psi)) / Lq,
                w, (tau - b * w - tl) / J]
    r = blocksim.simulate(blocksim.load(PMSM_WITH_LOAD.replace("MODE", mode)))
    ref = solve_ivp(f, (0, 0.2), [0.0, 0.0, 0.0, 0.5], method="DOP853", rtol=1e-12, atol=1e-12,
                    t_eval=r.t)
    got = np.column_stack([r[f"motor.{k}"][:, 0] for k in ("id", "iq", "q", "qd")])
    np.testing.assert_allclose(got, ref.y.T, rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(r["motor.theta_e"][:, 0], pp * N * got[:, 2], rtol=1e-14)
