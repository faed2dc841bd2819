"""Payload estimation with the arm's parameters known: the payload regressor is the torque a load
at the tool adds, the filter's correlation factor is the variance inflation of filtered white
noise, and `python cli.py identify examples/identification/payload_kr6.yaml` estimates a 3 kg load
from 10 s of excitation with the identification examples' corruption (20-bit encoders, 0.05 A
current noise on 12 .. 2.5 N m/A, no Kt error) within 2 % in mass and 5 mm in centre of mass,
its 95 % intervals holding the truth; static poses give mass and centre of mass too."""
import json
from pathlib import Path

import numpy as np
import pytest

from blocksim.cli import main
from blocksim.identification import IdentificationModel, Measurement, process
from blocksim.identification.config import IdentifyConfigError, load_config
from blocksim.identification.payload import estimate_payload, payload_regressor
from blocksim.identification.static_poses import pose_set, static_measurement
from blocksim.models.frames import params_from_inertial
from blocksim.models.robot import RobotModel

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "identification"
TRUE = RobotModel.from_yaml(EXAMPLES / "kr6_true.yaml")
MASS, COM, INERTIA = 3.0, np.array([0.02, -0.01, 0.08]), np.array([0.012, 0.010, 0.008])
MEASUREMENT = {"encoder_counts": 1048576, "kt": [12.0, 12.0, 9.0, 4.0, 4.0, 2.5],
               "current_noise": 0.05}


def test_the_payload_regressor_is_the_torque_the_load_adds():
    rng = np.random.default_rng(0)
    q = rng.uniform(TRUE.q_lower, TRUE.q_upper, (20, 6))
    qd, qdd = rng.normal(0, 1, (20, 6)), rng.normal(0, 3, (20, 6))
    loaded = TRUE.with_payload(MASS, COM, INERTIA)
    phi = params_from_inertial(MASS, COM, np.diag(INERTIA))
    np.testing.assert_allclose(payload_regressor(TRUE, q, qd, qdd) @ phi,
                               loaded.rnea(q, qd, qdd) - TRUE.rnea(q, qd, qdd), atol=1e-10)


def test_the_correlation_factor_is_the_variance_inflation_of_filtered_white_noise():
    """The mean of the kept samples of filtered white noise: its variance over 400 draws is the
    independent-sample variance times the factor (to the draws' 10 % scatter)."""
    rng = np.random.default_rng(1)
    N, dt = 2000, 1e-3
    t = np.arange(N) * dt
    means, var_kept = [], []
    for _ in range(400):
        m = Measurement(t, np.zeros((N, 1)), rng.standard_normal((N, 1)))
        d = process(m, period=N * dt, skip_periods=0, cutoff=5.0, decimate=10)
        means.append(d.tau.mean())
        var_kept.append(d.tau.var())
    factor = d.noise_correlation()
    assert factor == pytest.approx(10.0, rel=0.15)         # kept rate 100 Hz / (2 x 5 Hz)
    independent = np.mean(var_kept) / d.tau.shape[0]
    assert np.var(means) == pytest.approx(factor * independent, rel=0.15)
    assert process(m, period=N * dt, skip_periods=0, cutoff=None).noise_correlation() == 1.0


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    out = tmp_path_factory.mktemp("payload") / "out"
    assert main(["identify", str(EXAMPLES / "payload_kr6.yaml"), "--out", str(out)]) == 0
    return out, json.loads((out / "metrics.json").read_text())


def test_a_3_kg_load_from_10_s_within_2_percent_and_5_mm_inside_its_intervals(example):
    out, metrics = example
    p = metrics["payload"]
    assert "(10 s, 1 skipped, 3 averaged)" in metrics["source"]
    q = p["quantities"]
    assert abs(q["m"]["value"] - MASS) / MASS < 0.02 and p["mass_error_percent"] < 0.1
    com = np.array([q[k]["value"] for k in ("cx", "cy", "cz")])
    assert np.linalg.norm(com - COM) < 5e-3 and p["com_error_mm"] < 1.0
    assert set(q) == {"m", "cx", "cy", "cz", "Ixx", "Ixy", "Ixz", "Iyy", "Iyz", "Izz"}
    for name, row in q.items():
        assert row["inside"] and row["interval95"][0] <= row["true"] <= row["interval95"][1], name
    # the intervals are tight where the data see the load well: mass +- 0.1 %, com +- 1.25 mm
    assert q["m"]["interval95"][1] - q["m"]["interval95"][0] < 0.006
    assert all(q[k]["interval95"][1] - q[k]["interval95"][0] < 2.5e-3 for k in ("cx", "cy", "cz"))
    assert p["correlation_factor"] == pytest.approx(11.1, rel=0.02)
    report = (out / "report.md").read_text()
    assert "| m | kg | 2.9988 |" in report and "times the filter's correlation factor 11.1" in report


def static_estimate(seed):
    model = IdentificationModel(TRUE, rotor_inertia=True)
    poses, _ = pose_set(model, [0.0, -1.2, 0.3, 0.0, 0.0, 0.0])
    data = static_measurement(TRUE.with_payload(MASS, COM, INERTIA), poses, hold=0.5,
                              measurement=MEASUREMENT, seed=seed)
    zero = np.zeros_like(data.q)
    return estimate_payload(payload_regressor(TRUE, data.q, zero, zero),
                            data.tau - TRUE.gravity_torque(data.q), inertia=False)


