"""The closed-chain plant on the five-bar linkage (examples/five_bar.yaml): the model against an
independent minimal-coordinate reference (tests/five_bar_reference.py), the energy balance, the
assembly and its errors, redundant loops refused, the singularity warning."""
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import blocksim
from blocksim.errors import BlocksimWarning, ParameterError
from blocksim.models.closed_chain import AssemblyError
from blocksim.models.closed_chain_file import preset, read_closed_chain

sys.path.insert(0, str(Path(__file__).parent))
from blockcheck import BlockCheck  # noqa: E402
import five_bar_reference as ref  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "five_bar.yaml"
TIMES = np.round(np.arange(301) * 0.01, 12)
Q0_ISSUE = np.array([-1.658062789, 0.576245251, -1.483529864, -0.576245251])


@pytest.fixture(scope="module")
def reference():
    """q (301, 4) and lambda (301, 2) of the reference scenario on the example's log grid."""
    return ref.simulate(TIMES)


def five_bar_chain():
    mech = preset("five_bar")
    return mech, mech.chain()


def test_assembly_gives_the_issue_configuration_and_tool_point():
    mech, chain = five_bar_chain()
    q = mech.assemble(chain, np.radians([-95.0, -85.0]))
    assert mech.joint_names == ("th1", "ph1", "th2", "ph2")
    assert np.max(np.abs(q - Q0_ISSUE)) < 1e-9
    assert np.max(np.abs(mech.residual(chain, q)[0])) < 1e-15
    blk = BlockCheck("ClosedChain", {"chain": "five_bar", "q0": np.radians([-95.0, -85.0])},
                     in_widths={"tau": 2})
    q, qd, qdd, lam, phi, tool = blk.output(0.0, [0.0, 0.0])[:6]
    assert np.max(np.abs(tool[0] - [0.1, -0.419942191, 0.0])) < 1e-9
    assert np.max(np.abs(qd)) == 0.0 and phi[0, 0] < 1e-15


def test_accelerations_and_lambda_equal_the_reference_at_a_moving_state():
    """qdd and lambda of the block at a state with speed and torque, against the minimal model."""
    z, zd = np.array([-1.5, -1.3]), np.array([0.7, -1.1])
    _, q, qd, qdd_ref, lam_ref = ref.dynamics(0.3, z, zd)
    blk = BlockCheck("ClosedChain", {"chain": "five_bar", "q0": [-1.5, -1.3]}, in_widths={"tau": 2})
    blk.xc[0, :4], blk.xc[0, 4:8] = q, qd
    out = blk.output(0.3, ref.torque(0.3))
    assert np.max(np.abs(out[2][0] - qdd_ref)) < 1e-11
    assert np.max(np.abs(out[3][0] - lam_ref)) < 1e-11


def test_the_example_matches_the_reference_and_closes_its_energy_balance(reference):
    """dop853 at rtol = atol = 1e-12: q to 1e-9 rad and lambda to 1e-8 N at every logged point;
    E - E0 = W_motor - W_damper to 1e-10 J, the works integrated as states of the run."""
    q_ref, lam_ref = reference
    r = blocksim.simulate(blocksim.load(EXAMPLE))
    np.testing.assert_array_equal(r.t, TIMES)
    assert np.max(np.abs(r["plant.q"] - q_ref)) < 1e-9
    assert np.max(np.abs(r["plant.lambda"] - lam_ref)) < 1e-8
    assert np.max(np.abs(r["plant.balance"])) < 1e-10
    work = r["plant.work"]
    assert work[-1, 1] > 1e-3 and np.ptp(work[:, 0]) > 1e-2        # both terms really move
    E = r["plant.energy"][:, 0]
    assert np.max(np.abs(E - E[0] - (work[:, 0] - work[:, 1]))) < 1e-10
    assert np.max(np.abs(r["plant.lambda"])) > 1.0                   # the loop carries load
    assert r.metrics["energy_balance"][0] < 1e-10


def test_rk4_with_projection_keeps_the_loop_closed(reference):
    """rk4 at 1 ms, projection at every major step: |phi| < 1e-12 m over the 3 s and q(3 s)
    within 1e-9 rad of the reference; without projection the loop opens 1e-10 m."""
    q_ref, _ = reference
    base = {"simulation.solver": "rk4", "simulation.step": 1e-3}
    r = blocksim.simulate(blocksim.load(EXAMPLE, set=base))
    assert np.max(r["plant.phi_norm"]) < 1e-12
    assert np.max(np.abs(r["plant.q"][-1] - q_ref[-1])) < 1e-9
    free = blocksim.simulate(blocksim.load(EXAMPLE, set={**base, "plant.drift": "none"}))
    assert np.max(free["plant.phi_norm"]) > 1e-11
    baumgarte = blocksim.simulate(blocksim.load(EXAMPLE, set={**base, "plant.drift": "baumgarte"}))
    assert np.max(r["plant.phi_norm"]) < np.max(baumgarte["plant.phi_norm"]) \
        < np.max(free["plant.phi_norm"])


