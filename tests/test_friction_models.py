"""Friction laws of blocksim.models.friction held to their formulas, to passivity and to the LuGre limits."""
import numpy as np
import pytest
from scipy.integrate import solve_ivp

from blocksim.models import friction as fr

FC = np.array([1.0, 0.5])      # N m
FS = np.array([1.5, 0.8])      # N m
VS = np.array([0.01, 0.02])    # rad/s
FV = np.array([0.5, 0.3])      # N m s/rad


def _stribeck_formula(v, Fc, Fs, vs, Fv, delta):
    return (Fc + (Fs - Fc) * np.exp(-np.abs(v / vs) ** delta)) * np.sign(v) + Fv * v


def test_static_maps_equal_their_formulas_at_chosen_points():
    qd = np.array([[0.0, 0.0], [0.003, -0.01], [-0.2, 0.05], [1e-9, -2.0]])   # (B=4, n=2)
    np.testing.assert_array_equal(fr.viscous(qd, FV), FV * qd)
    np.testing.assert_array_equal(fr.coulomb(qd, FC), FC * np.sign(qd))
    np.testing.assert_allclose(fr.coulomb(qd, FC, smoothing=1e-3), FC * np.tanh(qd / 1e-3), rtol=1e-15)
    for delta in (2.0, 1.0, 0.6):
        np.testing.assert_allclose(fr.stribeck(qd, FC, FS, VS, FV, delta),
                                   _stribeck_formula(qd, FC, FS, VS, FV, delta), rtol=1e-14, atol=0.0)
    # one hand-computed value: qd = 0.01 = vs, delta = 2: (1 + 0.5 e^-1) + 0.5 * 0.01
    assert fr.stribeck(0.01, 1.0, 1.5, 0.01, 0.5) == pytest.approx(1.0 + 0.5 * np.exp(-1.0) + 0.005, rel=1e-15)
    # the W1/W2 plant friction, Fv qd + Fc tanh(qd / 1e-3)
    plant = fr.StribeckFriction.coulomb_viscous(FC, FV, smoothing=1e-3)
    np.testing.assert_allclose(plant.torque(qd), FV * qd + FC * np.tanh(qd / 1e-3), rtol=1e-15)


def test_exact_sign_of_zero_is_zero_and_zero_crossing_is_speed():
    for law in (fr.StribeckFriction.coulomb_viscous(FC, FV), fr.StribeckFriction(FC, FS, VS, FV)):
        assert np.all(law.torque(np.zeros((3, 2))) == 0.0)
        # just off zero the exact sign jumps to the full static level
        np.testing.assert_allclose(law.torque(np.array([1e-300, -1e-300])), [law.Fs[0], -law.Fs[1]], rtol=1e-15)
    qd = np.array([[-0.3, 0.0], [0.2, -1e-12]])
    g = np.empty_like(qd)
    fr.velocity_zero_crossings_into(qd, g)
    np.testing.assert_array_equal(g, qd)


def test_static_laws_only_dissipate_on_a_speed_sweep():
    v = np.linspace(-3.0, 3.0, 4001)
    qd = np.stack([v, -v], axis=1)                       # (4001, 2), includes qd = 0
    laws = [fr.StribeckFriction.viscous(FV), fr.StribeckFriction.coulomb_viscous(FC),
            fr.StribeckFriction.coulomb_viscous(FC, FV, smoothing=1e-3)]
    laws += [fr.StribeckFriction(FC, FS, VS, FV, delta=d) for d in (0.5, 1.0, 2.0)]
    laws += [fr.StribeckFriction(FS, FC, VS, 0.0, smoothing=0.01)]   # negative Stribeck hump (Fs < Fc)
    for law in laws:
        power = fr.dissipated_power(law.torque(qd), qd)
        assert power.shape == qd.shape
        assert np.all(power >= 0.0)
    karnopp = fr.KarnoppFriction(FC, FS, VS, FV, dv=1e-3)
    sliding = np.abs(qd) >= 1e-3
    power = fr.dissipated_power(karnopp.torque(qd, 10.0 * np.ones_like(qd)), qd)
    assert np.all(power[sliding] >= 0.0)


def test_karnopp_sticks_below_the_static_limit_and_slips_above():
    law = fr.KarnoppFriction(FC, FS, VS, FV, dv=1e-3)
    qd = np.array([[0.0, 5e-4], [-9e-4, 0.0], [0.0, 0.0], [0.3, -0.05]])
    tau = np.array([[1.2, -0.7], [-1.5, 0.8], [2.0, -0.9], [0.1, 3.0]])
    f = law.torque(qd, tau)
    np.testing.assert_array_equal(f[:2], tau[:2])                 # stuck: friction balances the torque
    np.testing.assert_array_equal(f[2], [1.5, -0.8])              # breakaway: clamped to +-Fs
    np.testing.assert_allclose(f[3], _stribeck_formula(qd[3], FC, FS, VS, FV, 2.0), rtol=1e-15)
    g = law.zero_crossings(qd, tau)
    np.testing.assert_allclose(g[:, :2], np.abs(qd) - 1e-3)
    np.testing.assert_allclose(g[:, 2:], np.abs(tau) - FS)


