"""Linearisation of continuous diagrams: A, B, C, D by central differences of the diagram's own
functions, analysis points (inputs, outputs, openings), operating points, the `analysis:`
section and its located errors (docs/analysis.md)."""
import math
import textwrap

import numpy as np
import pytest

import blocksim
from blocksim.analysis import linear_model
from blocksim.analysis.report import margins_of
from blocksim.errors import AnalysisError, BlocksimError, DiagramFileError

G = 9.81


def text(body: str) -> str:
    return textwrap.dedent(body).lstrip()


def test_double_pendulum_at_the_hanging_pose_has_the_textbook_eigenfrequencies():
    """Point masses of 1 kg on links of 1 m (Goldstein, Classical Mechanics, small oscillations
    of the double pendulum): omega^2 = g / l (2 -/+ sqrt 2). The plant's rows are exact (the
    RNEA's analytic derivatives), so the frequencies hold to rounding."""
    d = blocksim.load("examples/double_pendulum.yaml", set={"plant.q0": [-math.pi / 2, 0.0]})
    m = linear_model(d, inputs=["tau"], outputs=["plant.q"])
    assert m.exact == ("plant (Manipulator)",)
    omega = np.sort(np.abs(np.linalg.eigvals(m.A).imag))
    slow, fast = math.sqrt(G * (2 - math.sqrt(2))), math.sqrt(G * (2 + math.sqrt(2)))
    assert omega == pytest.approx([slow, slow, fast, fast], rel=1e-12)
    assert (round(slow, 6), round(fast, 6)) == (2.397199, 5.787351)
    assert np.abs(np.linalg.eigvals(m.A).real).max() < 1e-12     # undamped: on the axis
    # the gravity stiffness M^-1 K, K = g [[3, 1], [1, 1]] N m/rad, to rounding
    M = np.array([[5.0, 2.0], [2.0, 1.0]])
    assert m.A[2:, :2] == pytest.approx(-np.linalg.solve(M, G * np.array([[3.0, 1.0], [1.0, 1.0]])),
                                        abs=1e-13)
    assert m.states == ("plant.q[shoulder]", "plant.q[elbow]", "plant.qd[shoulder]",
                        "plant.qd[elbow]")
    assert m.inputs == ("tau[0]", "tau[1]") and m.outputs == ("plant.q[0]", "plant.q[1]")
    # B is the inverse mass matrix at the pose (hanging straight, cos q2 = 1): M11 =
    # (m1 + m2) l1^2 + m2 l2^2 + 2 m2 l1 l2 = 5, M12 = m2 l2^2 + m2 l1 l2 = 2, M22 = 1 kg m^2
    assert m.B[2:] == pytest.approx(np.linalg.inv(M), abs=1e-13)
    assert m.C == pytest.approx(np.hstack([np.eye(2), np.zeros((2, 2))]))
    assert m.dt == 0.0 and m.time == 0.0
    assert m.x0 == pytest.approx([-math.pi / 2, 0, 0, 0])


def test_the_statespace_of_python_control_carries_the_names():
    control = pytest.importorskip("control")
    d = blocksim.load("examples/double_pendulum.yaml", set={"plant.q0": [-math.pi / 2, 0.0]})
    sys = blocksim.linearize(d, inputs=["tau"], outputs=["plant.q"])
    assert isinstance(sys, control.StateSpace) and sys.isctime()
    assert sys.input_labels == ["tau[0]", "tau[1]"]
    assert sys.output_labels == ["plant_q[0]", "plant_q[1]"]
    assert sys.state_labels[0] == "plant_q[shoulder]"
    # the static gain from tau to q is the inverse of the gravity stiffness dG/dq hanging,
    # g [[m1 + 2 m2, m2], [m2, m2]] l = g [[3, 1], [1, 1]] N m/rad
    K = G * np.array([[3.0, 1.0], [1.0, 1.0]])
    assert control.dcgain(sys) == pytest.approx(np.linalg.inv(K), rel=1e-6)


LOOP = text("""
    blocksim: 1
    blocks:
      x: {type: Integrator, x0: 0.5}
      k: {type: Gain, gain: -2.0}
    connections: [x -> k, k -> x]
    analysis:
      inputs: [k.out]
      outputs: [x.out, k.out]
    """)