def write(tmp_path, text):
    path = tmp_path / "mech.yaml"
    path.write_text(textwrap.dedent(text))
    return path


FILE = """\
    name: two_arms
    gravity: [0.0, -9.81, 0.0]
    branches:
      left:
        base: {xyz: [0.0, 0.0, 0.0]}
        links:
          - {name: a1, a: 0.2, mass: 0.5, com: [-0.1, 0, 0], inertia: [0, 0.002, 0.002]}
          - {name: a2, a: 0.25, mass: 0.4, com: [-0.125, 0, 0], inertia: [0, 0.002, 0.002]}
      right:
        base: {xyz: [0.2, 0.0, 0.0]}
        links:
          - {name: b1, a: 0.2, mass: 0.5, com: [-0.1, 0, 0], inertia: [0, 0.002, 0.002]}
          - {name: b2, a: 0.25, mass: 0.4, com: [-0.125, 0, 0], inertia: [0, 0.002, 0.002]}
    loops:
      - {name: wrist, between: [left, right], rows: ROWS}
    actuated: [a1, b1]
    assembly: {a2: 0.6, b2: -0.6}
"""


def test_a_configuration_that_cannot_close_is_refused_naming_the_loop(tmp_path):
    path = write(tmp_path, FILE.replace("ROWS", "xy"))
    with pytest.raises(AssemblyError) as err:
        BlockCheck("ClosedChain", {"chain": str(path), "q0": [np.pi, 0.0]}, in_widths={"tau": 2})
    text = str(err.value)
    assert "loop 'wrist' cannot be closed with the actuated joints at a1 = 3.14159 rad, b1 = 0 rad" \
        in text
    assert err.value.where.file.endswith("mech.yaml") and err.value.where.line == 15
    assert err.value.block == "blk"


def test_a_spatial_loop_over_planar_joints_drops_its_redundant_row(tmp_path):
    """The five-bar closed by a spatial 3-row loop: its z row is dependent (no joint moves the
    tips along z), so it is left out; the motion equals the planar loop's and lambda_z is 0."""
    spatial = tmp_path / "five_bar_xyz.yaml"
    spatial.write_text((ROOT / "blocksim" / "models" / "closed_chains" / "five_bar.yaml")
                       .read_text().replace("rows: xy}", "rows: xyz}"))
    blk = BlockCheck("ClosedChain", {"chain": str(spatial), "q0": [-1.66, -1.48]},
                     in_widths={"tau": 2})
    (param, message), = blk.block.doubtful()
    assert param == "chain" and message.startswith(
        "loop 'tip': 1 of its 3 constraint rows is dependent on the others")
    settings = {"simulation.stop_time": 0.5, "simulation.rtol": 1e-10, "simulation.atol": 1e-10}
    planar = blocksim.simulate(blocksim.load(EXAMPLE, set=settings))
    with pytest.warns(BlocksimWarning, match="parameter 'chain': loop 'tip': 1 of its 3 "):
        r = blocksim.simulate(blocksim.load(EXAMPLE, set={**settings, "plant.chain": str(spatial)}))
    assert r["plant.lambda"].shape == (51, 3) and np.all(r["plant.lambda"][:, 2] == 0.0)
    assert np.max(np.abs(r["plant.lambda"][:, :2] - planar["plant.lambda"])) < 1e-12
    assert np.max(np.abs(r["plant.q"] - planar["plant.q"])) < 1e-13
    assert np.max(np.abs(planar["plant.lambda"])) > 1.0


WELDED = """\
    name: welded
    gravity: [0.0, -9.81, 0.0]
    branches:
      left:
        base: {xyz: [0.0, 0.0, 0.0]}
        links:
          - {name: th1, a: 0.2, mass: 0.5, com: [-0.1, 0, 0], inertia: [0, 0.0017, 0.0017], viscous: 0.02}
          - {name: ph1, a: 0.25, mass: 0.4, com: [-0.125, 0, 0], inertia: [0, 0.0021, 0.0021], viscous: 0.02}
      right:
        base: {xyz: [0.2, 0.0, 0.0]}
        links:
          - {name: th2, a: 0.2, mass: 0.5, com: [-0.1, 0, 0], inertia: [0, 0.0017, 0.0017], viscous: 0.02}
          - {name: ph2, a: 0.15, mass: 0.3, com: [-0.075, 0, 0], inertia: [0, 0.0006, 0.0006], viscous: 0.02}
          - {name: ps2, a: 0.1, mass: 0.2, com: [-0.05, 0, 0], inertia: [0, 0.0002, 0.0002], viscous: 0.02}
    loops:
      - {name: weld, between: [left, right], rows: pose}
    actuated: [th1, th2]
    assembly: {ph1: 0.6, ph2: -0.3, ps2: -1.0}
"""


