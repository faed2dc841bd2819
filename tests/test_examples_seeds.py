"""The tutorial studies in examples/: each diagram checks and runs through the CLI,
and its key number is held to an independent reference (closed forms of the two-link arm P2, energy
conservation and balance, static equilibria solved with SciPy, the sweep's trend)."""
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import simpson
from scipy.optimize import fsolve

import blocksim
from blocksim.models.robot import RobotModel

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
G0 = 9.81  # m/s^2

# (file, stop time for the CLI run, s): shortened where the full run is long
SEED_EXAMPLES = [
    ("torque_decomposition.yaml", 1.0),
    ("double_pendulum.yaml", 1.0),
    ("gravity_hold.yaml", 1.0),
    ("kr6_gravity_comp.yaml", 0.5),
    ("model_error_sweep.yaml", 0.2),
]


def run_cli(*args):
    proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), *map(str, args)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.mark.parametrize("name, stop", SEED_EXAMPLES)
def test_example_checks_and_runs_through_the_cli(name, stop, tmp_path):
    path = EXAMPLES / name
    assert path.read_text().startswith("# Purpose: ")
    assert "is valid" in run_cli("check", path)
    out = tmp_path / "run"
    run_cli("simulate", path, "--set", f"simulation.stop_time={stop}", "--out", out)
    metrics = json.loads((out / "metrics.json").read_text())
    variants = blocksim.load(path).variants or ["default"]
    assert sorted(metrics) == sorted(variants)
    for variant, values in metrics.items():
        assert values, variant
        assert all(np.all(np.isfinite(v)) for v in values.values()), variant
        assert (out / variant / "signals.npz").exists()


# --- P2 closed forms (the planar two-link arm of benchmarks/README.md): m = 3, 2 kg; l = 1.0, 0.8 m; com at mid-link ----------------
M1, M2, L1, L2 = 3.0, 2.0, 1.0, 0.8
C1, C2 = L1 / 2, L2 / 2
I1, I2 = M1 * L1 ** 2 / 12, M2 * L2 ** 2 / 12


def p2_gravity(q):
    """G(q), N m, for q of shape (n, 2)."""
    q1, q12 = q[:, 0], q[:, 0] + q[:, 1]
    g2 = M2 * C2 * G0 * np.cos(q12)
    return np.column_stack([(M1 * C1 + M2 * L1) * G0 * np.cos(q1) + g2, g2])


def p2_inertial(q, qdd):
    """M(q) qdd, N m."""
    c = np.cos(q[:, 1])
    m11 = I1 + I2 + M1 * C1 ** 2 + M2 * (L1 ** 2 + C2 ** 2 + 2 * L1 * C2 * c)
    m12 = I2 + M2 * (C2 ** 2 + L1 * C2 * c)
    m22 = I2 + M2 * C2 ** 2
    return np.column_stack([m11 * qdd[:, 0] + m12 * qdd[:, 1], m12 * qdd[:, 0] + m22 * qdd[:, 1]])


def p2_velocity(q, qd):
    """c(q, qd), N m."""
    b = M2 * L1 * C2 * np.sin(q[:, 1])
    return np.column_stack([-b * (2 * qd[:, 0] * qd[:, 1] + qd[:, 1] ** 2), b * qd[:, 0] ** 2])


