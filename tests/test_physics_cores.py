"""One law, one set of floats: the numpy API of blocksim.models and the block kernels call the same scalar
cores, so on random inputs they agree to the last bit, law by law (friction, motors, FOC pieces, the
Manipulator's own joint friction)."""
import numpy as np
from numba import njit

from blocksim.models import joint_law
from blocksim.models import foc as foc_model
from blocksim.models import friction as friction_model
from blocksim.models import motor as motor_model
from blockcheck import BlockCheck

RNG = np.random.default_rng(11)
B, N = 64, 3


def same_floats(actual, expected):
    """Bit-for-bit equality (a signed zero differs from the other)."""
    actual = np.ascontiguousarray(actual, dtype=np.float64)
    expected = np.ascontiguousarray(np.broadcast_to(expected, actual.shape), dtype=np.float64)
    np.testing.assert_array_equal(actual.view(np.uint64), expected.view(np.uint64))


def signal(scale):
    """(B, N) random values with zeros and tiny values of both signs in the first rows."""
    x = RNG.normal(scale=scale, size=(B, N))
    x[0], x[1], x[2] = 0.0, 1e-300, -1e-300
    return x


def per_joint(lo, hi):
    return RNG.uniform(lo, hi, size=N)


def test_static_friction_block_and_model_are_one_law():
    qd = signal(0.05)
    for eps in (0.0, 1e-3):
        law = {"Fc": per_joint(0.2, 2.0), "Fs": per_joint(0.5, 3.0), "vs": per_joint(0.01, 0.1),
               "delta": per_joint(0.5, 3.0), "Fv": per_joint(0.0, 1.0)}
        block = BlockCheck("JointFriction", {"model": "stribeck", "eps": eps, **law}, in_widths=N,
                           batch=B)
        tau, p_diss = block.output(0.0, qd)
        model = friction_model.StribeckFriction(smoothing=eps, **law)
        same_floats(tau, model.torque(qd))
        same_floats(p_diss, friction_model.dissipated_power(model.torque(qd), qd))
        coulomb = BlockCheck("JointFriction", {"Fc": law["Fc"], "Fv": law["Fv"], "eps": eps},
                             in_widths=N, batch=B)
        same_floats(coulomb.output(0.0, qd)[0],
                    friction_model.coulomb(qd, law["Fc"], eps) + friction_model.viscous(qd, law["Fv"]))


def test_karnopp_block_and_model_are_one_law():
    law = {"Fc": per_joint(0.2, 2.0), "Fs": per_joint(0.5, 3.0), "vs": per_joint(0.01, 0.1),
           "delta": per_joint(0.5, 3.0), "Fv": per_joint(0.0, 1.0), "dv": per_joint(0.01, 0.03)}
    qd, tau_applied = signal(0.05), signal(2.0)
    block = BlockCheck("KarnoppFriction", law, in_widths=N, batch=B)
    model = friction_model.KarnoppFriction(**law)
    same_floats(block.output(0.0, qd, tau_applied)[0], model.torque(qd, tau_applied))
    same_floats(block.zero_crossings(0.0, qd, tau_applied), model.zero_crossings(qd, tau_applied))


def test_lugre_block_and_model_are_one_law():
    law = {"sigma0": per_joint(1e3, 1e5), "sigma1": per_joint(0.0, 300.0), "sigma2": per_joint(0.0, 1.0),
           "Fc": per_joint(0.2, 2.0), "Fs": per_joint(0.5, 3.0), "vs": per_joint(0.01, 0.1),
           "delta": per_joint(0.5, 3.0)}
    qd, z = signal(0.05), signal(1e-4)
    block = BlockCheck("LuGreFriction", law, in_widths=N, batch=B)
    model = friction_model.LuGreFriction(**law)
    same_floats(block.derivative(0.0, qd, xc=z), model.state_derivative(qd, z))
    block.xc[...] = z
    same_floats(block.output(0.0, qd)[0], model.torque(qd, z))


@njit
def _manipulator_friction(law, qd, z, out):
    for b in range(qd.shape[0]):
        for i in range(qd.shape[1]):
            out[0, b, i] = joint_law._law_friction(law, b, i, qd[b, i])
            out[1, b, i], out[2, b, i] = joint_law._law_lugre(law, b, i, qd[b, i], z[b, i])


