"""W3 (Puma 560 under computed torque): exact-model tracking, and the torque it needs equals the
inverse dynamics of the reference trajectory computed independently by RobotModel.rnea."""
from pathlib import Path

import numpy as np

import blocksim
from blocksim.models import RobotModel

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "puma560_computed_torque.yaml"


def test_w3_tracks_exactly_and_needs_the_reference_inverse_dynamics():
    r = blocksim.simulate(blocksim.load(EXAMPLE, set={"simulation.stop_time": 0.5}))
    assert np.max(np.abs(r["ref.q"] - r["plant.q"])) < 1e-9
    t = r.t
    A = np.array([0.5, 0.4, -0.3, 0.6, 0.4, 0.5])
    s, c = np.sin(np.pi * t)[:, None], np.cos(np.pi * t)[:, None]
    q_d, qd_d, qdd_d = A * (1 - c), A * np.pi * s, A * np.pi ** 2 * c
    tau = RobotModel.preset("puma560").rnea(q_d, qd_d, qdd_d)
    np.testing.assert_allclose(r["ct.tau"], tau, rtol=0, atol=1e-6)