def test_karnopp_inertia_under_a_torque_ramp_breaks_away_at_the_static_limit():
    """J qdd = r t - tau_f, explicit Euler: the joint does not move until r t exceeds Fs, then slides."""
    law = fr.KarnoppFriction(Fc=1.0, Fs=1.5, vs=0.01, Fv=0.5, dv=1e-4)
    J, r, h = 0.01, 1.0, 1e-4          # kg m^2, N m/s, s
    qd = np.zeros((1, 1))
    f = np.empty((1, 1))
    args = law.kernel_args(1)
    t_move = None
    for k in range(20000):
        t = k * h
        tau = np.array([[r * t]])
        fr.karnopp_into(qd, tau, *args, f)
        qd = qd + h * (tau - f) / J
        if t_move is None and qd[0, 0] != 0.0:
            t_move = t
    assert t_move == pytest.approx(1.5, abs=2 * h)
    assert qd[0, 0] > 1e-4                                        # left the band: sliding at the end


LUGRE = fr.LuGreFriction(sigma0=np.array([1e5, 4e4]), sigma1=np.array([300.0, 100.0]),
                         sigma2=FV, Fc=FC, Fs=FS, vs=VS)


def test_lugre_steady_state_force_is_the_stribeck_curve():
    v = np.concatenate([-np.logspace(-5, 1, 200), np.logspace(-5, 1, 200)])
    qd = np.stack([v, 0.5 * v], axis=1)
    z_ss = LUGRE.steady_state_bristle(qd)
    np.testing.assert_allclose(LUGRE.state_derivative(qd, z_ss), 0.0, atol=1e-12 * np.max(np.abs(qd)))
    np.testing.assert_allclose(LUGRE.torque(qd, z_ss), _stribeck_formula(qd, FC, FS, VS, FV, 2.0),
                               rtol=1e-12, atol=1e-12)


def test_lugre_acts_as_a_spring_of_stiffness_sigma0_near_rest():
    """Prescribed tiny motion x = a (1 - cos w t): z follows x and F = sigma0 x + (sigma1 + sigma2) xd."""
    a, w = 1e-9, 2 * np.pi * 5.0           # rad, rad/s: sigma0 a / Fc = 1e-4, deep in pre-sliding
    law = fr.LuGreFriction(sigma0=1e5, sigma1=300.0, sigma2=0.5, Fc=1.0, Fs=1.5, vs=0.01)

    def rhs(t, z):
        return law.state_derivative(a * w * np.sin(w * t), z)

    t = np.linspace(0.0, 0.4, 401)
    sol = solve_ivp(rhs, (0.0, 0.4), [0.0], t_eval=t, rtol=1e-11, atol=1e-20, method="DOP853")
    x = a * (1 - np.cos(w * t))
    xd = a * w * np.sin(w * t)
    z = sol.y[0]
    np.testing.assert_allclose(z, x, rtol=0, atol=1e-3 * a)
    force = law.torque(xd, z)
    stiffness = np.linalg.lstsq(x[:, None], force - (300.0 + 0.5) * xd, rcond=None)[0][0]
    assert stiffness == pytest.approx(1e5, rel=1e-3)
    np.testing.assert_allclose(force, 1e5 * x + 300.5 * xd, rtol=0, atol=1e-3 * 1e5 * a)


def test_lugre_bristle_loss_is_nonnegative_without_bristle_damping():
    law = fr.LuGreFriction(sigma0=1e5, sigma1=0.0, sigma2=0.5, Fc=1.0, Fs=1.5, vs=0.01)
    rng = np.random.default_rng(3)
    qd = rng.normal(scale=0.05, size=(50, 3))
    z = rng.normal(scale=2e-5, size=(50, 3))
    assert np.all(law.dissipated_power(qd, z) >= -1e-15)


def test_parameters_are_validated():
    with pytest.raises(ValueError, match="vs"):
        fr.StribeckFriction(1.0, 1.5, 0.0)
    with pytest.raises(ValueError, match="Fc"):
        fr.LuGreFriction(Fc=0.0)
    with pytest.raises(ValueError, match="dv"):
        fr.KarnoppFriction(1.0, dv=-1.0)
