"""Collision detection, study 1 (examples/interaction): the momentum observer's residual follows an
external joint torque step of (5, 2) N m through K_O / (s + K_O) with K_O = 50 1/s, so a 1 N m
threshold detects it after ln(1.25)/50 and ln(2)/50 s (continuous, located) or after 5 and 14
samples (forward Euler at 1 kHz); from a quantised encoder and a noisy torque the observer raises
no false alarm and the direct residual many; W1's friction shows in a rigid-body residual and a
friction model in the observer removes it."""
from pathlib import Path

import numpy as np
import pytest

import blocksim
from blocksim.errors import ParameterError

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "examples" / "interaction"
HIT = np.array([5.0, 2.0])         # N m, the external torque step at t = 1 s
K_O = 50.0                         # 1/s

_RUNS: dict = {}


def run(name: str, variant: str | None = None, **sets):
    """A study file's result, once per session for the unmodified files."""
    key = (name, variant, tuple(sorted(sets.items())))
    if key not in _RUNS:
        diagram = blocksim.load(STUDY / name, variant=variant, set=sets or None)
        _RUNS[key] = blocksim.simulate(diagram)
    return _RUNS[key]


def test_residual_is_the_first_order_filter_of_the_external_torque():
    r = run("collision_detection.yaml", "continuous")
    t, res = r.t, r["obs.r"]
    before, after = t < 1.0, t >= 1.0
    assert np.max(np.abs(res[before])) < 1e-6          # tracking, no contact: r = 0
    expected = HIT * (1.0 - np.exp(-K_O * (t[after] - 1.0)))[:, None]
    assert np.max(np.abs(res[after] - expected)) < 1e-7
    np.testing.assert_allclose(res[-1], HIT, atol=1e-8)   # settled: the applied torque
    # the direct residual reads the plant's true qdd: the torque itself, with no lag
    np.testing.assert_allclose(r["direct.r"][after], np.broadcast_to(HIT, res[after].shape),
                               atol=1e-6)


def test_continuous_detection_delays_are_located():
    r = run("collision_detection.yaml", "continuous")
    delays = r["det.t_detect"][-1] - 1.0
    np.testing.assert_allclose(delays, np.log([1.25, 2.0]) / K_O, atol=1e-6)
    assert abs(delays[0] - 4.463e-3) < 1e-6 and abs(delays[1] - 13.863e-3) < 1e-6
    np.testing.assert_allclose(r.metrics["observer_delay"], delays, rtol=0, atol=1e-15)
    assert r.metrics["observer_false_alarms"] == [0.0, 0.0]
    assert r.metrics["direct_delay"] == [0.0, 0.0]
    events = [(e.block, e.index) for e in r.events]
    assert events.count(("det", 0)) == 1 and events.count(("det", 1)) == 1
    flag = r["det.flag"]
    assert not flag[r.t < 1.004].any() and flag[-1].tolist() == [1.0, 1.0]


def test_discrete_observer_detects_after_5_and_14_samples():
    r = run("collision_detection.yaml", "discrete_1khz")
    np.testing.assert_allclose(r["det.t_detect"][-1], [1.005, 1.014], rtol=0, atol=1e-12)
    np.testing.assert_allclose(r.metrics["observer_delay"], [0.005, 0.014], atol=1e-12)
    # forward Euler: r_k = tau_ext (1 - (1 - K_O T)^k) up to the discretisation of p's rate
    k = np.arange(1, 30)
    i = np.searchsorted(r.t, 1.0 + k * 1e-3 - 1e-9)
    expected = HIT * (1.0 - (1.0 - K_O * 1e-3) ** k)[:, None]
    assert np.max(np.abs(r["obs.r"][i] - expected)) < 0.05


def test_noise_observer_raises_no_false_alarm_the_direct_residual_does():
    r = run("collision_detection_noise.yaml")
    m = r.metrics
    assert m["observer_false_alarms"] == [0.0, 0.0]
    assert min(m["direct_false_alarms"]) >= 10
    assert max(m["observer_peak"]) < 1.0 < m["direct_peak"][0]
    delay = np.asarray(m["observer_delay"])
    assert np.all((delay >= [0.005 - 1e-12, 0.014 - 1e-12]) & (delay <= [0.007, 0.016]))
    # the direct residual's noise: qdd from a double difference of counts of 2 pi / 2^17 / 100 rad
    t = r.t
    quiet = (t > 0.1) & (t < 0.999)
    assert np.sqrt(np.mean(r["direct.r"][quiet, 0] ** 2)) > 10 * np.sqrt(
        np.mean(r["obs.r"][quiet, 0] ** 2))


