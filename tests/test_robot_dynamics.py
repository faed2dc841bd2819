"""Rigid-body dynamics of RobotModel: the algorithms cross-checked against each other and physics."""
import numpy as np
import pytest

from blocksim.models import rigid_body_kernels as rbk
from blocksim.models.robot import RobotModel

PRESETS = ["two_link", "two_link_point_mass", "puma560", "kr6_like"]


def mixed_robot(rotor=True):
    """A standard-DH RPRR arm with full (off-diagonal) inertias, offsets and rotor inertia."""
    links = [
        dict(type="revolute", a=0.1, alpha=np.pi / 2, d=0.3, theta=0.2, mass=3.0, com=[0.02, -0.1, 0.05],
             inertia=[0.05, 0.004, -0.003, 0.04, 0.002, 0.03], Jm=1e-4, G=50, viscous=0.2, coulomb=0.3),
        dict(type="prismatic", a=0.05, alpha=-np.pi / 2, d=0.2, theta=0.1, mass=2.0, com=[0.0, 0.03, -0.1],
             inertia=[0.02, 0.001, 0.0, 0.03, -0.002, 0.01], Jm=2e-5, G=30, viscous=5.0, coulomb=[2.0, -1.5]),
        dict(type="revolute", a=0.4, alpha=0.3, d=0.05, theta=-0.4, mass=1.5, com=[-0.2, 0.01, 0.02],
             inertia=[0.003, 0.0, 0.0005, 0.02, 0.0, 0.02], Jm=5e-5, G=40),
        dict(type="revolute", a=0.0, alpha=-np.pi / 2, d=0.1, theta=0.0, mass=0.7, com=[0.0, 0.0, 0.05],
             inertia=[0.001, 0.0, 0.0, 0.001, 0.0, 0.0005], Jm=1e-5, G=60),
    ]
    return RobotModel.from_dh(links, convention="standard", gravity=[0.3, -1.0, -9.81], name="mixed",
                              tool={"xyz": [0.01, 0.02, 0.08], "rpy": [0.1, -0.2, 0.3]}, rotor_inertia=rotor)


def mixed_modified():
    """A modified-DH RRP arm with rotor inertia: the other convention and a prismatic last joint."""
    links = [
        dict(alpha=0.0, a=0.0, d=0.3, mass=2.0, com=[0.01, 0.02, -0.1], inertia=[0.02, 0.03, 0.01], Jm=1e-4, G=20),
        dict(alpha=-np.pi / 2, a=0.1, d=0.0, theta=-np.pi / 2, mass=3.0, com=[0.2, 0.0, 0.01],
             inertia=[0.01, 0.002, 0.0, 0.08, 0.0, 0.08], Jm=1e-4, G=20),
        dict(type="prismatic", alpha=np.pi / 2, a=0.4, d=0.1, mass=1.0, com=[0.0, 0.0, 0.1],
             inertia=[0.01, 0.01, 0.001], Jm=1e-5, G=10),
    ]
    return RobotModel.from_dh(links, convention="modified", name="rrp", rotor_inertia=True)


def all_models():
    models = {name: RobotModel.preset(name) for name in PRESETS}
    models["puma560+rotor"] = models["puma560"].with_options(rotor_inertia=True)
    models["mixed"] = mixed_robot()
    models["rrp"] = mixed_modified()
    return models


MODELS = all_models()


def state(model, B=4, seed=0):
    rng = np.random.default_rng(seed)
    n = model.n
    return rng.uniform(-2, 2, (B, n)), rng.uniform(-2, 2, (B, n)), rng.uniform(-3, 3, (B, n))


def close(a, b, rtol=1e-10):
    scale = max(np.max(np.abs(a)), np.max(np.abs(b)), 1.0)
    np.testing.assert_allclose(a, b, rtol=0, atol=rtol * scale)


@pytest.fixture(params=sorted(MODELS))
def model(request):
    return MODELS[request.param]


def test_mass_matrix_symmetric_positive_definite(model):
    q, _, _ = state(model)
    M = model.mass_matrix(q)
    close(M, np.swapaxes(M, 1, 2), 1e-14)
    assert np.all(np.linalg.eigvalsh(M) > 0)


def test_rnea_is_linear_in_qdd_through_mass_matrix(model):
    q, _, qdd = state(model)
    z = np.zeros_like(q)
    close(model.rnea(q, z, qdd) - model.rnea(q, z, z), np.einsum("bij,bj->bi", model.mass_matrix(q), qdd))


def test_aba_inverts_rnea(model):
    q, qd, qdd = state(model)
    close(model.aba(q, qd, model.rnea(q, qd, qdd)), qdd)


def test_gravity_torque_holds_the_arm(model):
    q, _, _ = state(model)
    z = np.zeros_like(q)
    np.testing.assert_allclose(model.aba(q, z, model.gravity_torque(q)), 0.0, atol=1e-12)


def test_coriolis_matrix_factorises_velocity_products(model):
    q, qd, _ = state(model)
    C = model.coriolis_matrix(q, qd)
    c = model.nonlinear_effects(q, qd) - model.gravity_torque(q)
    close(np.einsum("bij,bj->bi", C, qd), c)


