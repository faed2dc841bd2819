"""The block contract (blocks/base.py): Kernels as the one definition of a block's arithmetic, with a
named parameter record; Block's default methods and bound entry points running those kernels; the
kernel-requirement rule Kernels.missing; parameter roles; port units declared on the classes."""
from __future__ import annotations

import sys
from collections import namedtuple
from fractions import Fraction

import numpy as np
import pytest
from numba import njit

from blockcheck import BlockCheck
from test_compiled_blocks import CONFIGS, TABLE
from blocksim.blocks import REGISTRY
from blocksim.blocks.base import BatchValue, Block, Kernels, Param, SampleTime
from blocksim.errors import ParameterError

CONTRACT_MODULES = {f"blocksim.blocks.{m}" for m in
                    ("sources", "math", "routing", "continuous", "discrete", "sinks", "control",
                     "trajectories", "sensors", "actuators", "friction", "foc", "robot",
                     "kinematics", "closed_chain")}

MORE_CONFIGS = {
    "PID": [{}, {"Kd": 0.1}, {"period": 0.01, "Ki": 2.0, "Kd": 0.1, "antiwindup": "clamping",
                              "upper": 0.5}],
    "CosineRamp": [{"amplitude": 1.0, "period": 2.0}],
    "Polynomial": [{"q0": 0.0, "qf": 1.0, "tf": 1.0, "order": 3}],
    "MinimumJerk": [{"q0": 0.0, "qf": [1.0, 2.0], "duration": 1.0}],
    "Trapezoidal": [{"q0": 0.0, "qf": 1.0, "vmax": 1.0, "amax": 2.0}],
    "ViaPoints": [{"times": [0.0, 1.0, 2.0], "points": [0.0, 1.0, 0.0]}],
    "FourierSeries": [{"frequency": 0.5, "a": [[0.1, -0.1]], "b": [[0.2, -0.1]]}],
    "Encoder": [{"counts": 1000, "rounding": "nearest"}],
    "MeasurementNoise": [{"period": 0.01, "variance": 0.5}],
    "SampleDelay": [{"period": 0.01, "delay": 2}],
    "JointFriction": [{"Fc": 2.0, "Fv": 0.1}, {"Fc": 2.0, "Fv": 0.1, "eps": 1e-3}],
    "KarnoppFriction": [{"Fc": 1.0, "Fs": 2.0, "vs": 0.1, "dv": 1e-3}],
    "LuGreFriction": [{"sigma0": 1e4, "sigma1": 100.0, "sigma2": 0.4, "Fc": 1.0, "Fs": 1.5,
                       "vs": 0.1}],
    "DCMotor": [{"R": 0.5, "L": 5e-4, "Kt": 0.1, "Ke": 0.12, "N": 100},
                {"R": 0.5, "L": 5e-4, "Kt": 0.1, "N": 100, "J_load": 0.02, "b_load": 0.1}],
    "PMSM": [{"R": 0.3, "Ld": 4e-4, "Lq": 6e-4, "Kt": 0.12, "p": 4, "N": 50},
             {"R": 0.3, "Ld": 4e-4, "Kt": 0.12, "p": 4, "N": 50, "J_load": 0.01}],
    "TorqueToCurrent": [{"N": 100, "Kt": 0.1}, {"N": 100, "Kt": 0.1, "with_id": True}],
    "CurrentController": [{"axes": "q", "period": 1e-4, "Kp": 3.14, "Ki": 3142.0, "v_max": 48.0},
                          {"axes": "dq", "period": 1e-4, "Kp": 3.14, "Ki": 3142.0,
                           "v_max": 48.0}],
    "Inverter": [{"vdc": 48.0}, {"vdc": 48.0, "frame": "alphabeta"}],
    "SVPWM": [{"vdc": 48.0}],
    "Manipulator": [{"robot": "two_link"},
                    {"robot": "two_link", "friction": "coulomb_viscous", "Fv": [0.5, 0.3],
                     "Fc": [1.0, 0.5], "friction_smoothing": 1e-3},
                    {"robot": "two_link", "friction": "stribeck", "Fc": 1.0, "Fs": 1.5, "vs": 0.1,
                     "q_min": -1.0, "q_max": [1.0, 1.5], "restitution": 0.5, "tau_max": 5.0,
                     "damping": 0.1, "stiffness": 2.0, "q0": [0.1, -0.2]},
                    {"robot": "two_link", "friction": "lugre", "sigma0": 1e3, "sigma1": 10.0,
                     "Fc": 1.0, "Fs": 1.5},
                    {"robot": "two_link", "friction": "karnopp", "Fc": 1.0, "Fs": 1.5,
                     "dv": 1e-2, "payload_mass": 0.5},
                    {"robot": "two_link_point_mass", "closed_form": "never", "method": "crba",
                     "param_error": [0.0, 0.1], "gravity": [0.0, -9.81, 0.0]}],
    "InverseDynamics": [{"robot": "two_link"},
                        {"robot": "two_link", "include_friction": True, "param_error": [0.0, 0.1]},
                        {"robot": "two_link", "closed_form": "never", "mass_scale": [1.0, 1.2],
                         "include_friction": True, "friction": "stribeck", "Fc": 1.0, "Fs": 1.5}],
    "GravityCompensation": [{"robot": "two_link"},
                            {"robot": "two_link_point_mass", "closed_form": "never",
                             "payload_mass": 0.5}],
    "ComputedTorque": [{"robot": "two_link", "Kp": [400.0, 200.0], "Kd": [40.0, 20.0]},
                       {"robot": "two_link", "closed_form": "never", "Kp": 100.0, "Kd": 20.0,
                        "payload_mass": 0.2}],
    "ForwardKinematics": [{"robot": "two_link"}],
    "Jacobian": [{"robot": "two_link"}],
    "Energy": [{"robot": "two_link_point_mass", "payload_mass": 0.5}],
    "Singularity": [{"robot": "two_link"}, {"robot": "two_link", "part": "position"}],
    "ClosedChain": [{"chain": "five_bar", "q0": [-1.66, -1.48]},
                    {"chain": "five_bar", "q0": [-1.66, -1.48], "drift": "baumgarte",
                     "alpha": 5.0, "beta": 5.0, "masses": [0.5, 0.4, 0.6, 0.3]}],
    "CartesianTrajectory": [{"robot": "kr6_like", "q0": [0.3, -1.2, 0.9, 0.4, 0.7, -0.2],
                             "end": [0.3, 0.15, 0.85], "duration": 0.2, "t0": 0.1},
                            {"robot": "kr6_like", "q0": [0.3, -1.2, 0.9, 0.4, 0.7, -0.2],
                             "path": "circle", "centre": [0.25, 0.2, 0.88], "axis": [1, 0, 0],
                             "angle": 1.0, "duration": 0.3, "profile": "cubic",
                             "end_rpy": [-2.6, -1.1, 0.1]}],
}