def test_manipulator_joint_friction_is_the_models_law():
    rb = joint_law
    Fc, Fs, vs, delta, Fv = (per_joint(0.2, 2.0), per_joint(0.5, 3.0), per_joint(0.01, 0.1),
                             per_joint(0.5, 3.0), per_joint(0.0, 1.0))
    sigma = (per_joint(1e3, 1e5), per_joint(0.0, 300.0), per_joint(0.0, 1.0))
    qd, z = signal(0.05), signal(1e-4)
    for eps in (0.0, 1e-3):
        law = np.zeros((B, N, rb.FKIND + 1))
        for col, value in ((rb.FV, Fv), (rb.FCP, Fc), (rb.FCN, Fc), (rb.FSP, Fs), (rb.FSN, Fs),
                           (rb.VS, vs), (rb.DELTA, delta), (rb.EPS, eps), (rb.SIGMA0, sigma[0]),
                           (rb.SIGMA1, sigma[1]), (rb.SIGMA2, sigma[2])):
            law[:, :, col] = value
        out = np.empty((3, B, N))
        _manipulator_friction(law, qd, z, out)
        same_floats(out[0], friction_model.stribeck(qd, Fc, Fs, vs, Fv, delta, eps))
        lugre = friction_model.LuGreFriction(*sigma, Fc=Fc, Fs=Fs, vs=vs, delta=delta)
        same_floats(out[1], lugre.state_derivative(qd, z))
        same_floats(out[2], lugre.torque(qd, z))


def test_dc_motor_block_and_model_are_one_law():
    motor = {"R": per_joint(0.1, 1.0), "L": per_joint(1e-4, 1e-3), "Kt": per_joint(0.01, 0.2),
             "Ke": per_joint(0.01, 0.2), "N": per_joint(1.0, 100.0)}
    block = BlockCheck("DCMotor", motor, in_widths=N, batch=B)
    model = motor_model.DCMotor(**motor)
    i, v, qd = signal(5.0), signal(20.0), signal(3.0)
    same_floats(block.derivative(0.0, v, qd, xc=i), model.current_derivative(i, v, qd))
    block.xc[...] = i
    out = dict(zip(block.outputs, block.output(0.0, v, qd)))
    same_floats(out["tau"], model.joint_torque(i))
    same_floats(out["p_mech"], model.joint_torque(i) * qd)


def test_pmsm_block_and_model_are_one_law():
    motor = {"R": per_joint(0.1, 1.0), "Ld": per_joint(1e-4, 1e-3), "Lq": per_joint(1e-4, 2e-3),
             "psi": per_joint(0.005, 0.05), "p": np.array([1.0, 4.0, 7.0]), "N": per_joint(1.0, 100.0)}
    block = BlockCheck("PMSM", motor, in_widths=N, batch=B)
    model = motor_model.PMSM(**motor)
    i_d, i_q, v_d, v_q, qd, q = signal(5.0), signal(5.0), signal(20.0), signal(20.0), signal(3.0), signal(3.0)
    x = np.concatenate([i_d, i_q], axis=1)
    did, diq = model.current_derivative(i_d, i_q, v_d, v_q, qd)
    same_floats(block.derivative(0.0, v_d, v_q, qd, xc=x), np.concatenate([did, diq], axis=1))
    block.xc[...] = x
    out = dict(zip(block.outputs, block.output(0.0, v_d, v_q, qd, q)))
    same_floats(out["tau"], model.joint_torque(i_d, i_q))
    same_floats(out["theta_e"], motor_model.electrical_angle(q, motor["p"], motor["N"]))
    same_floats(out["p_elec"], model.electrical_power(i_d, i_q, v_d, v_q))
    same_floats(out["p_copper"], model.copper_loss(i_d, i_q))
    same_floats(out["e_mag"], model.magnetic_energy(i_d, i_q))
    same_floats(out["p_mech"], model.mechanical_power(i_d, i_q, qd))