def test_mdot_minus_2c_is_skew(model):
    q, qd, _ = state(model, B=3)
    h = 1e-6
    Mdot = (model.mass_matrix(q + h * qd) - model.mass_matrix(q - h * qd)) / (2 * h)
    N = Mdot - 2 * model.coriolis_matrix(q, qd)
    scale = np.max(np.abs(Mdot)) + 1.0
    assert np.max(np.abs(N + np.swapaxes(N, 1, 2))) < 1e-8 * scale


def test_coriolis_matrix_is_christoffel_form(model):
    """C_ij = sum_k Gamma_ijk qd_k with Gamma from central differences of M."""
    q, qd, _ = state(model, B=1)
    q, qd = q[0], qd[0]
    n, h = model.n, 1e-6
    dM = np.stack([(model.mass_matrix(q + h * e) - model.mass_matrix(q - h * e)) / (2 * h)
                   for e in np.eye(n)])            # dM[k, i, j] = dM_ij / dq_k
    gamma = 0.5 * (np.einsum("kij->ijk", dM) + np.einsum("jik->ijk", dM) - np.einsum("ijk->ijk", dM))
    C_ref = np.einsum("ijk,k->ij", gamma, qd)
    assert np.max(np.abs(model.coriolis_matrix(q, qd) - C_ref)) < 1e-7 * (np.max(np.abs(C_ref)) + 1)


def test_regressor_reproduces_rnea(model):
    q, qd, qdd = state(model)
    theta = model.standard_parameters()
    assert len(theta) == len(model.parameter_names())
    close(model.regressor(q, qd, qdd) @ theta, model.rnea(q, qd, qdd))
    thf = model.standard_parameters(friction=True)
    assert len(thf) == len(model.parameter_names(friction=True))
    close(model.regressor(q, qd, qdd, friction=True) @ thf,
          model.rnea(q, qd, qdd) + model.friction_torque(qd, smoothing=0.0))


def test_energy_kinetic_and_potential_gradient(model):
    q, qd, _ = state(model, B=2)
    T = model.kinetic_energy(q, qd)
    close(T, 0.5 * np.einsum("bi,bij,bj->b", qd, model.mass_matrix(q), qd))
    h = 1e-6
    grad = np.stack([(model.potential_energy(q + h * e) - model.potential_energy(q - h * e)) / (2 * h)
                     for e in np.eye(model.n)], axis=1)
    g = model.gravity_torque(q)
    assert np.max(np.abs(grad - g)) < 1e-7 * (np.max(np.abs(g)) + 1)


def test_power_balance_without_gravity(model):
    """dT/dt = qd . tau along the free motion (no gravity, no friction): checks ABA and energy."""
    q, qd, _ = state(model, B=1)
    q, qd = q[0], qd[0]
    m0 = model.with_options(gravity=[0, 0, 0])
    tau = np.linspace(-1, 1, model.n)
    qdd = m0.aba(q, qd, tau)
    h = 1e-6
    dT = (m0.kinetic_energy(q + h * qd, qd + h * qdd) - m0.kinetic_energy(q - h * qd, qd - h * qdd)) / (2 * h)
    assert abs(dT - qd @ tau) < 1e-6 * (1 + abs(qd @ tau))


def test_batch_equals_members(model):
    q, qd, qdd = state(model, B=5)
    tau = model.rnea(q, qd, qdd)
    M = model.mass_matrix(q)
    acc = model.aba(q, qd, tau)
    C = model.coriolis_matrix(q, qd)
    Y = model.regressor(q, qd, qdd)
    for k in range(5):
        np.testing.assert_array_equal(model.rnea(q[k], qd[k], qdd[k]), tau[k])
        np.testing.assert_array_equal(model.mass_matrix(q[k]), M[k])
        np.testing.assert_array_equal(model.aba(q[k], qd[k], tau[k]), acc[k])
        np.testing.assert_array_equal(model.coriolis_matrix(q[k], qd[k]), C[k])
        np.testing.assert_array_equal(model.regressor(q[k], qd[k], qdd[k]), Y[k])
    assert model.rnea(q[0], qd[0], qdd[0]).shape == (model.n,)


def test_external_wrench_maps_through_jacobian_transpose(model):
    q, qd, qdd = state(model)
    rng = np.random.default_rng(3)
    f = rng.normal(size=(q.shape[0], 6))
    JT_f = np.einsum("bji,bj->bi", model.jacobian(q), f)
    close(model.rnea(q, qd, qdd, f_ext=f), model.rnea(q, qd, qdd) - JT_f)
    tau = rng.normal(size=q.shape)
    close(model.aba(q, qd, tau, f_ext=f), model.aba(q, qd, tau + JT_f))


