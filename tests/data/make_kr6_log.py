"""Writes the KR6-like arm's identification logs of tests/test_identify_kr6_log.py, made by an
independent simulator: Pinocchio's articulated-body algorithm (pinocchio.aba, with the reflected
rotor inertias as its armature) and its rnea, integrated here by fixed-step RK4, none of blocksim's
dynamics. Test-only and run by hand (the tests read the files it writes and need no Pinocchio):

    /work/venv/bin/pip install pin
    PYTHONPATH=. python tests/data/make_kr6_log.py

The arm as built differs from the CAD file examples/identification/kr6_cad.yaml: every mass,
inertia, centre of mass and rotor inertia is off (the factors and shifts below), and it has the
joint friction Fv qd + Fc tanh(qd / eps) the CAD file lacks. It tracks a Fourier excitation (the
reference only is blocksim's FourierExcitation: coefficients optimised on the CAD model, written
out in the log) under a continuous PD law plus the CAD model's inverse dynamics at the reference
as feedforward, evaluated at every RK4 stage, so the logged torque is the torque the arm feels at
the logged instant. What the drive reports: q rounded to 2^18 counts per joint revolution, the
torque with white noise of 1.5 % of each joint's rms torque.

Writes into tests/data/:
- kr6_log_truth.yaml: the arm as built, a blocksim robot file (the true parameters);
- kr6_log_train.npz: t, q, tau (float32, as a drive logs it) of the excitation (0.2 Hz, 4 periods
  of 5 s at 1 kHz), with the excitation's frequency, a, b, q0, the exact torque tau_exact and
  friction friction_exact (float32);
- kr6_log_check.npz: the same for a validation trajectory (0.25 Hz, 4 periods of 4 s);
- both also hold check_q, check_qd, check_qdd, check_tau: random states and Pinocchio's torque
  there (rnea with the armature, + friction), for the test that blocksim models this very arm.
Units SI: kg, m, kg m^2, rad, rad/s, N m, N m s/rad.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import yaml

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CAD_FILE = ROOT / "examples" / "identification" / "kr6_cad.yaml"

MASS = (0.86, 1.22, 0.81, 1.19, 0.88, 1.31)
"""The true link masses over the CAD file's."""
INERTIA = ((0.85, 0.9, 0.8), (1.2, 1.25, 1.3), (0.85, 0.8, 0.9),
           (1.2, 1.15, 1.25), (0.9, 0.8, 0.85), (1.2, 1.3, 1.25))
"""The true principal inertias about the centre of mass over the CAD file's, per link."""
PRODUCTS = 0.04
"""Products of inertia Ixy, Ixz, Iyz of the true links, as a share of the smallest principal
inertia (the CAD file has none)."""
COM_SHIFT = ((0.01, -0.008, 0.012), (0.02, 0.006, -0.01), (-0.012, 0.01, 0.008),
             (0.004, -0.006, 0.025), (0.003, 0.008, -0.004), (-0.002, 0.003, 0.01))
"""The true centres of mass minus the CAD file's, m."""
JM = (1.08, 0.93, 1.12, 0.9, 1.1, 0.92)
"""The true rotor inertias Jm over the CAD file's."""
VISCOUS = (9.0, 7.0, 4.5, 1.8, 1.4, 0.9)
COULOMB = (13.0, 11.0, 7.5, 3.2, 2.6, 1.7)
WIDTH = 0.015
"""Joint friction Fv qd + Fc tanh(qd / WIDTH): N m s/rad, N m, rad/s."""
COUNTS = 2 ** 18
NOISE = 0.015
DT = 1e-3
SUBSTEPS = 2
"""RK4 steps per logged sample (the light wrist's friction slope Fc / WIDTH wants a step below 1 ms)."""
KP = (9000.0, 9000.0, 3000.0, 500.0, 400.0, 200.0)
KD = (550.0, 550.0, 200.0, 30.0, 25.0, 12.0)
"""PD gains per joint, N m/rad and N m s/rad (about 5 Hz on each joint's reflected inertia)."""