def test_static_poses_give_mass_and_centre_of_mass():
    est = static_estimate(0)
    assert abs(est.mass - MASS) / MASS < 1e-3 and np.linalg.norm(est.com - COM) < 2e-4
    for k, truth in enumerate([MASS, *COM]):
        lo, hi = est.interval(k)
        assert lo <= truth <= hi
    assert np.all(np.isnan(est.std[4:]))


def test_the_static_intervals_are_calibrated_over_noise_seeds():
    """Over 40 noise seeds the errors divided by their standard deviations scatter with a
    standard deviation near 1 (0.95, 1.11, 1.11, 0.97 measured), and about 95 % of the intervals
    hold the truth: the covariance is neither too narrow nor too wide."""
    truth = np.array([MASS, *COM])
    z = np.array([(e.value[:4] - truth) / e.std[:4] for e in map(static_estimate, range(40))])
    np.testing.assert_allclose(np.std(z, axis=0), [0.95, 1.11, 1.11, 0.97], atol=0.01)
    assert np.all(np.mean(np.abs(z) < 1.96, axis=0) >= 0.9)


@pytest.mark.parametrize("old, new, line, message", [
    ("  mass: 3.0   ", "  mass: -3.0   ", 22, "payload.mass must be > 0, got -3"),
    ("  com: [0.02, -0.01, 0.08]  ", "  com: [0.02, -0.01]  ", 23, "payload.com must be"),
    ("  source: excitation\n", "  source: excitaton\n", 25, "payload.source must be one of"),
    ("  seed: 1\n", "  seed: 1\nstages: {hold: 1.0}\n", 31, "stages does not go with payload"),
    ("  mass: 3.0   ", "  weight: 3.0   ", 22, "unknown payload key 'weight'"),
    ("  diagram: excitation_kr6.yaml\n", "  diagram: excitation_kr6.yaml\n  periods: 4\n", 15,
     "data.periods does not go with payload: the payload run's length is payload.periods"),
    ("  source: excitation\n", "  source: static\n  estimate_inertia: true\n", 26,
     "payload.estimate_inertia does not go with payload.source static"),
])
def test_a_bad_payload_key_is_an_error_at_its_line(tmp_path, old, new, line, message):
    text = (EXAMPLES / "payload_kr6.yaml").read_text()
    assert old in text
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(text.replace(old, new, 1))
    with pytest.raises(IdentifyConfigError) as info:
        load_config(cfg)
    assert str(info.value).startswith(f"{cfg}:{line}: ") and message in str(info.value), str(info.value)


def test_the_cli_estimates_the_load_from_static_poses(tmp_path, capsys):
    text = (EXAMPLES / "payload_kr6.yaml").read_text().replace("  source: excitation\n",
                                                              "  source: static\n")
    cfg = tmp_path / "payload_kr6.yaml"
    cfg.write_text(text.replace("kr6_true.yaml", str(EXAMPLES / "kr6_true.yaml")).replace(
        "excitation_kr6.yaml", str(EXAMPLES / "excitation_kr6.yaml")))
    assert main(["identify", str(cfg), "--out", str(tmp_path / "out")]) == 0
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["source"] == "26 static poses held 0.5 s each (1 outside the joint limits left out)"
    q = metrics["payload"]["quantities"]
    assert set(q) == {"m", "cx", "cy", "cz"} and all(row["inside"] for row in q.values())
    assert metrics["payload"]["mass_error_percent"] < 0.1 and metrics["payload"]["com_error_mm"] < 0.5
    assert "payload from 26 static poses" in capsys.readouterr().out


def test_the_excitation_intervals_are_calibrated_over_noise_seeds():
    """The example's 10 s run once, its measurement corrupted with 20 noise seeds: the errors
    divided by their standard deviations scatter with a standard deviation of 0.70 to 1.06 per
    quantity (the filter's correlation factor makes the least-squares covariance honest; without
    it the intervals would be 3.3 times too narrow), and 95 % or more of the intervals hold the
    truth."""
    from blocksim.identification import corrupt
    from blocksim.identification.excitation import limits_for, random_excitation
    from blocksim.identification.runs import simulate_run
    model = IdentificationModel(TRUE, rotor_inertia=True)
    limits = limits_for(model, None, None, [1.5, 1.5, 1.5, 2.0, 2.0, 2.5], [4, 4, 4, 6, 6, 8], 0.1)
    ex = random_excitation(model, 0.4, 4, [0.0, -1.2, 0.3, 0.0, 0.0, 0.0], limits, seed=1, fill=0.8)
    exact, _ = simulate_run(EXAMPLES / "excitation_kr6.yaml", ex, 4, {
        "plant.payload_mass": MASS, "plant.payload_com": COM.tolist(),
        "plant.payload_inertia": INERTIA.tolist()})
    truth = np.concatenate([[MASS], COM, [INERTIA[0], 0, 0, INERTIA[1], 0, INERTIA[2]]])
    z = []
    for seed in range(20):
        data = process(corrupt(exact, **MEASUREMENT, seed=seed), period=ex.period, skip_periods=1,
                       cutoff=5.0, decimate=10)
        tau = data.tau - data.parallel(model.regressor(*data.states)) @ model.parameters_of(TRUE)
        est = estimate_payload(data.parallel(payload_regressor(TRUE, *data.states)), tau,
                               inertia=True, correlation=data.noise_correlation())
        z.append((est.value - truth) / est.std)
    z = np.array(z)
    np.testing.assert_allclose(np.std(z, axis=0), [0.94, 0.86, 0.94, 0.80, 1.01, 0.78, 1.06, 0.70,
                                                   0.78, 0.79], atol=0.01)
    assert np.all(np.mean(np.abs(z) < 1.96, axis=0) >= 0.95)