CONTRACT_WIDTHS = {"Manipulator": {"tau": 2, "f_ext": 6}}
"""Input widths of the blocks whose inputs are not all of width 2 (the Manipulator's wrench)."""


def contract_checks(tmp_path):
    """A configured BlockCheck for every configuration of every block type of the families."""
    (tmp_path / "table.csv").write_text(TABLE)
    configs = {**CONFIGS, **MORE_CONFIGS}
    for type_name in sorted(n for n, c in REGISTRY.items() if c.__module__ in CONTRACT_MODULES):
        for params in configs.get(type_name, [{}]):
            if type_name == "PID" and params.get("Kd") and "period" not in params:
                connected = ("ref", "meas")           # the filtered derivative
            else:
                connected = None
            yield BlockCheck(type_name, params, in_widths=CONTRACT_WIDTHS.get(type_name, 2),
                             batch=2, diagram_dir=str(tmp_path),
                             connected=connected)


def test_every_block_of_the_contract_families_has_a_named_parameter_record(tmp_path):
    seen = set()
    for check in contract_checks(tmp_path):
        blk = check.block
        k = blk.runtime_kernels()
        assert k is not None, blk.type_name
        record = type(k.params)
        assert isinstance(k.params, tuple) and hasattr(record, "_fields"), \
            f"{blk.type_name}: params is a {record.__name__}, not a named record"
        # numba's on-disk cache pickles the record's type by reference: a module-level class
        assert getattr(sys.modules[record.__module__], record.__name__) is record, blk.type_name
        for name, value in zip(record._fields, k.params):
            if isinstance(value, np.ndarray):
                assert value.flags.writeable and value.flags.c_contiguous, (blk.type_name, name)
        assert Kernels.missing(blk, blk.sample_time()) == [], blk.type_name
        seen.add(blk.type_name)
    assert len(seen) >= 45


