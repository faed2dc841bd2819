"""The residual check (blocksim/identification/residuals.py): the F-test of a Fourier series in the
joint positions on samples a correlation time apart keeps its false-alarm rate on low-passed noise
(the processed data's kind), finds a position-periodic term, and flags the elastic-joint study's
arm and not the rigid one (their validation residuals stored by tests/data/make_elastic_study.py
from examples/commissioning/elastic_identify.yaml and elastic_identify_rigid.yaml)."""
import json
from pathlib import Path

import numpy as np
import pytest
import scipy.signal

from blocksim.identification.residuals import ALPHA, correlation_time, residual_check

DATA = Path(__file__).parent / "data"
FS, FC = 100.0, 8.0                     # Hz: the identification examples' decimated rate, cutoff
T = np.arange(0.0, 8.0, 1.0 / FS)
Q = np.column_stack([1.2 * np.sin(2 * np.pi * 0.25 * T) + 0.3 * np.sin(2 * np.pi * 0.75 * T),
                     0.9 * np.cos(2 * np.pi * 0.5 * T)])


def lowpassed_noise(seed):
    """Unit white noise through the zero-phase 4th-order Butterworth at 8 Hz (100 Hz samples)."""
    b, a = scipy.signal.butter(4, FC * 2 / FS)
    return scipy.signal.filtfilt(b, a, np.random.default_rng(seed).standard_normal((len(T), 2)),
                                 axis=0)


def test_the_correlation_time_of_white_and_ar1_series():
    """1 for white noise; (1 + rho) / (1 - rho) = 3 for an AR(1) series with rho = 0.5 (estimated
    and rounded up: 3 or 4); 7 to 9 samples for the low-passed noise, about the 1 / (2 fc) = 6.25
    samples at which an ideal low-pass's sinc autocorrelation has its first zero."""
    rng = np.random.default_rng(0)
    assert correlation_time(rng.standard_normal(20000)) == 1
    e = scipy.signal.lfilter([1.0], [1.0, -0.5], rng.standard_normal(20000))
    assert correlation_time(e) in (3, 4)
    assert [correlation_time(lowpassed_noise(seed)[:, 0]) for seed in (1, 3)] == [9, 7]


def test_lowpassed_noise_is_not_flagged():
    """200 noise records: no joint flagged at ALPHA = 1e-3 and p < 0.05 for about 5 % of them
    (the test on every sample instead of every 8th would flag most: neighbours are alike)."""
    p = np.array([residual_check(lowpassed_noise(seed), Q).p_value for seed in range(200)])
    assert ALPHA == 1e-3 and not np.any(p < ALPHA)
    assert 0.01 <= np.mean(p < 0.05) <= 0.08
    assert residual_check(lowpassed_noise(3), Q).step.tolist() == [7, 8]


def test_a_term_periodic_in_a_joint_angle_is_flagged_on_its_joint():
    r = lowpassed_noise(1) + np.column_stack([0.3 * np.sin(2 * Q[:, 0]), np.zeros(len(T))])
    rc = residual_check(r, Q)
    assert rc.suspect.tolist() == [True, False]
    assert rc.p_value[0] < 1e-5 and rc.p_value[1] > 0.05
    assert rc.dof.tolist() == [[8, 91], [8, 106]]
    assert rc.position_r2[0] > 0.3


@pytest.fixture(scope="module")
def study():
    with np.load(DATA / "elastic_study.npz") as f:
        arrays = dict(f)
    return arrays, json.loads((DATA / "elastic_study.json").read_text())


def test_the_study_flags_the_elastic_arm_and_not_the_rigid_one(study):
    """The identified rigid model's validation residual: joint 1 of the elastic arm is flagged,
    neither joint of the rigid arm; the numbers are those the pipeline wrote (metrics.json)."""
    arrays, metrics = study
    for case, flags in (("elastic", [True, False]), ("rigid", [False, False])):
        rc = residual_check(arrays[f"{case}_residual"], arrays[f"{case}_q"])
        assert rc.suspect.tolist() == flags
        stored = metrics[case]["validation_residual"]
        np.testing.assert_allclose(rc.F, stored["F"], rtol=1e-9)
        np.testing.assert_allclose(rc.p_value, stored["p_value"], rtol=1e-9)
        assert rc.suspect.tolist() == stored["suspect"]
    elastic = residual_check(arrays["elastic_residual"], arrays["elastic_q"])
    rigid = residual_check(arrays["rigid_residual"], arrays["rigid_q"])
    assert elastic.position_r2[0] > 5 * rigid.position_r2[0]
    assert elastic.rms[0] > 3 * rigid.rms[0]