def test_an_input_is_added_to_the_signal_and_an_output_measured():
    m = linear_model(LOOP)
    # x' = -2 x + u, outputs x and -2 x (measured as k computes it, before the injection)
    assert m.A == pytest.approx(np.array([[-2.0]])) and m.B == pytest.approx(np.array([[1.0]]))
    assert m.C == pytest.approx(np.array([[1.0], [-2.0]])) and m.D == pytest.approx(np.array([[0.0], [0.0]]))
    assert m.x0 == pytest.approx([0.5]) and m.y0 == pytest.approx([0.5, -1.0])


def test_an_opening_cuts_the_loop_at_its_operating_value():
    m = linear_model(LOOP, openings=["k.out"])
    # readers of k.out read its operating value -1 plus u: x' = u, k = -2 x
    assert m.A == pytest.approx(np.array([[0.0]])) and m.B == pytest.approx(np.array([[1.0]]))
    assert m.C == pytest.approx(np.array([[1.0], [-2.0]]))
    assert m.openings == ("k.out",)
    assert m.y0 == pytest.approx([0.5, -1.0])


SQUARE = text("""
    blocksim: 1
    blocks:
      one: {type: Constant, value: 1.0}
      x:   {type: Integrator}
      sq:  {type: Function, expr: "u ** 3"}
    connections: [one -> x, x -> sq]
    simulation: {stop_time: 4, solver: dop853, rtol: 1.0e-12, atol: 1.0e-12}
    analysis: {inputs: [one], outputs: [sq], at: {time: 1.5}}
    """)


def test_a_time_of_a_run_is_the_state_the_run_reaches_there():
    m = linear_model(SQUARE)
    # x(t) = t: the output x^3 has the slope 3 t^2 = 6.75 at t = 1.5 s
    assert m.time == 1.5 and m.x0 == pytest.approx([1.5], abs=1e-9)
    assert m.C == pytest.approx(np.array([[6.75]]), rel=1e-8)
    assert m.y0 == pytest.approx([1.5 ** 3], rel=1e-9)
    assert m.A == pytest.approx(np.array([[0.0]])) and m.B == pytest.approx(np.array([[1.0]]))


def test_given_states_replace_the_initial_ones():
    m = linear_model(SQUARE, at={"states": {"x": [2.0]}})
    assert m.time == 0.0 and m.C == pytest.approx(np.array([[12.0]]), rel=1e-8)


def test_a_saturation_is_linearised_in_its_region_and_listed():
    body = text("""
        blocksim: 1
        blocks:
          zero: {type: Constant, value: 0.0}
          x:   {type: Integrator, x0: 3.0}
          sat: {type: Saturation, lower: -1, upper: 1}
        connections: [zero -> x, x -> sat]
        analysis: {inputs: [x], outputs: [sat]}
        """)
    assert linear_model(body).C == pytest.approx(np.array([[0.0]]))           # above: flat
    inside = linear_model(body, at={"states": {"x": [0.2]}})
    assert inside.C == pytest.approx(np.array([[1.0]])) and inside.nonsmooth == ("sat (Saturation)",)


ARM_LOOP = """
    blocksim: 1
    blocks:
      plant: {type: Manipulator, robot: two_link_point_mass, q0: [-1.2, 0.4], qd0: [0.3, -0.2],
              friction: stribeck, Fc: 0.5, Fs: 0.8, Fv: 0.1, friction_smoothing: 0.05}
      k: {type: Gain, gain: -3.0}
    connections: [plant.q -> k, k -> plant.tau]
    analysis: {inputs: [k.out], outputs: [plant.q]}
    """


WRENCH = """
      fx: {type: Constant, value: [3.0, -2.0, 0.0, 0.0, 0.0, 0.5]}
    connections: [plant.q -> k, k -> plant.tau, fx -> plant.f_ext]
    analysis: {inputs: [k.out, fx], outputs: [plant.q]}
    """


