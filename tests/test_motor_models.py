"""Motors (blocksim.models.motor) and FOC pieces (blocksim.models.foc) held to steady states, power balance
and the transforms' invariants."""
import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from blocksim.models import foc
from blocksim.models.motor import DCMotor, PMSM, electrical_angle, electrical_speed

RNG = np.random.default_rng(20240601)


# ---------------------------------------------------------------- transforms

def test_clarke_and_park_round_trip_on_random_inputs():
    a, b, c = RNG.normal(size=(3, 5, 3)) * 10.0          # (B=5, n=3), with a zero sequence
    theta = RNG.uniform(-50.0, 50.0, size=(5, 3))
    al, be, z = foc.clarke(a, b, c)
    d, q = foc.park(al, be, theta)
    al2, be2 = foc.inverse_park(d, q, theta)
    a2, b2, c2 = foc.inverse_clarke(al2, be2, z)
    for x, y in ((al, al2), (be, be2), (a, a2), (b, b2), (c, c2)):
        np.testing.assert_allclose(y, x, rtol=0, atol=1e-12 * 10.0)
    np.testing.assert_allclose(z, (a + b + c) / 3.0, rtol=1e-15)


def test_balanced_set_keeps_its_amplitude_and_is_constant_in_the_rotor_frame():
    A, theta = 7.5, np.linspace(0.0, 4 * np.pi, 97)
    phi = 0.3                                             # current leads the d axis by phi
    a = A * np.cos(theta + phi)
    b = A * np.cos(theta + phi - 2 * np.pi / 3)
    c = A * np.cos(theta + phi + 2 * np.pi / 3)
    al, be, z = foc.clarke(a, b, c)
    np.testing.assert_allclose(np.hypot(al, be), A, rtol=1e-14)
    np.testing.assert_allclose(z, 0.0, atol=1e-14)
    d, q = foc.park(al, be, theta)
    np.testing.assert_allclose(d, A * np.cos(phi), rtol=1e-13)
    np.testing.assert_allclose(q, A * np.sin(phi), rtol=1e-13)


def test_three_phase_power_is_one_and_a_half_dq_power():
    va, vb, vc, ia, ib, ic = RNG.normal(size=(6, 4, 2))
    theta = RNG.uniform(0.0, 2 * np.pi, size=(4, 2))
    p_abc = va * ia + vb * ib + vc * ic
    vd, vq = foc.park(*foc.clarke(va, vb, vc)[:2], theta)
    v0 = foc.clarke(va, vb, vc)[2]
    i_al, i_be, i0 = foc.clarke(ia, ib, ic)
    i_d, i_q = foc.park(i_al, i_be, theta)
    np.testing.assert_allclose(p_abc, 1.5 * (vd * i_d + vq * i_q) + 3.0 * v0 * i0, rtol=1e-12, atol=1e-14)
    # without a zero sequence (star connection) the 1.5 factor is all
    motor = PMSM(R=0.2, Ld=1e-3, Lq=1e-3, psi=0.05)
    a, b, c = foc.inverse_clarke(*foc.inverse_park(vd, vq, theta))
    ja, jb, jc = foc.inverse_clarke(*foc.inverse_park(i_d, i_q, theta))
    np.testing.assert_allclose(a * ja + b * jb + c * jc, motor.electrical_power(i_d, i_q, vd, vq), rtol=1e-12)


# ---------------------------------------------------------------- inverter and SVPWM

def test_inverter_limit_is_never_exceeded_and_keeps_direction():
    vdc = np.array([48.0, 300.0])
    vmax = vdc / math.sqrt(3.0)
    v1, v2 = RNG.normal(size=(2, 1000, 2)) * vmax
    w1, w2 = foc.limit_voltage(v1, v2, vdc)
    mag, mag_in = np.hypot(w1, w2), np.hypot(v1, v2)
    assert np.all(mag <= vmax * (1 + 1e-15))
    inside = mag_in <= vmax
    assert inside.any() and (~inside).any()
    np.testing.assert_array_equal(w1[inside], v1[inside])
    np.testing.assert_allclose(mag[~inside], np.broadcast_to(vmax, mag.shape)[~inside], rtol=1e-15)
    np.testing.assert_allclose(w1 * v2 - w2 * v1, 0.0, atol=1e-12 * vdc.max() ** 2)    # same line ...
    assert np.all(w1 * v1 + w2 * v2 > 0.0)                                               # ... same way