def true_mapping(cad: dict) -> dict:
    """The arm as built: the CAD file's kinematics and gears, its inertial data perturbed, friction."""
    true = {k: v for k, v in cad.items() if k != "links"}
    true["name"] = "kr6_log_truth"
    true["description"] = "KR6-like arm as built, the independent simulator's plant"
    true["friction_smoothing"] = WIDTH
    links = []
    for j, link in enumerate(cad["links"]):
        link = dict(link)
        link["mass"] = round(link["mass"] * MASS[j], 6)
        link["com"] = [round(c + s, 6) for c, s in zip(link["com"], COM_SHIFT[j])]
        diag = [d * f for d, f in zip(link["inertia"], INERTIA[j])]
        p = PRODUCTS * min(diag)
        link["inertia"] = [round(v, 9) for v in (diag[0], p, -p, diag[1], p, diag[2])]
        link["Jm"] = round(link["Jm"] * JM[j], 9)
        link["viscous"] = VISCOUS[j]
        link["coulomb"] = COULOMB[j]
        links.append(link)
    true["links"] = links
    return true


def _rot(axis, angle):
    return pin.utils.rotate(axis, angle)


def pinocchio_model(mapping: dict):
    """Pinocchio's model of a modified-DH robot mapping: joint i at Rx(alpha) Tx(a) Rz(theta) Tz(d)
    of its parent's frame, revolute about its z; link inertials in the joint frame; armature G^2 Jm."""
    assert mapping["convention"] == "modified"
    model = pin.Model()
    model.gravity.linear = np.array(mapping["gravity"], float)
    parent = 0
    armature = []
    for link in mapping["links"]:
        place = pin.SE3(_rot("x", link["alpha"]), np.array([link["a"], 0.0, 0.0])) * \
            pin.SE3(_rot("z", link["theta"]), np.array([0.0, 0.0, link["d"]]))
        parent = model.addJoint(parent, pin.JointModelRZ(), place, link["name"])
        I = np.asarray(link["inertia"], float)
        if I.size == 3:
            I = np.diag(I)
        else:
            xx, xy, xz, yy, yz, zz = I
            I = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        model.appendBodyToJoint(parent, pin.Inertia(link["mass"], np.array(link["com"], float), I),
                                pin.SE3.Identity())
        armature.append(link["G"] ** 2 * link["Jm"] if mapping.get("rotor_inertia") else 0.0)
    model.armature = np.array(armature)
    return model


class Arm:
    """One Pinocchio model with its data and the friction law of a robot mapping."""

    def __init__(self, mapping: dict):
        self.model = pinocchio_model(mapping)
        self.data = self.model.createData()
        self.fv = np.array([link.get("viscous", 0.0) for link in mapping["links"]], float)
        self.fc = np.array([link.get("coulomb", 0.0) for link in mapping["links"]], float)
        self.eps = float(mapping.get("friction_smoothing", 0.0))

    def friction(self, qd):
        if not np.any(self.fc):
            return self.fv * qd
        return self.fv * qd + self.fc * np.tanh(qd / self.eps)

    def inverse(self, q, qd, qdd):
        """Joint torque (n,): rnea (which holds the armature's torque armature qdd) + friction."""
        return pin.rnea(self.model, self.data, q, qd, qdd) + self.friction(qd)

    def accel(self, q, qd, tau):
        return pin.aba(self.model, self.data, q, qd, tau - self.friction(qd))


def check_armature(arm: Arm, rng):
    """Pinocchio's rnea holds the armature's torque armature qdd (pinocchio 3: rnea, aba and crba
    all take model.armature), and aba inverts rnea + friction."""
    bare = pin.Model(arm.model)
    bare.armature = np.zeros(arm.model.nv)
    bare_data = bare.createData()
    for _ in range(5):
        q, qd, tau = rng.normal(size=(3, arm.model.nq))
        qdd = arm.accel(q, qd, tau)
        assert np.allclose(arm.inverse(q, qd, qdd), tau, atol=1e-9)
        rotor = pin.rnea(arm.model, arm.data, q, qd, qdd) - pin.rnea(bare, bare_data, q, qd, qdd)
        assert np.allclose(rotor, arm.model.armature * qdd, atol=1e-9), "armature not in rnea"