@pytest.mark.parametrize("wrench", [False, True])
def test_the_manipulator_rows_are_exact_and_chained_with_the_differenced_rest(monkeypatch, wrench):
    """A smooth Stribeck friction and a feedback gain (and a tool wrench): the exact rows (the
    RNEA's derivatives, the friction's slope, d qdd / d tau times the gain's differences, d qdd
    / d f_ext) agree with the central differences of the whole diagram to their error."""
    body = text(ARM_LOOP)
    if wrench:
        body = body[:body.index("connections:")] + text(WRENCH).replace("fx:", "  fx:", 1)
    exact = linear_model(body)
    assert exact.exact == ("plant (Manipulator)",)
    from blocksim.blocks.robot import Manipulator
    monkeypatch.setattr(Manipulator, "state_jacobian", lambda self, xc, xd, u: None)
    differenced = linear_model(body)
    assert exact.B.shape == (4, 8 if wrench else 2)
    assert differenced.exact == ()
    assert np.abs(exact.A - differenced.A).max() <= 1e-8 * np.abs(exact.A).max()
    assert exact.B == pytest.approx(differenced.B, rel=1e-8, abs=1e-12)


def test_a_stuck_joint_is_held_locked_in_its_mode():
    """An exact-sign friction at rest sticks the shoulder (static level 50 N m); the elbow, without
    Coulomb friction, swings on it locked: qdd1 = 0 and qdd2 = (tau2 - G2) / M22 with
    G2 = m2 g l2 cos(q1 + q2), M22 = m2 l2^2 = 1 kg m^2, tau = -3 q (a sign has no derivative at
    qd = 0, so the differences of a stuck joint give slopes of Fc / h)."""
    body = text(ARM_LOOP).replace("qd0: [0.3, -0.2]", "qd0: [0.0, 0.0]").replace(
        "Fc: 0.5, Fs: 0.8, Fv: 0.1, friction_smoothing: 0.05",
        "Fc: [0.5, 0.0], Fs: [50.0, 0.0], Fv: 0.1, friction_smoothing: 0.0")
    m = linear_model(body)
    assert m.exact == ("plant (Manipulator)",) and m.nonsmooth == ("plant (Manipulator)",)
    s12 = G * math.sin(-1.2 + 0.4)
    assert m.A[2] == pytest.approx([0, 0, 0, 0], abs=1e-15)
    assert m.A[3] == pytest.approx([s12, -3.0 + s12, 0.0, -0.1], rel=1e-12, abs=1e-12)
    assert m.B[2:] == pytest.approx(np.array([[0.0, 0.0], [0.0, 1.0]]), abs=1e-10)   # tau: differenced


# ---- the analysis: section and its errors -------------------------------------------------------

def message(source, **kw) -> str:
    with pytest.raises(BlocksimError) as err:
        linear_model(source, **kw)
    return str(err.value)


def test_an_unknown_signal_is_located_with_a_suggestion(tmp_path):
    path = tmp_path / "loop.yaml"
    path.write_text(LOOP.replace("outputs: [x.out, k.out]", "outputs: [x.out, kk.out]"))
    assert message(path) == (f"{path}:8: no block 'kk' for analysis.outputs (did you mean 'k'?)")


def test_an_unknown_port_and_key_are_located(tmp_path):
    path = tmp_path / "loop.yaml"
    path.write_text(LOOP.replace("inputs: [k.out]", "inputs: [k.output]"))
    assert message(path) == (f"{path}:7: block 'k', port 'output': Gain has no output 'output' "
                             "(did you mean 'out'?); outputs: out")
    path.write_text(LOOP.replace("inputs: [k.out]", "input: [k.out]"))
    with pytest.raises(DiagramFileError) as err:
        blocksim.load(path)
    assert str(err.value) == (f"{path}:7: unknown key 'input' in analysis; did you mean "
                              "'inputs'? (valid keys: inputs, outputs, openings, at, trim, period)")


def test_bad_operating_points_and_outputs_are_refused(tmp_path):
    path = tmp_path / "sq.yaml"
    path.write_text(SQUARE.replace("at: {time: 1.5}", "at: {tme: 1.5}"))
    assert message(path) == (f"{path}:8: unknown key 'tme' in analysis.at; did you mean 'time'? "
                             "(valid keys: time, states, discrete_states, inputs)")
    assert message(SQUARE, at={"states": {"x": [1.0, 2.0]}}) == (
        "keyword at: block 'x': analysis.at.states: block 'x' has 1 continuous state(s) "
        "(x[0]), given [1.0, 2.0]")
    assert message(SQUARE, at=-1.0) == \
        "keyword at: analysis.at.time -1.0 s is before the start time 0.0 s"
    body = LOOP.replace("  outputs: [x.out, k.out]\n", "")
    assert message(body) == ("<text>:6: a linearisation needs at least one output "
                             "(analysis.outputs: the signals measured, such as plant.q)")


