"""The elastic-joint studies in examples/commissioning/ run as they are: W2's FOC drive on the
elastic arm with backlash (its numbers held here), and the residual study's configs and diagrams
load and pass identify's checks (their results: tests/test_elastic_residuals.py)."""
from pathlib import Path

import numpy as np

import blocksim
from blocksim.identification.inputs import load_inputs

STUDIES = Path(__file__).resolve().parents[1] / "examples" / "commissioning"


def test_w2_drive_on_the_elastic_arm_with_backlash():
    """The link lags the motor encoder the loop is closed on (max |q_d - q| 0.0103 rad on joint 1
    against 0.0079 rad on the motor side; the rigid W2 arm: 0.0076); the backlash's contact
    changes are located events; the drive stays within its 48 V; the spring passes the drive's
    torque on (mean spring torque within 1 % of the mean drive torque on joint 1)."""
    r = blocksim.simulate(blocksim.load(STUDIES / "elastic_two_link_foc.yaml"))
    assert len(r.t) == 2001
    m = r.metrics
    np.testing.assert_allclose(m["link_max_abs_error"], [0.0102792, 0.00720355], rtol=1e-4)
    np.testing.assert_allclose(m["motor_max_abs_error"], [0.00786924, 0.00669785], rtol=1e-4)
    np.testing.assert_allclose(m["link_rms_error"], [0.00536015, 0.00432664], rtol=1e-4)
    assert len(r.events) == 10 and {e.block for e in r.events} == {"plant"}
    assert np.abs(r["act/pi.vq"]).max() <= 48.0
    spring, drive = r["plant.tau_spring"][:, 0].mean(), r["act.tau"][:, 0].mean()
    assert abs(spring - drive) < 0.01 * abs(drive)


def test_the_residual_study_configs_pass_identify_checks():
    for name in ("elastic_identify.yaml", "elastic_identify_rigid.yaml"):
        inputs = load_inputs(STUDIES / name)
        assert inputs.model.n == 2 and inputs.model.rotor_inertia
        assert inputs.plant.name == "two_link_true_geared"