def runtime_arrays(check, seed):
    """Random inputs and states of a check's block, and fresh output / derivative / crossing rows."""
    rng = np.random.default_rng(seed)
    blk = check.block
    u = tuple(rng.normal(size=(check.batch, check.in_widths[p])) for p in check.inputs)
    xc = rng.normal(size=(check.batch, blk.n_xc))
    xd = np.abs(rng.normal(size=(check.batch, blk.n_xd)))
    return u, xc, xd


def test_block_default_methods_and_bound_entry_points_compute_what_the_kernels_compute(tmp_path):
    for n, check in enumerate(contract_checks(tmp_path)):
        blk = check.block
        k = blk.runtime_kernels()
        u, xc, xd = runtime_arrays(check, n)
        t = 0.37
        B = check.batch

        def rows(widths):
            return tuple(np.zeros((B, w)) for w in widths)

        y_out = [blk.out_widths[o] for o in check.outputs]
        cases = [("output", k.output, lambda: (xc.copy(), xd.copy(), u, rows(y_out)), 3)]
        if blk.n_xc:
            cases.append(("derivative", k.derivative,
                          lambda: (xc.copy(), xd.copy(), u, np.zeros((B, blk.n_xc))), 3))
        if k.update is not None:
            cases.append(("update", k.update, lambda: (xc.copy(), xd.copy(), u), 1))
        if blk.n_zc:
            cases.append(("zero_crossings", k.zero_crossings,
                          lambda: (xc.copy(), xd.copy(), u, np.zeros((B, blk.n_zc))), 3))
        for method, kernel, fresh, written in cases:
            direct, default, bound = fresh(), fresh(), fresh()
            kernel(t, *direct, k.params)
            getattr(blk, method)(t, *default)
            fn, args = blk.bind(method, bound)
            fn(t, *args)
            for a, b, c in zip(direct, default, bound):
                for x, y, z in zip(*(v if isinstance(v, tuple) else (v,) for v in (a, b, c))):
                    assert np.array_equal(x, y, equal_nan=True), (blk.type_name, method)
                    assert np.array_equal(x, z, equal_nan=True), (blk.type_name, method)


# ---- the kernel-requirement rule ----------------------------------------------------------------

@njit(cache=True)
def _probe_output(t, xc, xd, u, y, p):
    y[0][:, :] = p.level


ProbeParams = namedtuple("ProbeParams", "level")


class Probe(Block):
    """Test block: its state sizes and kernels are set by the test."""

    type_name = "TestContractProbe"
    inputs = ()
    params = {"period": Param(0.1, "s", kind="time", role="period")}

    def kernels(self):
        return Kernels(output=_probe_output, params=ProbeParams(np.ones((self.batch, 1))))


class ProbeWithUpdate(Probe):
    def update(self, t, xc, xd, u):
        """A Python update (no kernel for it)."""


def probe(cls=Probe, n_xc=0, n_xd=0, n_zc=0):
    blk = cls("p", {})
    blk.n_xc, blk.n_xd, blk.n_zc = n_xc, n_xd, n_zc
    return blk


@pytest.mark.parametrize("sizes, sample, missing", [
    ({}, SampleTime.continuous(), []),
    ({"n_xc": 2}, SampleTime.continuous(), ["derivative"]),
    ({"n_xd": 1}, SampleTime.discrete(0.1), ["update"]),
    ({"n_zc": 1}, SampleTime.continuous(), ["zero_crossings"]),
    ({"n_xc": 1, "n_xd": 1, "n_zc": 1}, SampleTime.continuous(),
     ["derivative", "update", "zero_crossings"]),
])
def test_kernels_missing_names_what_the_states_need(sizes, sample, missing):
    assert Kernels.missing(probe(**sizes), sample) == missing


def test_kernels_missing_an_update_of_its_own_at_a_discrete_rate_and_no_output_when_constant():
    assert Kernels.missing(probe(ProbeWithUpdate), SampleTime.discrete(0.1)) == ["update"]
    assert Kernels.missing(probe(ProbeWithUpdate), SampleTime.continuous()) == []
    assert Kernels.missing(probe(Probe), SampleTime.discrete(0.1)) == []   # Block's empty update

    class NoKernels(Probe):
        def kernels(self):
            return None

    assert Kernels.missing(probe(NoKernels), SampleTime.constant()) == []
    assert Kernels.missing(probe(NoKernels), SampleTime.continuous()) == ["output"]