def test_a_block_with_memory_of_every_major_step_is_refused():
    body = text("""
        blocksim: 1
        blocks:
          one: {type: Constant, value: 1.0}
          x:  {type: Integrator}
          rl: {type: RateLimiter, rising: 1, falling: -1}
        connections: [one -> x, x -> rl]
        analysis: {inputs: [x], outputs: [rl]}
        """)
    assert message(body).startswith("<text>:5: block 'rl': RateLimiter keeps a memory that it "
                                    "updates at every major step")


def test_the_analysis_section_is_kept_in_the_resolved_diagram():
    d = blocksim.load(LOOP)
    assert "analysis:" in d.resolved_yaml()
    assert linear_model(blocksim.load(d.resolved_yaml())).A == pytest.approx(np.array([[-2.0]]))


# ---- analysis points on one element of a vector signal ------------------------------------------

PAIR = text("""
    blocksim: 1
    blocks:
      x: {type: Integrator, x0: [0.5, 1.0]}
      k: {type: Gain, gain: [-2.0, -3.0]}
    connections: [x -> k, k -> x]
    analysis:
      inputs: ["k.out[0]"]
      outputs: ["k.out[0]"]
      openings: ["k.out[0]"]
    """)


def test_an_opening_at_one_element_cuts_that_element_only():
    m = linear_model(PAIR, outputs=["k.out[0]", "x.out"])
    # x0' = u (the cut element: its operating value -1 plus u), x1' = -3 x1 (still closed)
    assert m.A == pytest.approx(np.diag([0.0, -3.0])) and m.B == pytest.approx(np.array([[1.0], [0.0]]))
    assert m.C == pytest.approx(np.array([[-2.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
    assert m.inputs == ("k.out[0]",) and m.outputs == ("k.out[0]", "x.out[0]", "x.out[1]")
    assert m.u0 == pytest.approx([-1.0]) and m.y0 == pytest.approx([-1.0, 0.5, 1.0])


def test_a_loop_at_one_element_is_a_loop_with_margins():
    m = linear_model(PAIR)
    assert m.loop == "k.out[0]"
    # the model is -L: L = 2 / s, the integrator's loop at element 0 (element 1 unobservable)
    assert m.A == pytest.approx(np.diag([0.0, -3.0])) and m.C @ m.B == pytest.approx(np.array([[-2.0]]))
    margins = margins_of(m)
    assert margins.crossover == pytest.approx(2.0 / (2 * math.pi), rel=1e-9)
    assert margins.phase_margin == pytest.approx(90.0, abs=1e-9) and margins.stable
    inner = linear_model(PAIR, inputs=["k.out[1]"], outputs=["x.out[1]"], openings=[])
    assert inner.A == pytest.approx(np.diag([-2.0, -3.0]))
    assert inner.B == pytest.approx(np.array([[0.0], [1.0]])) and inner.C == pytest.approx(np.array([[0.0, 1.0]]))


@pytest.mark.parametrize("point, said", [
    ("k.out[2]", "no element 2 in k.out[2] for analysis.inputs: the signal has width 2 "
                 "(elements 0 to 1)"),
    ("k.out[-1]", "no element '-1' in k.out[-1] for analysis.inputs: the signal has width 2 "
                  "(elements 0 to 1)"),
])
def test_an_element_out_of_range_is_located(tmp_path, point, said):
    path = tmp_path / "pair.yaml"
    path.write_text(PAIR.replace('inputs: ["k.out[0]"]', f'inputs: ["{point}"]'))
    assert message(path) == f"{path}:7: block 'k', port 'out': {said}"


def test_overlapping_points_and_unknown_blocks_in_elements_are_refused():
    assert message(PAIR, inputs=["k.out", "k.out[1]"]) == (
        "keyword inputs: block 'k', port 'out': analysis.inputs names k.out and k.out[1], which "
        "overlap (name the whole signal or its elements)")
    assert message(PAIR, outputs=["kk.out[1]"]) == (
        "keyword outputs: no block 'kk' for analysis.outputs (did you mean 'k'?)")