def test_foc_transform_and_inverter_blocks_and_models_are_one_law():
    a, b, c, theta = signal(10.0), signal(10.0), signal(10.0), signal(30.0)
    for name, fn in (("Clarke", foc_model.clarke), ("InverseClarke", foc_model.inverse_clarke),
                     ("Park", foc_model.park), ("InversePark", foc_model.inverse_park)):
        third = theta if "Park" in name else c
        for got, want in zip(BlockCheck(name, {}, in_widths=N, batch=B).output(0.0, a, b, third),
                             fn(a, b, third)):
            same_floats(got, want)
    vdc = per_joint(5.0, 30.0)
    inverter = BlockCheck("Inverter", {"vdc": vdc, "frame": "alphabeta"}, in_widths=N, batch=B)
    v_alpha, v_beta, saturated = inverter.output(0.0, a, b)
    for got, want in zip((v_alpha, v_beta), foc_model.limit_voltage(a, b, vdc)):
        same_floats(got, want)
    assert 0.0 < saturated.mean() < 1.0
    for got, want in zip(BlockCheck("SVPWM", {"vdc": vdc}, in_widths=N, batch=B).output(0.0, a, b),
                         foc_model.svpwm_duties(a, b, vdc)):
        same_floats(got, want)


def test_current_loop_blocks_and_models_are_one_law():
    Nr, Kt = per_joint(1.0, 100.0), per_joint(0.01, 0.2)
    tau = signal(30.0)
    same_floats(BlockCheck("TorqueToCurrent", {"N": Nr, "Kt": Kt}, in_widths=N, batch=B).output(0.0, tau),
                foc_model.torque_to_current(tau, Nr, Kt))
    motor = {"Ld": per_joint(1e-4, 1e-3), "Lq": per_joint(1e-4, 2e-3), "psi": per_joint(0.005, 0.05),
             "p": np.array([1.0, 4.0, 7.0]), "N": Nr}
    gains = {"Kp": per_joint(0.5, 5.0), "Ki": per_joint(100.0, 5000.0), "Kp_d": per_joint(0.5, 5.0),
             "Ki_d": per_joint(100.0, 5000.0), "v_max": per_joint(5.0, 30.0)}
    id_ref, iq_ref, i_d, i_q, qd = signal(2.0), signal(5.0), signal(2.0), signal(5.0), signal(3.0)
    we = motor_model.electrical_speed(qd, motor["p"], Nr)
    for decouple in (False, True):
        q_axis = BlockCheck("CurrentController", {"axes": "q", "period": 1e-4, "decouple": decouple,
                                                  "Kp": gains["Kp"], "Ki": gains["Ki"],
                                                  "v_max": gains["v_max"], **motor},
                            in_widths=N, batch=B)
        q_axis.xd[...] = signal(1e-2)
        v_ff = we * motor["psi"] if decouple else 0.0
        v, z_next = foc_model.pi_current_step(iq_ref, i_q, q_axis.xd, gains["Kp"], gains["Ki"],
                                              gains["v_max"], 1e-4, v_ff=v_ff)
        same_floats(q_axis.output(0.0, iq_ref, i_q, qd), v)
        q_axis.update(0.0, iq_ref, i_q, qd)
        same_floats(q_axis.xd, z_next)

        dq = BlockCheck("CurrentController", {"period": 1e-4, "decouple": decouple, **gains, **motor},
                        in_widths=N, batch=B)
        dq.xd[...] = signal(1e-2)[:, :1] * np.ones(2 * N)
        z_d, z_q = dq.xd[:, :N].copy(), dq.xd[:, N:].copy()
        pi_gains = foc_model.CurrentPIGains(Kp_d=gains["Kp_d"], Ki_d=gains["Ki_d"], Kp_q=gains["Kp"],
                                            Ki_q=gains["Ki"])
        vd, vq, zd_next, zq_next = foc_model.dq_current_pi_step(
            id_ref, iq_ref, i_d, i_q, we, z_d, z_q, pi_gains, gains["v_max"], 1e-4, Ld=motor["Ld"],
            Lq=motor["Lq"], psi=motor["psi"], decouple=decouple)
        out = dq.output(0.0, id_ref, iq_ref, i_d, i_q, qd)
        same_floats(out[0], vd)
        same_floats(out[1], vq)
        dq.update(0.0, id_ref, iq_ref, i_d, i_q, qd)
        same_floats(dq.xd, np.concatenate([zd_next, zq_next], axis=1))