def test_svpwm_duties_reproduce_the_command_inside_the_hexagon():
    vdc = 48.0
    r = np.sqrt(RNG.uniform(0.0, 1.0, 20000)) * 2 * vdc / 3        # disc through the hexagon's corners
    ang = RNG.uniform(0.0, 2 * np.pi, r.size)
    v_al, v_be = (r * np.cos(ang))[:, None], (r * np.sin(ang))[:, None]
    va, vb, vc = foc.inverse_clarke(v_al, v_be)
    spread = np.maximum(np.maximum(va, vb), vc) - np.minimum(np.minimum(va, vb), vc)
    hexagon = spread <= vdc
    assert hexagon.mean() > 0.6 and (~hexagon).any()
    da, db, dc = foc.svpwm_duties(v_al, v_be, vdc)
    for d in (da, db, dc):
        assert np.all((d >= 0.0) & (d <= 1.0))
    pa, pb, pc = foc.average_phase_voltages(da, db, dc, vdc)
    for p, v in ((pa, va), (pb, vb), (pc, vc)):
        np.testing.assert_allclose(p[hexagon], v[hexagon], rtol=0, atol=1e-12 * vdc)
    # the linear range of SVPWM contains the inverter circle Vdc/sqrt(3)
    assert np.all(hexagon[r[:, None] <= vdc / math.sqrt(3.0)])
    # centred: the duties are symmetric about 1/2
    np.testing.assert_allclose((np.maximum(np.maximum(da, db), dc) + np.minimum(np.minimum(da, db), dc))[hexagon],
                               1.0, atol=1e-14)


# ---------------------------------------------------------------- current control

def test_current_pi_tuning_and_torque_to_current_give_the_w2_numbers():
    gains = foc.tune_current_pi(R=0.5, Ld=0.5e-3, bandwidth=2 * np.pi * 1000.0)
    assert gains.Kp_q == pytest.approx(0.5e-3 * 2 * np.pi * 1000.0, rel=1e-15)
    assert round(float(gains.Kp_q), 2) == 3.14 and round(float(gains.Ki_q)) == 3142
    assert gains.Kp_d == gains.Kp_q and gains.Ki_d == gains.Ki_q
    salient = foc.tune_current_pi(R=0.2, Ld=1e-3, Lq=2e-3, bandwidth=1000.0)
    assert (salient.Kp_d, salient.Kp_q, salient.Ki_d, salient.Ki_q) == (1.0, 2.0, 200.0, 200.0)
    np.testing.assert_allclose(foc.torque_to_current(np.array([2.0, -30.0]), 100.0, 0.1), [0.2, -3.0], rtol=1e-15)
    assert foc.inverter_voltage_limit(48.0 * math.sqrt(3.0)) == pytest.approx(48.0, rel=1e-15)


def _w2_current_loop_by_hand(iq_ref, qd_of_t, steps):
    """The W2 current loop in plain Python floats: PI at 10 kHz, +-48 V, conditional integration, exact
    DC-motor step (the current ODE is linear at frozen qd, so it is integrated exactly over Ts_i)."""
    R, L, Ke, N, Kp, Ki, Ts, vmax = 0.5, 0.5e-3, 0.1, 100.0, 3.14, 3142.0, 1e-4, 48.0
    i, z, log = 0.0, 0.0, []
    decay = math.exp(-R * Ts / L)
    for k in range(steps):
        e = iq_ref - i
        u = Kp * e + Ki * z
        v = min(vmax, max(-vmax, u))
        if abs(u) <= vmax:
            z = z + Ts * e
        log.append((v, z))
        i_inf = (v - Ke * N * qd_of_t(k * Ts)) / R
        i = i_inf + (i - i_inf) * decay
    return log, i


def test_current_pi_kernel_matches_w2_loop_exactly_including_saturation():
    motor = DCMotor(R=0.5, L=0.5e-3, Kt=0.1, Ke=0.1, Jm=1e-5, N=100.0)
    qd_of_t = lambda t: 0.8 * math.sin(20.0 * t)                  # rad/s, joint speed (back-EMF up to 8 V)
    iq_ref, steps = 40.0, 300                                     # 40 A asks for 20 V + Kp * 40 V: saturates
    expected, _ = _w2_current_loop_by_hand(iq_ref, qd_of_t, steps)
    i, z = np.zeros((1, 1)), np.zeros((1, 1))
    v = np.empty((1, 1))
    Kp, Ki, vmax = np.array([3.14]), np.array([3142.0]), np.array([48.0])
    ref, ff = np.full((1, 1), iq_ref), np.zeros((1, 1))
    decay = math.exp(-0.5 * 1e-4 / 0.5e-3)
    saturated = 0
    for k in range(steps):
        z_before = z[0, 0]
        foc.pi_current_step_into(ref, i, z, ff, Kp, Ki, vmax, 1e-4, v, z)
        assert (v[0, 0], z[0, 0]) == expected[k]
        if abs(v[0, 0]) == 48.0 and z[0, 0] == z_before:
            saturated += 1
        i_inf = motor.steady_state_current(v, qd_of_t(k * 1e-4))
        i = i_inf + (i - i_inf) * decay
    assert saturated >= 3                                         # the clamp and the held integrator were used
    assert abs(i[0, 0] - iq_ref) < 0.05                           # and the loop still settles on the set-point