def test_kernel_api_matches_methods():
    model = MODELS["puma560"]
    q, qd, qdd = state(model, B=3)
    jt, xt, inertia, arm, tool = model.arrays
    ws = model.workspace()
    out = np.empty_like(q)
    rbk.rnea_into(jt, xt, inertia, arm, tool, q, qd, qdd, model.gravity, rbk.NO_FEXT, out, ws)
    np.testing.assert_array_equal(out, model.rnea(q, qd, qdd))
    acc = np.empty_like(q)
    rbk.aba_into(jt, xt, inertia, arm, tool, q, qd, out, model.gravity, rbk.NO_FEXT, acc, ws)
    close(acc, qdd)
    M = np.empty((3, 6, 6))
    rbk.mass_matrix_into(jt, xt, inertia, arm, q, M, ws)
    np.testing.assert_array_equal(M, model.mass_matrix(q))


def test_puma560_published_values():
    """Corke's Robotics Toolbox, p560 at qn = [0, pi/4, pi, 0, pi/4, 0]: gravload and inertia
    (the latter with the motor inertia G^2 Jm included, as the toolbox does)."""
    p560 = MODELS["puma560"]
    qn = np.array([0, np.pi / 4, np.pi, 0, np.pi / 4, 0])
    np.testing.assert_allclose(p560.gravity_torque(qn), [0, 31.6399, 6.0351, 0, 0.0283, 0], atol=6e-5)
    M = MODELS["puma560+rotor"].mass_matrix(qn)
    expected = np.array([
        [3.6594, -0.4044, 0.1006, -0.0025, 0.0000, -0.0000],
        [-0.4044, 4.4137, 0.3509, 0.0000, 0.0024, 0.0000],
        [0.1006, 0.3509, 0.9378, 0.0000, 0.0015, 0.0000],
        [-0.0025, 0.0000, 0.0000, 0.1925, 0.0000, 0.0000],
        [0.0000, 0.0024, 0.0015, 0.0000, 0.1713, 0.0000],
        [-0.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.1941]])
    np.testing.assert_allclose(M, expected, atol=6e-5)


def test_rotor_inertia_only_on_the_diagonal():
    p = MODELS["puma560"]
    pr = MODELS["puma560+rotor"]
    q, _, _ = state(p, B=2)
    np.testing.assert_allclose(pr.mass_matrix(q) - p.mass_matrix(q),
                               np.broadcast_to(np.diag(p.gear ** 2 * p.Jm), (2, 6, 6)), atol=1e-14)


def test_payload_equals_a_tool_wrench():
    """A point payload's static load equals the wrench of its weight at the tool."""
    for name in ("puma560", "kr6_like", "mixed"):
        model = MODELS[name]
        q, _, _ = state(model, B=3)
        com = np.array([0.02, -0.01, 0.05])
        loaded = model.with_payload(4.0, com)
        T = model.fk(q)
        r = np.einsum("bij,j->bi", T[:, :3, :3], com)
        weight = 4.0 * model.gravity
        f = np.concatenate([np.broadcast_to(weight, r.shape), np.cross(r, weight)], axis=1)
        close(loaded.gravity_torque(q), model.rnea(q, 0 * q, 0 * q, f_ext=f))


def test_mismatched_models():
    model = MODELS["kr6_like"]
    q, qd, qdd = state(model)
    close(model.scaled(1.1).rnea(q, qd, qdd), 1.1 * model.rnea(q, qd, qdd))
    heavier = model.with_link_params(2, mass=8.0)
    assert heavier.standard_parameters()[20] == 8.0
    np.testing.assert_allclose(heavier.standard_parameters()[21:24] / 8.0, [0.06, 0.08, 0.0])
    assert not np.allclose(heavier.rnea(q, qd, qdd), model.rnea(q, qd, qdd))
    same = model.with_standard_parameters(model.standard_parameters())
    close(same.rnea(q, qd, qdd), model.rnea(q, qd, qdd), 1e-14)
    # the original model is untouched (immutable)
    assert model.standard_parameters()[20] == 7.0
    with pytest.raises(ValueError):
        model.arrays[1][0, 0] = 1.0


def test_friction_torque_signs():
    model = MODELS["puma560"]
    qd = np.array([1.0, -1.0, 0.0, 2.0, -0.5, 0.0])
    tau = model.friction_torque(qd, smoothing=0.0)
    G = np.abs(model.gear)
    B = np.array([1.48e-3, 0.817e-3, 1.38e-3, 71.2e-6, 82.6e-6, 36.7e-6])
    Tcp = np.array([0.395, 0.126, 0.132, 11.2e-3, 9.26e-3, 3.96e-3])
    Tcn = np.array([-0.435, -0.071, -0.105, -16.9e-3, -14.5e-3, -10.5e-3])
    expected = G ** 2 * B * qd + G * np.where(qd > 0, Tcp, np.where(qd < 0, Tcn, 0.0))
    np.testing.assert_allclose(tau, expected, rtol=1e-14)
    two = RobotModel.preset("two_link")
    w = np.array([2e-3, -1e-3])
    np.testing.assert_allclose(two.friction_torque(w),
                               [0.5, 0.3] * w + [1.0, 0.5] * np.tanh(w / 1e-3), rtol=1e-14)