def test_torque_decomposition_parts_sum_to_inverse_dynamics_and_match_closed_forms():
    d = blocksim.load(EXAMPLES / "torque_decomposition.yaml")
    r = blocksim.simulate(d)
    total = r["id.tau"]
    inertial, velocity, gravity = r["inertial.out"], r["velocity.out"], r["grav.tau"]
    np.testing.assert_allclose(inertial + velocity + gravity, total, rtol=0, atol=1e-12)
    np.testing.assert_allclose(r["parts.out"], total, rtol=0, atol=1e-12)
    q, qd, qdd = r["ref.q"], r["ref.qd"], r["ref.qdd"]
    np.testing.assert_allclose(q, np.array([0.6, 0.4]) * np.sin(2 * np.pi * 0.4 * r.t)[:, None],
                               rtol=0, atol=1e-14)
    some = [np.searchsorted(r.t, t) for t in (0.0, 0.37, 1.25, 2.0, 3.14, 5.0)]
    np.testing.assert_allclose(gravity[some], p2_gravity(q[some]), rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(gravity, p2_gravity(q), rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(inertial, p2_inertial(q, qdd), rtol=1e-12, atol=1e-11)
    np.testing.assert_allclose(velocity, p2_velocity(q, qd), rtol=1e-12, atol=1e-11)
    # the tutorial's reading: at this medium speed gravity is the largest part, velocity terms tiny
    from blocksim.engine.metrics import compute_metrics
    m = compute_metrics(d.spec, r)
    for j in range(2):
        assert m["rms_gravity"][j] > m["rms_inertial"][j] > 10 * m["rms_velocity"][j]


def point_mass_energy(q, qd):
    """Total energy (J) of two_link_point_mass: m = 1, 1 kg at the ends of l = 1, 1 m links."""
    c2 = np.cos(q[:, 1])
    w1, w12 = qd[:, 0], qd[:, 0] + qd[:, 1]
    kinetic = 0.5 * (2 * w1 ** 2 + w12 ** 2 + 2 * c2 * w1 * w12)
    potential = G0 * (2 * np.sin(q[:, 0]) + np.sin(q[:, 0] + q[:, 1]))
    return kinetic + potential


def test_double_pendulum_undamped_conserves_energy():
    r = blocksim.simulate(blocksim.load(EXAMPLES / "double_pendulum.yaml", variant="undamped"))
    q, qd, energy = r["plant.q"], r["plant.qd"], r["energy.total"][:, 0]
    np.testing.assert_allclose(energy, point_mass_energy(q, qd), rtol=1e-12, atol=1e-12)
    e0 = G0 * (2 * np.sin(0.3) + np.sin(1.2))
    assert energy[0] == pytest.approx(e0, rel=1e-14)
    assert np.max(np.abs(energy - e0)) / abs(e0) < 1e-8
    assert np.ptp(q[:, 1]) > 2.0                      # it does swing: energy is traded, not lost
    tool = r["fk.position"]
    np.testing.assert_allclose(tool[:, 0], np.cos(q[:, 0]) + np.cos(q[:, 0] + q[:, 1]), atol=1e-12)
    np.testing.assert_allclose(tool[:, 1], np.sin(q[:, 0]) + np.sin(q[:, 0] + q[:, 1]), atol=1e-12)


def test_double_pendulum_damped_loses_energy_monotonically_as_the_damper_dissipates():
    r = blocksim.simulate(blocksim.load(EXAMPLES / "double_pendulum.yaml", variant="damped"))
    energy, qd = r["energy.total"][:, 0], r["plant.qd"]
    assert np.all(np.diff(energy) <= 1e-10 * abs(energy[0]))
    assert energy[-1] < energy[0] - 30.0
    # balance: E(t) - E(0) = -integral of c |qd|^2, c = 1.6 N m s/rad per joint
    dissipated = simpson(1.6 * np.sum(qd ** 2, axis=1), x=r.t)
    assert energy[0] - energy[-1] == pytest.approx(dissipated, rel=1e-5)
    # it comes to rest near the hanging pose, potential -3 g (J)
    assert energy[-1] == pytest.approx(-3 * G0, abs=3.0)


def test_gravity_hold_holds_with_gravity_only_and_with_pd_gravity():
    for variant in ("gravity_only", "pd_gravity"):
        r = blocksim.simulate(blocksim.load(EXAMPLES / "gravity_hold.yaml", variant=variant))
        assert np.max(np.abs(r["plant.q"] - np.array([0.3, 0.6]))) < 1e-9, variant
        assert np.max(np.abs(r["plant.qd"])) < 1e-9, variant
        np.testing.assert_allclose(r["u.out"][-1], p2_gravity(np.array([[0.3, 0.6]]))[0],
                                   rtol=1e-12)


def test_gravity_hold_pd_alone_sags_to_the_static_equilibrium():
    q_d, kp = np.array([0.3, 0.6]), np.array([200.0, 100.0])
    sag = fsolve(lambda e: kp * e - p2_gravity((q_d - e)[None])[0], np.zeros(2), xtol=1e-14)
    r = blocksim.simulate(blocksim.load(EXAMPLES / "gravity_hold.yaml", variant="pd"))
    np.testing.assert_allclose(r["e.out"][-1], sag, rtol=0, atol=1e-6)
    assert sag[0] > 0.2 and sag[1] > 0.06                # rad: a visible sag, both joints down


def test_kr6_pd_sags_and_gravity_compensation_holds():
    path = EXAMPLES / "kr6_gravity_comp.yaml"
    q_d = np.array([0.3, -1.2, 0.9, 0.5, -0.6, 0.2])
    kp = np.array([4000, 6000, 2000, 250, 250, 80.0])
    robot = RobotModel.preset("kr6_like")

    def gravity(q):
        return np.asarray(robot.gravity_torque(q), dtype=float).reshape(-1)

    r = blocksim.simulate(blocksim.load(path, variant="pd_gravity"))
    assert np.max(np.abs(r["plant.q"] - q_d)) < 1e-9
    assert np.max(np.abs(r["sag.out"])) < 1e-9
    sag = fsolve(lambda e: kp * e - gravity(q_d - e), np.zeros(6), xtol=1e-14)
    r = blocksim.simulate(blocksim.load(path, variant="pd"))
    np.testing.assert_allclose(r["e.out"][-1], sag, rtol=0, atol=1e-6)
    assert abs(sag[1]) > 0.01 and abs(sag[2]) > 0.01           # shoulder and elbow sag by > 10 mrad
    assert np.linalg.norm(r["sag.out"][-1]) > 5e-3             # the tool drops by millimetres


def test_model_error_sweep_error_grows_with_model_error_and_plots(tmp_path):
    spec = importlib.util.spec_from_file_location("model_error_sweep",
                                                  EXAMPLES / "sweeps" / "model_error_sweep.py")
    sweep = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sweep)
    out = tmp_path / "sweep"
    assert sweep.main(["--out", str(out), "--from", "-0.5", "--to", "1.0", "--points", "7"]) == 0
    for name in ("model_error_sweep.png", "model_error_sweep.svg", "model_error_sweep.csv"):
        assert (out / name).stat().st_size > 0
    data = json.loads((out / "model_error_sweep.json").read_text())
    errors = np.array(data["model_error"])                    # -50, -25, 0, 25, 50, 75, 100 %
    ff = np.array(data["pid_ff"]["max_abs_error"])
    pid = np.array(data["pid"]["max_abs_error"])
    k0 = int(np.argmin(np.abs(errors)))
    assert errors[k0] == 0.0
    for j in range(2):
        assert np.all(np.diff(ff[k0:, j]) > 0)                 # grows as the model gets heavier
        assert np.all(np.diff(ff[:k0 + 1, j]) < 0)             # and as it gets lighter
        assert ff[k0, j] < pid[j] / 10                          # the exact model: W1's pid_ff
        assert np.all(ff[:, j] < pid[j])                        # never worse than PID alone here
    np.testing.assert_allclose(ff[k0], [0.0068, 0.0054], rtol=0.02)   # W1 pid_ff (benchmarks/README.md)
    np.testing.assert_allclose(pid, [0.1931, 0.0867], rtol=0.02)      # W1 pid (benchmarks/README.md)