def test_dq_current_pi_reduces_to_the_q_axis_pi_and_decouples():
    gains = foc.CurrentPIGains(Kp_d=3.14, Ki_d=3142.0, Kp_q=3.14, Ki_q=3142.0)
    iq_ref, iq, zq = RNG.normal(size=(3, 6, 2)) * np.array([[[5.0]], [[5.0]], [[1e-3]]])
    zeros = np.zeros_like(iq)
    vd, vq, zd1, zq1 = foc.dq_current_pi_step(zeros, iq_ref, zeros, iq, zeros + 300.0, zeros, zq, gains,
                                              v_max=48.0, Ts=1e-4)
    v_ref, z_ref = foc.pi_current_step(iq_ref, iq, zq, 3.14, 3142.0, 48.0, 1e-4)
    np.testing.assert_array_equal(vq, v_ref)
    np.testing.assert_array_equal(zq1, z_ref)
    np.testing.assert_array_equal(vd, 0.0)
    # decoupling alone (zero gains): v = (-we Lq iq, we (Ld id + psi))
    Ld, Lq, psi, we = 1e-3, 2e-3, 0.02, 500.0
    none = foc.CurrentPIGains(0.0, 0.0, 0.0, 0.0)
    vd, vq, _, _ = foc.dq_current_pi_step(0.0, 0.0, 2.0, 3.0, we, 0.0, 0.0, none, 100.0, 1e-4,
                                          Ld=Ld, Lq=Lq, psi=psi, decouple=True)
    assert (vd, vq) == pytest.approx((-we * Lq * 3.0, we * (Ld * 2.0 + psi)), rel=1e-15)
    # a huge error: the output lies on the voltage circle and both integrators hold
    vd, vq, zd2, zq2 = foc.dq_current_pi_step(300.0, -400.0, 0.0, 0.0, 0.0, 1e-3, 2e-3, gains, 48.0, 1e-4)
    assert math.hypot(vd, vq) == pytest.approx(48.0, rel=1e-15)
    assert vd / vq == pytest.approx((300.0 * 3.14 + 3142.0 * 1e-3) / (-400.0 * 3.14 + 3142.0 * 2e-3), rel=1e-14)
    assert (zd2, zq2) == (1e-3, 2e-3)


# ---------------------------------------------------------------- motors

W2_MOTOR = DCMotor(R=0.5, L=0.5e-3, Kt=0.1, Ke=0.1, Jm=1e-5, N=100.0)


def test_dc_motor_reaches_the_analytic_steady_state():
    # locked speed: i -> (v - Ke N qd) / R
    v, qd = np.array([[12.0, -5.0]]), np.array([[0.3, 0.0]])
    sol = solve_ivp(lambda t, i: W2_MOTOR.current_derivative(i[None, :], v, qd)[0], (0.0, 0.05), [0.0, 0.0],
                    rtol=1e-12, atol=1e-14, method="DOP853")
    np.testing.assert_allclose(sol.y[:, -1], W2_MOTOR.steady_state_current(v, qd)[0], rtol=1e-9)
    # coupled to a joint with inertia J + N^2 Jm and viscous damping b: qd -> N Kt v / (R b + N^2 Kt Ke)
    J, b, vdc = 0.1, 2.0, 12.0
    assert W2_MOTOR.reflected_inertia == pytest.approx(0.1, rel=1e-15)

    def rhs(t, x):
        i, w = x[None, :1], x[None, 1:]
        di = W2_MOTOR.current_derivative(i, vdc, w)
        dw = (W2_MOTOR.joint_torque(i) - b * w) / (J + W2_MOTOR.reflected_inertia)
        return np.concatenate([di[0], dw[0]])

    sol = solve_ivp(rhs, (0.0, 0.2), [0.0, 0.0], rtol=1e-12, atol=1e-14, method="DOP853")
    qd_ss = 100.0 * 0.1 * vdc / (0.5 * b + 100.0 ** 2 * 0.1 * 0.1)
    np.testing.assert_allclose(sol.y[1, -1], qd_ss, rtol=1e-9)
    np.testing.assert_allclose(sol.y[0, -1], b * qd_ss / (100.0 * 0.1), rtol=1e-9)


SALIENT = PMSM(R=np.array([0.3, 0.8]), Ld=np.array([0.8e-3, 2e-3]), Lq=np.array([1.4e-3, 2e-3]),
               psi=np.array([0.03, 0.05]), p=np.array([4.0, 7.0]), Jm=np.array([2e-5, 1e-5]),
               N=np.array([50.0, 100.0]))