def test_a_pose_loop_welds_the_tool_frames_and_keeps_the_energy_balance(tmp_path):
    """A 2R and a 3R branch with their tool frames welded (position and orientation, 6 rows, of
    which the planar joints leave x, y and the rotation about z): 2 degrees of freedom. Over 1 s
    of the example's torques under dop853 at 1e-12 the tips' angles stay equal, the loop closed,
    and E - E0 = W_motor - W_damper; lambda holds the force x-y and the moment about z."""
    path = tmp_path / "welded.yaml"
    path.write_text(textwrap.dedent(WELDED))
    settings = {"plant.chain": str(path), "plant.q0": [-1.6580627893946132, -1.4835298641951802],
                "plant.singular": "none", "simulation.stop_time": 1.0}
    with pytest.warns(BlocksimWarning, match="loop 'weld': 3 of its 6 constraint rows are "):
        r = blocksim.simulate(blocksim.load(EXAMPLE, set=settings))
    q, lam = r["plant.q"], r["plant.lambda"]
    assert q.shape == (101, 5) and lam.shape == (101, 6)
    assert np.max(np.abs((q[:, 0] + q[:, 1]) - (q[:, 2] + q[:, 3] + q[:, 4]))) < 1e-12
    assert np.max(r["plant.phi_norm"]) < 1e-12
    assert np.max(np.abs(r["plant.balance"])) < 1e-10
    assert np.min(np.ptp(q, axis=0)) > 0.3                        # every joint moves
    assert np.all(lam[:, 2:5] == 0.0) and np.max(np.abs(lam[:, 5])) > 0.1      # N m about z
    assert np.max(np.abs(lam[:, :2])) > 1.0


def test_a_loop_with_no_independent_row_is_refused_naming_it(tmp_path):
    path = write(tmp_path, FILE.replace("ROWS", "xy") .replace(
        "      - {name: wrist, between: [left, right], rows: xy}\n",
        "      - {name: wrist, between: [left, right], rows: xy}\n"
        "      - {name: again, between: [right, left], rows: xy}\n"))
    with pytest.raises(AssemblyError) as err:
        BlockCheck("ClosedChain", {"chain": str(path), "q0": [-1.66, -1.48]}, in_widths={"tau": 2})
    assert "loop 'again': none of its 2 constraint rows is independent of the other loops'" \
        in str(err.value)
    assert err.value.where.line == 16


def test_file_errors_name_the_line(tmp_path):
    path = write(tmp_path, FILE.replace("ROWS", "xy").replace("[left, right]", "[left, rigth]"))
    with pytest.raises(ParameterError) as err:
        read_closed_chain(path)
    assert "loop 'wrist': 'rigth' is not a branch (did you mean 'right'?)" in str(err.value)
    assert err.value.where.line == 15
    path = write(tmp_path, FILE.replace("ROWS", "xy").replace("actuated: [a1, b1]",
                                                               "actuated: [a1, b3]"))
    with pytest.raises(ParameterError, match="actuated: 'b3' is not a joint") as err:
        read_closed_chain(path)
    assert err.value.where.line == 16


def test_a_start_near_a_singular_configuration_is_warned():
    """The distal links nearly aligned (the tool at the edge of its reach): the passive joints'
    loop Jacobian is nearly singular."""
    a = np.arcsin(0.7499999)
    blk = BlockCheck("ClosedChain", {"chain": "five_bar", "q0": [-np.pi / 2 - a, -np.pi / 2 + a]},
                     in_widths={"tau": 2})
    (param, message), = blk.block.doubtful()
    assert param == "q0" and message.startswith("chain 'five_bar' starts near a singular "
                                                "configuration (sigma_min/sigma_max ")
    calm = BlockCheck("ClosedChain", {"chain": "five_bar", "q0": [-1.66, -1.48]},
                      in_widths={"tau": 2})
    assert calm.block.doubtful() == []


def test_bad_values_are_refused():
    with pytest.raises(ParameterError, match="alpha and beta are the Baumgarte gains; with drift: "
                                             "projection they have no effect"):
        BlockCheck("ClosedChain", {"chain": "five_bar", "q0": [-1.66, -1.48], "alpha": 5.0},
                   in_widths={"tau": 2})
    with pytest.raises(ParameterError, match="'masses' must be > 0"):
        BlockCheck("ClosedChain", {"chain": "five_bar", "q0": [-1.66, -1.48],
                                   "masses": [0.5, 0.0, 0.5, 0.4]}, in_widths={"tau": 2})
    with pytest.raises(blocksim.errors.WidthError, match="chain 'five_bar' has 2 actuated joints"):
        BlockCheck("ClosedChain", {"chain": "five_bar", "q0": [-1.66, -1.48]}, in_widths={"tau": 3})