def test_friction_shows_in_a_rigid_residual_and_a_friction_model_removes_it():
    r = run("collision_detection_friction.yaml")
    m = r.metrics
    assert m["rigid_false_alarms"][0] >= 1
    assert min(m["rigid_rms_before"]) > 0.5
    assert max(m["friction_peak_before"]) < 1e-6
    assert m["friction_false_alarms"] == [0.0, 0.0]
    np.testing.assert_allclose(m["friction_delay"], np.log([1.25, 2.0]) / K_O, atol=1e-6)
    # the rigid residual is minus the plant's friction torque through K_O / (s + K_O) before the
    # hit (the filter applied to the logged friction, exactly for a piecewise-linear input)
    qd = r["plant.qd"]
    tau_f = np.array([0.5, 0.3]) * qd + np.array([1.0, 0.5]) * np.tanh(qd / 1e-3)
    decay = np.exp(-K_O * np.diff(r.t))
    filtered = np.zeros_like(tau_f)
    for k, a in enumerate(decay):
        filtered[k + 1] = a * filtered[k] - (1.0 - a) * 0.5 * (tau_f[k] + tau_f[k + 1])
    window = (r.t > 0.2) & (r.t < 0.999)
    np.testing.assert_allclose(r["obs.r"][window], filtered[window], atol=2e-3)


def test_reaction_switches_to_gravity_compensation_at_the_detection():
    r = run("collision_reaction.yaml")
    t_detect = r["det.t_detect"][-1]
    np.testing.assert_allclose(t_detect - 1.0, np.log([1.25, 2.0]) / K_O, atol=1e-6)
    before, after = r.t < t_detect[0] - 1e-9, r.t > t_detect[0] + 1e-9
    np.testing.assert_array_equal(r["react.out"][before], r["ct.tau"][before])
    np.testing.assert_array_equal(r["react.out"][after], r["gc.tau"][after])
    # the observer reads the torque applied after the switch too: still tau_ext once settled
    np.testing.assert_allclose(r["obs.r"][-1], HIT, atol=1e-6)


def test_a_batch_equals_its_members():
    gains = [50.0, 100.0]
    diagram = blocksim.load(STUDY / "collision_detection.yaml", variant="continuous")
    batch = blocksim.simulate(diagram, batch={"obs.gain": gains})
    for b, gain in enumerate(gains):
        one = run("collision_detection.yaml", "continuous", **{"obs.gain": gain})
        member = batch.member(b)
        np.testing.assert_allclose(member["det.t_detect"][-1] - 1.0, np.log([1.25, 2.0]) / gain,
                                   atol=1e-6)
        np.testing.assert_allclose(member["obs.r"], one["obs.r"], atol=1e-7)


def test_compiled_equals_interpreted(compiled_cache):
    from modecheck import assert_same, signal_changes
    for variant in ("continuous", "discrete_1khz"):
        a = run("collision_detection.yaml", variant)
        b = run("collision_detection.yaml", variant, **{"simulation.mode": "compiled"})
        assert signal_changes(a, "obs.r")
        assert_same(a, b, 1e-9)


DET_LINE = "  det:    {type: CollisionDetector, threshold: $threshold}"
OBS_LINE = "  obs:    {type: MomentumObserver, robot: two_link, gain: $K_O}"


@pytest.mark.parametrize("old, new, block, text", [
    ("  K_O: 50.0 ", "  K_O: -50.0 ", "obs",
     "gain must be > 0 (the observer's bandwidth K_O, 1/s), got [-50.0]"),
    (DET_LINE, DET_LINE[:-1] + ", release: 2.0}", "det",
     "release must be <= threshold (hysteresis: quiet again when |r| falls to release), got "
     "release [2.0] and threshold [1.0]"),
    (DET_LINE, DET_LINE[:-1] + ", min_duration: -0.1}", "det", "min_duration must be >= 0, got -0.1"),
    (OBS_LINE, OBS_LINE.replace("$K_O}", "$K_O, Fv: 0.5}"), "obs",
     "Fv, Fc and Fs set the coulomb_viscous and stribeck laws; with friction: none they have no "
     "effect"),
])
def test_bad_parameters_are_located(tmp_path, old, new, block, text):
    source = (STUDY / "collision_detection.yaml").read_text()
    assert old in source
    path = tmp_path / "bad.yaml"
    path.write_text(source.replace(old, new))
    line = next(i + 1 for i, row in enumerate(source.splitlines())
                if row.startswith(f"  {block}:"))
    with pytest.raises(ParameterError) as err:
        blocksim.simulate(blocksim.load(path, variant="continuous"))
    message = str(err.value)
    assert text in message
    assert err.value.block == block
    assert f"bad.yaml:{line}" in message


@pytest.mark.parametrize("name", ["collision_detection.yaml", "collision_detection_noise.yaml",
                                  "collision_detection_friction.yaml", "collision_reaction.yaml"])
def test_study_files_check_and_run_through_the_cli(name, tmp_path):
    import json
    import subprocess
    import sys
    path = STUDY / name
    assert path.read_text().startswith("# Purpose: ")

    def cli(*args):
        proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), *map(str, args)],
                              capture_output=True, text=True, timeout=600, cwd=ROOT)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "Traceback" not in proc.stderr
        return proc.stdout

    assert "is valid" in cli("check", path)
    cli("simulate", path, "--out", tmp_path / "run")
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert sorted(metrics) == sorted(blocksim.load(path).variants or ["default"])
    for values in metrics.values():
        delay = next(v for k, v in values.items() if k.endswith("delay") and "direct" not in k)
        assert np.all(np.asarray(delay) < 0.016)