def test_pmsm_parameters_torque_and_angles():
    m = PMSM.from_torque_constant(Kt=0.1, R=0.5, Ld=0.5e-3, p=4.0, Jm=1e-5, N=100.0)
    assert m.psi == pytest.approx(0.1 / 6.0, rel=1e-15)
    assert m.torque_constant == pytest.approx(0.1, rel=1e-15)
    assert m.reflected_inertia == pytest.approx(0.1, rel=1e-15)
    assert m.joint_torque(0.0, 2.0) == pytest.approx(100.0 * 0.1 * 2.0, rel=1e-15)
    i_d, i_q = np.array([[-3.0, 1.0]]), np.array([[5.0, 2.0]])
    te = 1.5 * SALIENT.p * (SALIENT.psi * i_q + (SALIENT.Ld - SALIENT.Lq) * i_d * i_q)
    np.testing.assert_allclose(SALIENT.joint_torque(i_d, i_q), SALIENT.N * te, rtol=1e-15)
    np.testing.assert_allclose(electrical_angle([0.1, -0.2], SALIENT.p, SALIENT.N), [20.0, -140.0], rtol=1e-15)
    np.testing.assert_allclose(electrical_speed([1.0, 1.0], SALIENT.p, SALIENT.N), [200.0, 700.0], rtol=1e-15)


def test_pmsm_settles_to_the_analytic_steady_state_at_constant_speed():
    vd, vq, qd = np.array([[-2.0, 1.0]]), np.array([[10.0, 24.0]]), np.array([[0.5, 0.2]])
    i_d, i_q = SALIENT.steady_state_currents(vd, vq, qd)
    did, diq = SALIENT.current_derivative(i_d, i_q, vd, vq, qd)
    np.testing.assert_allclose(np.concatenate([did, diq]), 0.0, atol=1e-9)

    def rhs(t, x):
        a, b = SALIENT.current_derivative(x[None, :2], x[None, 2:], vd, vq, qd)
        return np.concatenate([a[0], b[0]])

    sol = solve_ivp(rhs, (0.0, 0.1), np.zeros(4), rtol=1e-12, atol=1e-14, method="DOP853")
    np.testing.assert_allclose(sol.y[:2, -1], i_d[0], rtol=1e-9)
    np.testing.assert_allclose(sol.y[2:, -1], i_q[0], rtol=1e-9)


def test_pmsm_power_balance_over_an_integrated_transient():
    """Electrical energy in = copper loss + magnetic energy stored + mechanical work, to 1e-9 relative."""
    m = SALIENT
    J, b = np.array([0.3, 0.1]), np.array([1.5, 0.4])      # joint load inertia (kg m^2), damping (N m s/rad)
    Jtot = J + m.reflected_inertia

    def voltages(t):
        vd = np.array([[-3.0 + 2.0 * math.sin(40.0 * t), 1.5 * math.cos(25.0 * t)]])
        vq = np.array([[12.0 + 4.0 * math.cos(30.0 * t), 8.0 + 20.0 * math.sin(15.0 * t)]])
        return vd, vq

    def rhs(t, x):
        i_d, i_q, qd = x[None, 0:2], x[None, 2:4], x[None, 6:8]
        vd, vq = voltages(t)
        did, diq = m.current_derivative(i_d, i_q, vd, vq, qd)
        tau = m.joint_torque(i_d, i_q)
        qdd = (tau - b * qd) / Jtot
        p_el = m.electrical_power(i_d, i_q, vd, vq)
        p_cu = m.copper_loss(i_d, i_q)
        p_mech = m.mechanical_power(i_d, i_q, qd)
        p_damp = b * qd * qd
        return np.concatenate([did[0], diq[0], qd[0], qdd[0], p_el[0], p_cu[0], p_mech[0], p_damp[0]])

    x0 = np.zeros(16)
    x0[0:2], x0[2:4], x0[6:8] = [0.5, -1.0], [2.0, 0.0], [0.1, -0.3]
    sol = solve_ivp(rhs, (0.0, 0.3), x0, rtol=1e-12, atol=1e-15, method="DOP853")
    x = sol.y[:, -1]
    e_el, e_cu, e_mech, e_damp = x[8:10], x[10:12], x[12:14], x[14:16]
    w_mag = m.magnetic_energy(x[0:2], x[2:4]) - m.magnetic_energy(x0[0:2], x0[2:4])
    assert np.all(np.abs(e_el) > 0.5)                      # a real transient, not a trivial balance
    np.testing.assert_allclose(e_cu + w_mag + e_mech, e_el, rtol=1e-9)
    # the mechanical side closes too: shaft work = kinetic energy gained (with N^2 Jm) + damper loss
    kinetic = 0.5 * Jtot * (x[6:8] ** 2 - x0[6:8] ** 2)
    np.testing.assert_allclose(kinetic + e_damp, e_mech, rtol=1e-9)