def test_a_block_that_overrides_a_method_with_a_plain_tuple_keeps_its_method():
    class Legacy(Probe):
        def kernels(self):
            return Kernels(output=_probe_output, params=(2.0,))

        def output(self, t, xc, xd, u, y):
            y[0][:, :] = 2.0

    blk = probe(Legacy)
    y = (np.zeros((1, 1)),)
    fn, args = blk.bind("output", (None, None, (), y))
    assert fn == blk.output and args == (None, None, (), y)
    fn(0.0, *args)
    assert y[0][0, 0] == 2.0
    fn, args = probe(Probe).bind("output", (np.zeros((1, 0)), np.zeros((1, 0)), (), y))
    fn(0.0, *args)
    assert y[0][0, 0] == 1.0


# ---- the record costs nothing -------------------------------------------------------------------

def test_a_named_record_compiles_to_the_code_of_a_plain_tuple():
    Record = namedtuple("Record", "lower upper flag")

    @njit
    def by_name(x, p):
        return x * p.lower[0, 0] + p.upper[0, 0] if p.flag else x

    @njit
    def by_index(x, p):
        return x * p[0][0, 0] + p[1][0, 0] if p[2] else x

    a, b = np.ones((1, 1)), np.full((1, 1), 2.0)
    assert by_name(3.0, Record(a, b, True)) == by_index(3.0, (a, b, True)) == 5.0

    def instructions(fn):
        asm = next(iter(fn.inspect_asm().values()))
        return [line.strip() for line in asm.splitlines()
                if line.startswith("\t") and not line.strip().startswith(".")
                and fn.__name__ not in line]

    assert instructions(by_name) == instructions(by_index)


# ---- declarations: parameter roles, infinite limits, port units ---------------------------------

class Sampled(Block):
    """Test block: a discrete block whose period and offset have other names."""

    type_name = "TestContractSampled"
    inputs = ()
    sample = "discrete"
    params = {"Ts": Param(units="s", kind="time", role="period"),
              "phase": Param(0, "s", kind="time", role="offset"),
              "limit": Param(np.inf, "-", allow_inf=True),
              "gain": Param(1.0, "-")}


def test_sample_time_and_infinite_limits_follow_the_declared_roles():
    blk = Sampled("s", {"Ts": 0.2, "phase": 0.05})
    st = blk.sample_time()
    assert (st.kind, st.period, st.offset) == ("discrete", Fraction(1, 5), Fraction(1, 20))
    assert blk.infinite_ok() == ("limit",)
    with pytest.raises(ParameterError, match="'gain' must be finite"):
        Sampled("s", {"Ts": 0.2, "gain": np.inf})

    class Unsampled(Block):
        type_name = "TestContractUnsampled"
        sample = "discrete"
        params = {"period": Param(0.1, "s", kind="time")}

    with pytest.raises(TypeError, match="role='period'"):
        Unsampled("u", {}).sample_time()


def test_port_units_are_declared_on_the_classes():
    assert REGISTRY["MinimumJerk"].units_of("qd") == "rad/s"
    assert REGISTRY["Clock"].units_of("out") == "s"
    assert REGISTRY["Encoder"].units_of("count") == "counts"
    assert REGISTRY["Gain"].units_of("out") is None
    assert REGISTRY["PID"].units_of("tau") == "N m"          # the name convention
    assert REGISTRY["Sum"].preserves_units and not REGISTRY["Sign"].preserves_units


# ---- parameter values as data of a run ------------------------------------------------------------

def _scaled_members(blk):
    """The block's values with member 1 of every array parameter scaled by 1.25 (those whose
    scaled value the block's checks or structure refuse keep member 0's value)."""
    v = blk.p
    for key, decl in blk.all_params().items():
        value = getattr(v, key)
        if decl.kind != "array" or value is None or not np.isfinite(value).all():
            continue
        members = [value[0], value[1] * 1.25]
        try:
            v = blk.changed_values(v, {key: BatchValue(members)})
        except ParameterError:
            continue
    return v