def test_the_example_checks_and_runs_through_the_cli(tmp_path):
    import json
    import subprocess

    def cli(*args):
        proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), *map(str, args)],
                              capture_output=True, text=True, timeout=600, cwd=ROOT)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout

    assert EXAMPLE.read_text().startswith("# Purpose: ")
    assert "is valid" in cli("check", EXAMPLE)
    cli("simulate", EXAMPLE, "--set", "simulation.stop_time=0.3", "--out", tmp_path / "run",
        "--plot")
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())["default"]
    assert metrics["energy_balance"][0] < 1e-10 and metrics["loop_gap"][0] < 1e-12
    for name in ("joint_angles", "lambda", "phi", "tool_path", "energy_balance"):
        assert list((tmp_path / "run").rglob(f"{name}.*")), name


MODIFIED_DH = """\
    name: five_bar_modified
    gravity: [0.0, -9.81, 0.0]
    branches:
      left:
        convention: modified
        base: {xyz: [0.0, 0.0, 0.0]}
        tool: {xyz: [0.25, 0.0, 0.0]}
        links:
          - {name: th1, a: 0.0, mass: 0.5, com: [0.1, 0, 0], inertia: [0, I1, I1], viscous: 0.02}
          - {name: ph1, a: 0.2, mass: 0.4, com: [0.125, 0, 0], inertia: [0, I2, I2], viscous: 0.02}
      right:
        convention: modified
        base: {xyz: [0.2, 0.0, 0.0]}
        tool: {xyz: [0.25, 0.0, 0.0]}
        links:
          - {name: th2, a: 0.0, mass: 0.5, com: [0.1, 0, 0], inertia: [0, I1, I1], viscous: 0.02}
          - {name: ph2, a: 0.2, mass: 0.4, com: [0.125, 0, 0], inertia: [0, I2, I2], viscous: 0.02}
    loops:
      - {name: tip, between: [left, right], rows: xy}
    actuated: [th1, th2]
    assembly: {ph1: 0.6, ph2: -0.6}
"""


def test_branches_in_modified_dh_with_a_tool_frame_give_the_same_mechanism(tmp_path):
    """The five-bar written in Craig's convention (frames on the joints, the tip as a tool
    frame): the same assembly, accelerations and lambda as the preset's standard DH."""
    text = MODIFIED_DH.replace("I1", repr(0.5 * 0.2 ** 2 / 12)).replace("I2", repr(0.4 * 0.25 ** 2 / 12))
    path = tmp_path / "five_bar_modified.yaml"
    path.write_text(textwrap.dedent(text))
    params = {"q0": [-1.5, -1.3], "qd0": [0.7, -1.1]}
    a = BlockCheck("ClosedChain", {"chain": "five_bar", **params}, in_widths={"tau": 2})
    b = BlockCheck("ClosedChain", {"chain": str(path), **params}, in_widths={"tau": 2})
    np.testing.assert_allclose(b.xc, a.xc, rtol=0, atol=1e-14)
    for x, y in zip(a.output(0.2, [0.1, -0.05]), b.output(0.2, [0.1, -0.05])):
        np.testing.assert_allclose(y, x, rtol=0, atol=1e-12)
    assert abs(a.output(0.2, [0.1, -0.05])[1][0, 1]) > 0.5      # a moving passive joint


def test_assembly_from_a_tool_point_finds_the_issue_configuration():
    blk = BlockCheck("ClosedChain", {"chain": "five_bar", "q0": [-1.5, -1.5],
                                     "tool0": [0.1, -0.419942191]}, in_widths={"tau": 2})
    assert np.max(np.abs(blk.xc[0, :4] - Q0_ISSUE)) < 1e-8
    with pytest.raises(AssemblyError, match=r"loop 'tip' cannot be closed with its point at "
                                            r"\(0\.1, -0\.6\) m: "):
        BlockCheck("ClosedChain", {"chain": "five_bar", "q0": [-1.5, -1.5], "tool0": [0.1, -0.6]},
                   in_widths={"tau": 2})
    with pytest.raises(ParameterError, match="'tool0' needs 2 values, got 3"):
        BlockCheck("ClosedChain", {"chain": "five_bar", "q0": [-1.5, -1.5],
                                   "tool0": [0.1, -0.4, 0.0]}, in_widths={"tau": 2})
    with pytest.raises(ParameterError, match="'tool0' needs 2 values, got 1"):
        BlockCheck("ClosedChain", {"chain": "five_bar", "q0": [-1.5, -1.5], "tool0": 0.1},
                   in_widths={"tau": 2})