def run(plant: Arm, ff: Arm, excitation, duration):
    """t, q, tau exact (one sample per DT) of `duration` s from rest at the reference's start."""
    kp, kd = np.array(KP), np.array(KD)
    h = DT / SUBSTEPS

    def torque(t, q, qd):
        qr, qdr, qddr = (v[0] for v in excitation.evaluate([t]))
        return kp * (qr - q) + kd * (qdr - qd) + ff.inverse(qr, qdr, qddr)

    def f(t, q, qd):
        return plant.accel(q, qd, torque(t, q, qd))

    steps = int(round(duration / DT))
    q, qd = excitation.evaluate([0.0])[0][0].copy(), np.zeros(plant.model.nq)
    ts, qs, taus = [], [], []
    for k in range(steps + 1):
        t = k * DT
        ts.append(t)
        qs.append(q.copy())
        taus.append(torque(t, q, qd))
        if k == steps:
            break
        for s in range(SUBSTEPS):
            ti = t + s * h
            a1 = f(ti, q, qd)
            a2 = f(ti + h / 2, q + h / 2 * qd, qd + h / 2 * a1)
            a3 = f(ti + h / 2, q + h / 2 * (qd + h / 2 * a1), qd + h / 2 * a2)
            a4 = f(ti + h, q + h * (qd + h / 2 * a2), qd + h * a3)
            q = q + h * qd + h * h / 6 * (a1 + a2 + a3)
            qd = qd + h / 6 * (a1 + 2 * a2 + 2 * a3 + a4)
    return np.array(ts), np.array(qs), np.array(taus)


def measured(q, tau, seed):
    rng = np.random.default_rng(seed)
    res = 2 * np.pi / COUNTS
    sigma = NOISE * np.sqrt(np.mean(tau ** 2, axis=0))
    return np.round(q / res) * res, tau + sigma * rng.standard_normal(tau.shape)


def excitations(cad_file):
    """The identification excitation (optimised on the CAD model) and a random validation one."""
    from blocksim.identification import IdentificationModel, base_parameters, optimise_excitation
    from blocksim.identification import random_excitation
    from blocksim.identification.excitation import limits_for
    from blocksim.models.robot import RobotModel
    model = IdentificationModel(RobotModel.from_yaml(cad_file), rotor_inertia=True)
    basis = base_parameters(model, 300, seed=0)
    lim = limits_for(model, qd_max=[1.5, 1.5, 1.5, 2.0, 2.0, 2.5],
                     qdd_max=[4.0, 4.0, 4.0, 6.0, 6.0, 8.0], margin=0.1)
    q0 = [0.0, -1.2, 0.3, 0.0, 0.0, 0.0]
    train = optimise_excitation(model, basis, frequency=0.2, harmonics=5, q0=q0, limits=lim,
                                seed=1, max_iter=60).excitation
    check = random_excitation(model, 0.25, 4, q0, lim, seed=11, fill=0.8)
    return train, check


def main():
    cad = yaml.safe_load(CAD_FILE.read_text())
    truth = true_mapping(cad)
    header = ("# The KR6-like arm as built, the plant of tests/data/make_kr6_log.py (Pinocchio): the\n"
              "# kinematics and gears of examples/identification/kr6_cad.yaml, every mass, inertia,\n"
              "# centre of mass and rotor inertia off it, joint friction Fv qd + Fc tanh(qd / 0.015).\n")
    (HERE / "kr6_log_truth.yaml").write_text(header + yaml.safe_dump(truth, sort_keys=False,
                                                                       default_flow_style=None))
    plant, ff = Arm(truth), Arm(cad)
    rng = np.random.default_rng(5)
    check_armature(plant, rng)
    train, check = excitations(CAD_FILE)
    for name, ex, seed in (("train", train, 1), ("check", check, 2)):
        t, q, tau = run(plant, ff, ex, 4 * ex.period)
        qm, taum = measured(q, tau, seed)
        qd = np.gradient(q, t, axis=0)
        cq, cqd, cqdd = rng.normal(size=(3, 5, 6))
        ctau = np.array([plant.inverse(*s) for s in zip(cq, cqd, cqdd)])
        np.savez_compressed(HERE / f"kr6_log_{name}.npz", t=t, q=qm, tau=taum.astype(np.float32),
                            tau_exact=tau.astype(np.float32),
                            friction_exact=np.array([plant.friction(v) for v in qd], np.float32),
                            frequency=ex.frequency, a=ex.a, b=ex.b, q0=ex.q0,
                            check_q=cq, check_qd=cqd, check_qdd=cqdd, check_tau=ctau)
        err = np.array([ex.evaluate([ti])[0][0] for ti in t[::100]]) - q[::100]
        print(f"{name}: {len(t)} samples, rms tau {np.sqrt(np.mean(tau ** 2, axis=0)).round(2)} N m, "
              f"max tracking error {np.abs(err).max(axis=0).round(4)} rad")


if __name__ == "__main__":
    main()