def _run_kernels(blk, record, u, xc, xd, t=0.37):
    """Every kernel of the block on these arrays with this record: the arrays each writes."""
    k = blk.runtime_kernels()
    B = xc.shape[0]
    out = {"output": tuple(np.zeros((B, blk.out_widths[o])) for o in blk.output_names())}
    k.output(t, xc.copy(), xd.copy(), u, out["output"], record)
    if blk.n_xc:
        out["derivative"] = np.zeros((B, blk.n_xc))
        k.derivative(t, xc.copy(), xd.copy(), u, out["derivative"], record)
    if k.update is not None:
        out["update"] = xd.copy()
        k.update(t, xc.copy(), out["update"], u, record)
    if blk.n_zc:
        out["zero_crossings"] = np.zeros((B, blk.n_zc))
        k.zero_crossings(t, xc.copy(), xd.copy(), u, out["zero_crossings"], record)
    return out


def test_a_record_of_a_blocks_values_is_a_pure_function_of_them(tmp_path):
    """For every block of the families: its record of its own values is the one its kernels run
    with; building a record writes nothing on the block; and the record of one member's values
    (a part of a split batch) computes, for that member, what the whole batch's record computes
    for it, with the members' values made to differ."""
    for n, check in enumerate(contract_checks(tmp_path)):
        blk = check.block
        assert blk.values_are_data, f"{blk.type_name}: its values live in the block"
        own = blk.runtime_kernels().params
        assert type(blk.record(blk.p)) is type(own), blk.type_name
        before = {key: id(value) for key, value in vars(blk).items()}
        whole = _scaled_members(blk)
        record = blk.record(whole)
        part = blk.record(blk.member_values(whole, 1, 2))
        assert {key: id(value) for key, value in vars(blk).items()} == before, \
            f"{blk.type_name}: record() changed the block"
        # the reference: a block built anew, for one member, from member 1's values
        arrays = {k for k, d in blk.all_params().items() if d.kind == "array"}
        given = {k: (value[1] if k in arrays and value is not None else value)
                 for k, value in whole.items().items()}
        fresh = BlockCheck(blk.type_name, given, in_widths=dict(check.in_widths), batch=1,
                           diagram_dir=str(tmp_path), connected=blk.connected,
                           first_member=whole.first_member + 1).block
        u, xc, xd = runtime_arrays(check, n)
        member = (tuple(a[1:2] for a in u), xc[1:2], xd[1:2])
        of_whole = _run_kernels(blk, record, u, xc, xd)
        of_part = _run_kernels(blk, part, *member)
        of_fresh = _run_kernels(fresh, fresh.runtime_kernels().params, *member)
        for method, got in of_part.items():
            for x, y, z in zip(*(v if isinstance(v, tuple) else (v,)
                                 for v in (of_whole[method], got, of_fresh[method]))):
                assert np.array_equal(y, z, equal_nan=True), (blk.type_name, method, "fresh")
                assert np.array_equal(x[1:2], y, equal_nan=True), (blk.type_name, method)


def test_changed_values_keep_kind_shape_and_structure():
    blk = BlockCheck("Gain", {"gain": [1.0, 2.0]}, in_widths=2, batch=2).block
    v = blk.changed_values(blk.p, {"gain": [3.0, 4.0]})
    assert v.gain.tolist() == [[3.0, 4.0], [3.0, 4.0]] and blk.p.gain.tolist()[0] == [1.0, 2.0]
    v = blk.changed_values(blk.p, {"gain": BatchValue([[1.0, 1.0], [5.0, 6.0]])})
    assert v.gain.tolist() == [[1.0, 1.0], [5.0, 6.0]]
    with pytest.raises(ParameterError, match=r"keep its shape \(2,\)"):
        blk.changed_values(blk.p, {"gain": [1.0, 2.0, 3.0]})
    with pytest.raises(ParameterError, match="no parameter 'gian'.*did you mean 'gain'"):
        blk.changed_values(blk.p, {"gian": 1.0})
    with pytest.raises(ParameterError, match="'enabled' decides the structure"):
        blk.changed_values(blk.p, {"enabled": False})
    with pytest.raises(ParameterError, match="2 batch values for a batch of 3|batch of 2"):
        blk.changed_values(blk.p, {"gain": BatchValue([[1.0, 1.0]] * 3)})
