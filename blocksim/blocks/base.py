"""The block contract: a block is a stateless description; every state lives in arrays the run owns.

A block declares its parameters (with units and roles), ports (with units), direct feedthrough,
sample time and state sizes, and defines its arithmetic once, as numba kernels with a named
parameter record (`Kernels`, returned by `kernels()`): Block's runtime methods run those kernels,
and compiled mode calls the same kernels from generated code. A block overrides a runtime method
only for a part that is Python-only. The compiler builds one instance per diagram block for a given
batch size B; the scheduler calls its methods (bound once per call site, `Block.bind`) with views
into the run's signal and state buffers, every array with a leading batch axis of size B.

Runtime method contract (all arrays are float64, C-contiguous views, shape (B, width)):

    output(t, xc, xd, u, y)         fill every array of the tuple y in place (never rebind)
    derivative(t, xc, xd, u, dxc)   fill dxc (B, n_xc) in place
    update(t, xc, xd, u)            discrete update at a sample hit: overwrite xd (B, n_xd) in place
    zero_crossings(t, xc, xd, u, g) fill g (B, n_zc) in place; a sign change is an event
    modes(t, xc, xd, u)             at major steps only: set the block's modes, the last n_modes
                                    columns of xd, from its inputs (held through solver stages)
    on_event(t, xc, xd, u, mask)    after an event located at t: mask (B, n_zc) says which functions
                                    crossed; may change xc / xd in place (mode switches, resets);
                                    returns True to stop the simulation (terminal event)

`u` is a tuple of input arrays in `input_names()` order, `y` a tuple of output arrays in
`output_names()` order. Inputs are the driving blocks' output buffers: read them, never write them.
Unconnected optional inputs are zero arrays; `self.connected` tells which inputs are wired.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from ..errors import ParameterError, SampleTimeError, WidthError, did_you_mean
from ..reading.limits import shown
from ._kernels import NO_PARAMS, entry_point

REQUIRED = object()
"""Marker for a parameter without a default: the user must give it."""


@dataclass(frozen=True)
class Param:
    """Declaration of one block parameter.

    kind:
        "array"  numeric; resolved to a float64 array with a leading batch axis: shape (B, *shape)
        "int"    an integer (not batched)
        "bool"   true/false (not batched)
        "str"    a string, e.g. a robot name or a method (one of `choices` when given)
        "time"   a time in s, kept exact as a Fraction (periods, offsets); not batched
        "any"    passed through as written (dicts, lists of dicts); not batched
    units: SI units of the value ("rad", "N m", "-" when dimensionless); shown by `blocksim blocks`.
    role: what the engine reads the parameter as: "period" and "offset" (kind "time") give a
          discrete block's sample time (`Block.sample_time`); None for an ordinary parameter.
    allow_inf: an array parameter that may hold +-inf (a limit: inf means none).
    """

    default: Any = REQUIRED
    units: str = "-"
    doc: str = ""
    kind: str = "array"
    choices: tuple[str, ...] | None = None
    role: str | None = None
    allow_inf: bool = False

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass(frozen=True)
class SampleTime:
    """When a block runs. kind: "continuous", "discrete", "inherited" or "constant".

    period and offset are exact rationals in s (Fraction) for discrete blocks; hits are at
    t = offset + k * period, k = 0, 1, ...
    """

    kind: str
    period: Fraction | None = None
    offset: Fraction = Fraction(0)

    @staticmethod
    def continuous() -> "SampleTime":
        return SampleTime("continuous")

    @staticmethod
    def inherited() -> "SampleTime":
        return SampleTime("inherited")

    @staticmethod
    def constant() -> "SampleTime":
        return SampleTime("constant")

    @staticmethod
    def discrete(period, offset=0) -> "SampleTime":
        period, offset = exact_time(period), exact_time(offset)
        if period <= 0:
            raise SampleTimeError(f"a sample period must be positive, got {float(period)} s")
        if not 0 <= offset < period:
            raise SampleTimeError(
                f"a sample offset must satisfy 0 <= offset < period, got offset {float(offset)} s "
                f"for period {float(period)} s")
        return SampleTime("discrete", period, offset)

    @property
    def is_discrete(self) -> bool:
        return self.kind == "discrete"

    def __str__(self) -> str:
        if self.kind == "discrete":
            off = f", offset {self.offset}" if self.offset else ""
            return f"discrete(period {self.period} s{off})"
        return self.kind


def _first_bad(arr: np.ndarray) -> str:
    """The first non-finite element of an array, for a message: "nan", or "inf at [2, 0]"."""
    if arr.ndim == 0:
        return f"{float(arr)}"
    index = np.argwhere(~np.isfinite(arr))[0]
    return f"{float(arr[tuple(index)])} at [{', '.join(str(int(i)) for i in index)}]"


def exact_time(value) -> Fraction:
    """A time in s as an exact rational; a float is read through its shortest decimal text (0.1 -> 1/10)."""
    if isinstance(value, Fraction):
        return value
    if isinstance(value, (bool, np.bool_)):
        raise SampleTimeError(f"a time must be a number, got {shown(value)}")
    if isinstance(value, (int, np.integer)):
        return Fraction(int(value))
    if isinstance(value, str):
        try:
            return Fraction(value.strip())
        except ValueError:
            raise SampleTimeError(f"a time must be a number, got {shown(value)}") from None
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.reshape(-1)[0]
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise SampleTimeError(f"a time must be a number, got {shown(value)}") from None
    if not np.isfinite(value):
        raise SampleTimeError(f"a time must be finite, got {value}")
    return Fraction(repr(value))


class Params:
    """One block's resolved parameter values for a batch of members, as attributes (`v.gain`):
    arrays (B, *shape), other kinds as they are; `batch` is B and `first_member` the whole
    batch's index of member 0 (non-zero for a part of a split batch).

    These are data of a run, not of the block: a block's structure (ports, widths, states) is
    fixed when it is configured, and `Block.record(values)` turns any values of the same shapes
    into its kernels' parameter record (Drake's numeric parameters in a Context)."""

    def __init__(self, values: dict[str, Any], batch: int = 1, first_member: int = 0):
        self.__dict__.update(values)
        self.batch = int(batch)
        self.first_member = int(first_member)

    def items(self) -> dict[str, Any]:
        """The parameters alone (without batch and first_member)."""
        return {k: v for k, v in self.__dict__.items() if k not in ("batch", "first_member")}

    def __repr__(self) -> str:
        return f"Params({self.items()!r}, batch={self.batch}, first_member={self.first_member})"


REGISTRY: dict[str, type["Block"]] = {}


def register(cls: type["Block"]) -> type["Block"]:
    """Class decorator: add a block class to the library under its `type_name`."""
    old = REGISTRY.get(cls.type_name)
    if old is not None and old is not cls and (old.__module__, old.__qualname__) != \
            (cls.__module__, cls.__qualname__):          # the same class loaded again: replace
        raise ValueError(f"block type {cls.type_name!r} registered twice (by {_origin(old)} "
                         f"and {_origin(cls)})")
    REGISTRY[cls.type_name] = cls
    return cls


def _origin(cls: type) -> str:
    """Where a block class was defined: its source file when known, else its module."""
    import inspect
    try:
        return inspect.getsourcefile(cls) or cls.__module__
    except TypeError:
        return cls.__module__


PORT_UNITS: dict[str, str] = {
    "q": "rad", "qd": "rad/s", "qdd": "rad/s^2",
    "q_d": "rad", "qd_d": "rad/s", "qdd_d": "rad/s^2",
    "tau": "N m", "tau_applied": "N m",
    "i": "A", "id": "A", "iq": "A", "id_ref": "A", "iq_ref": "A",
    "v": "V", "vd": "V", "vq": "V", "vd_ref": "V", "vq_ref": "V", "v_alpha": "V", "v_beta": "V",
    "theta_e": "rad",
    "position": "m", "rotation": "-",
    "kinetic": "J", "potential": "J", "total": "J", "e_mag": "J",
    "p_elec": "W", "p_copper": "W", "p_mech": "W", "p_diss": "W",
    "da": "-", "db": "-", "dc": "-", "saturated": "-", "count": "counts",
    "f_ext": "N, N m",
}
"""The robot convention: units of a port by its name (both directions), for the ports a block class
does not declare in `port_units`. Generic ports (`in`, `out`, `in1`...) have none."""

COMMON_PARAMS: dict[str, Param] = {
    "enabled": Param(True, "-", "false: the block outputs zeros and its states hold", kind="bool"),
}


class Block:
    """Base class of every library block. Subclasses set the class attributes, configure() and
    kernels(); they override a runtime method only for what has no kernel.

    Class attributes:
        type_name     the YAML type name
        summary       one line for `blocksim blocks`
        params        {name: Param}
        inputs        default input port names (override `input_names()` when they depend on params)
        outputs       default output port names
        optional_inputs  inputs that may stay unconnected (they read zeros then)
        sample        default sample-time kind: "continuous", "inherited", "constant" or "discrete"
                      (discrete blocks take `period` and `offset` parameters)
        direct_feedthrough  True: every output reads every input directly (override `feedthrough()`)
        time_varying  True when outputs depend on t directly (sources)
        port_units    {port: units or None} for inputs and outputs whose units differ from the
                      name convention PORT_UNITS (None: the port has no units of its own)
        preserves_units  True when the outputs have the units of the inputs (plots follow them)
    """

    type_name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    params: ClassVar[dict[str, Param]] = {}
    inputs: ClassVar[tuple[str, ...]] = ("in",)
    outputs: ClassVar[tuple[str, ...]] = ("out",)
    optional_inputs: ClassVar[tuple[str, ...]] = ()
    sample: ClassVar[str] = "inherited"
    direct_feedthrough: ClassVar[bool] = True
    time_varying: ClassVar[bool] = False
    port_units: ClassVar[dict[str, str | None]] = {}
    preserves_units: ClassVar[bool] = False

    def __init__(self, name: str, params: dict[str, Any], batch: int = 1,
                 diagram_dir: str | None = None, first_member: int = 0):
        self.name = name
        self.batch = int(batch)
        # this block's member b is member first_member + b of the whole batch (a batch run split
        # into parts, one per thread); member-keyed streams such as the noise use the global index
        self.first_member = int(first_member)
        self.diagram_dir = diagram_dir  # folder of the diagram file: relative data paths start here
        self.p = self.resolve_values(params, self.batch, self.first_member)
        self.enabled = self.p.enabled
        self.connected: frozenset[str] = frozenset()
        self.in_widths: dict[str, int] = {}
        self.out_widths: dict[str, int] = {}
        self.n_xc = 0
        self.n_xd = 0
        self.n_modes = 0
        self.n_zc = 0
        self.zc_directions = np.zeros(0, dtype=np.int64)
        self._kernels: Kernels | None = None
        self.check_values(self.p)
        self.setup()

    # ---- parameters -------------------------------------------------------------------------
    @classmethod
    def all_params(cls) -> dict[str, Param]:
        merged = dict(cls.params)
        merged.update(COMMON_PARAMS)
        return merged

    def resolve_values(self, given: dict[str, Any], batch: int, first_member: int = 0) -> Params:
        """The values `given` (the file's, with per-member BatchValues) resolved for `batch`
        members: names checked, defaults filled, each value in its kind (arrays (B, *shape))."""
        return Params(self.resolve_params(given, batch), batch, first_member)

    def resolve_params(self, given: dict[str, Any], batch: int | None = None) -> dict[str, Any]:
        """Check names, fill defaults, convert each value to its kind (arrays get the batch axis
        of `batch` members, the block's own batch by default)."""
        batch = self.batch if batch is None else int(batch)
        declared = self.all_params()
        for key in given:
            if key not in declared:
                raise ParameterError(
                    f"{self.type_name} has no parameter '{key}'{did_you_mean(key, declared)}; "
                    f"its parameters are: {', '.join(declared)}", block=self.name)
        values = {}
        for key, decl in declared.items():
            if key in given:
                raw = given[key]
            elif decl.required:
                raise ParameterError(f"{self.type_name} needs parameter '{key}' ({decl.doc})",
                                     block=self.name)
            else:
                raw = decl.default
            try:
                values[key] = self.convert_param(key, decl, raw, batch)
            except ParameterError as err:
                raise err.located(block=self.name)
        return values

    def convert_param(self, key: str, decl: Param, raw: Any, batch: int | None = None) -> Any:
        """One parameter value in its declared kind; arrays as (B, *shape) float64 for `batch`
        members (the block's own batch by default)."""
        batch = self.batch if batch is None else int(batch)
        kind = decl.kind
        if raw is None and not decl.required and decl.default is None:
            return None
        if kind == "array":
            if isinstance(raw, BatchValue):
                arr = self.numeric(key, raw.values)
                if arr.shape[0] != batch:
                    raise ParameterError(
                        f"parameter '{key}' has {arr.shape[0]} batch values for a batch of {batch}")
                return np.array(arr, dtype=float)
            arr = self.numeric(key, raw)
            if not np.isfinite(arr).all() and key not in self.infinite_ok():
                raise ParameterError(f"parameter '{key}' must be finite, got {_first_bad(arr)}")
            # a writable C-contiguous copy for every batch size: numba types read-only and
            # writable arrays differently, and one type keeps compiled code shared across runs
            out = np.empty((batch,) + arr.shape)
            out[...] = arr
            return out
        if kind == "int":
            try:                      # a list or a text is no integer either
                whole = not isinstance(raw, (bool, np.bool_)) and float(raw).is_integer()
            except (TypeError, ValueError):
                whole = False
            if not whole:
                raise ParameterError(f"parameter '{key}' must be an integer, got {shown(raw)}")
            return int(raw)
        if kind == "bool":
            if not isinstance(raw, (bool, np.bool_)):
                raise ParameterError(f"parameter '{key}' must be true or false, got {shown(raw)}")
            return bool(raw)
        if kind == "str":
            if not isinstance(raw, str):
                raise ParameterError(f"parameter '{key}' must be a string, got {shown(raw)}")
            if decl.choices and raw not in decl.choices:
                raise ParameterError(
                    f"parameter '{key}' must be one of {', '.join(decl.choices)}, got '{raw}'"
                    f"{did_you_mean(raw, decl.choices)}")
            return raw
        if kind == "time":
            try:
                return exact_time(raw)
            except SampleTimeError as err:
                raise ParameterError(f"parameter '{key}': {err.message}") from None
        return raw

    @staticmethod
    def numeric(key: str, raw: Any) -> np.ndarray:
        try:
            return np.asarray(raw, dtype=float)
        except (TypeError, ValueError):
            raise ParameterError(f"parameter '{key}' must be numeric, got {shown(raw)}") from None

    def infinite_ok(self) -> tuple[str, ...]:
        """Array parameters that may hold +-inf: those declared with allow_inf."""
        return tuple(key for key, decl in self.all_params().items() if decl.allow_inf)

    @classmethod
    def param_with_role(cls, role: str) -> str | None:
        """The name of the parameter declared with `role` ("period", "offset"), or None."""
        return next((key for key, decl in cls.all_params().items() if decl.role == role), None)

    def setup(self) -> None:
        """Check parameters against each other once they are resolved, and derive what of the
        structure they decide (override; raise ParameterError). A block whose values are data of
        the run (`values_are_data`) puts its checks of values in check_values(), which runs
        first."""

    # ---- values of a run --------------------------------------------------------------------
    @classmethod
    def has_record(cls) -> bool:
        """True when the class builds its kernels' record from a run's values (`record`)."""
        return cls.record is not Block.record

    @property
    def values_are_data(self) -> bool:
        """True when nothing of the block's values lives in the block object: its class builds
        its record from a run's values (`record`), or it has no numeric parameters and no record
        of its own. One block then serves every part of a split batch and every new value set
        between runs; a block whose values are not data (a user block that keeps its numbers in
        the block) runs whole batches on one thread, and new values need the diagram loaded
        again."""
        if self.has_record():
            return True
        k = self.runtime_kernels()
        return (k is None or k.params is NO_PARAMS) and \
            not any(d.kind == "array" for d in self.all_params().values())

    def record(self, v: Params) -> tuple:
        """The kernels' parameter record for the values v (of v.batch members, arrays (B, ...)):
        the numbers from v, the structure (widths, state sizes, which crossings exist) from the
        configured block, scratch for v.batch members. Writes nothing on the block. Runtime
        methods the block overrides in Python, and initial_state, on_event, breakpoints and
        stop_requested, then take the run's record as their last argument `p` (None: the
        block's own, `runtime_kernels().params`). The default: no record (NO_PARAMS)."""
        return NO_PARAMS

    def own_record(self, p=None) -> tuple:
        """p, the run's record, or the block's own (that of the values it was built with) when
        p is None: what a Python-side call reads its values from."""
        return self.runtime_kernels().params if p is None else p

    def check_values(self, v: Params) -> None:
        """Checks of values against each other (lower <= upper, positive masses; raise
        ParameterError): for the file's values when the block is built, and for new values of a
        run (`changed_values`)."""

    def doubtful(self) -> list[tuple[str, str]]:
        """Values that run but are probably not meant, as (parameter, why) pairs: the loader
        warns about each at the parameter's line (a BlocksimWarning). Default: none."""
        return []

    def steep_terms(self, xc: np.ndarray, xd: np.ndarray) -> list[str]:
        """The smooth terms that are steep at this state (one member's continuous and discrete
        states): a linearisation there takes their tangent, which holds only in a narrow band
        around it, so it lists each with its slope (analysis/linearize.py). Default: none."""
        return []

    def state_jacobian(self, xc: np.ndarray, xd: np.ndarray, u: tuple) -> tuple | None:
        """The exact Jacobian of the block's continuous derivative at one member's states xc,
        xd and inputs u (a tuple in port order, each of width the port's), from its own model:
        (d dxc / d xc, {input port: d dxc / d that input}), an input left out having none; or
        None (the default) where the block has no exact one there. A linearisation uses it for
        the block's rows of A and B (analysis/evaluation.py), and differences otherwise."""
        return None

    def structure(self, v: Params) -> Any:
        """What of the values decides the block's structure (whether limits, and so crossings,
        exist; whether an output reads its input directly): a hashable, () by default. New values
        of a run must keep it: a change of structure needs the diagram compiled again."""
        return ()

    def member_values(self, v: Params, start: int, stop: int) -> Params:
        """The values of members start..stop-1 of v (array parameters sliced on their batch axis,
        as views), numbered as in the whole batch."""
        arrays = {k for k, d in self.all_params().items() if d.kind == "array"}
        return Params({k: (val[start:stop] if k in arrays and val is not None else val)
                       for k, val in v.items().items()}, stop - start, v.first_member + start)

    def changed_values(self, v: Params, changes: dict[str, Any]) -> Params:
        """v with new values for some array parameters ({name: value, or BatchValue of one per
        member}), each in its kind and of its old shape, checked (check_values), and keeping the
        block's structure. Other kinds (a method, a period, a robot file) decide the structure
        and raise a ParameterError naming the parameter."""
        declared = self.all_params()
        values = v.items()
        for key, raw in changes.items():
            if key not in declared:
                raise ParameterError(
                    f"{self.type_name} has no parameter '{key}'{did_you_mean(key, declared)}",
                    block=self.name)
            decl = declared[key]
            if decl.kind != "array" or values[key] is None:
                raise ParameterError(
                    f"parameter '{key}' decides the structure of the block and cannot change "
                    "between runs; load the diagram again with the new value", block=self.name)
            try:
                new = self.convert_param(key, decl, raw, v.batch)
            except ParameterError as err:
                raise err.located(block=self.name)
            if new.shape != values[key].shape:
                raise ParameterError(
                    f"parameter '{key}' must keep its shape {values[key].shape[1:]} between runs, "
                    f"got {new.shape[1:]}", block=self.name)
            values[key] = new
        out = Params(values, v.batch, v.first_member)
        self.check_values(out)
        if self.structure(out) != self.structure(self.p):
            raise ParameterError(
                f"the new values of {', '.join(sorted(changes))} change the structure of the block "
                "(its states, crossings or direct feedthrough); load the diagram again with them",
                block=self.name)
        return out

    # ---- ports ------------------------------------------------------------------------------
    @classmethod
    def units_of(cls, port: str) -> str | None:
        """Units of a port (input or output): the class's `port_units` declaration (its own or
        a base class's), else the name convention PORT_UNITS; None when the port has none."""
        for klass in cls.__mro__:
            declared = klass.__dict__.get("port_units", {})
            if port in declared:
                return declared[port]
        return PORT_UNITS.get(port)

    def input_names(self) -> list[str]:
        return list(self.inputs)

    def output_names(self) -> list[str]:
        return list(self.outputs)

    def feedthrough(self) -> set[tuple[str, str]]:
        """(input, output) pairs where the output reads the input directly (in the same step)."""
        if not self.direct_feedthrough:
            return set()
        return {(i, o) for i in self.input_names() for o in self.output_names()}

    def resolve_widths(self, in_widths: dict[str, int | None]) -> dict[str, int | None]:
        """Output widths from the parameters and the input widths known so far (None = not yet).

        Called repeatedly while widths propagate through the diagram; return None for outputs that
        cannot be known yet. Once every input is known, check them and raise WidthError naming the
        port when they do not fit. The default: every output has the width of the widest input,
        and every input must have that width or width 1 (a scalar is expanded).
        """
        known = [w for w in in_widths.values() if w is not None]
        if not known or len(known) < len(in_widths):
            return {o: None for o in self.output_names()}
        width = max(known)
        for port, w in in_widths.items():
            if w not in (1, width):
                raise WidthError(f"input has width {w}, the other inputs have width {width}",
                                 block=self.name, port=port)
        return {o: width for o in self.output_names()}

    def unwired_width(self, port: str) -> int:
        """The width of the zeros an unwired optional input reads: that of the block's widest
        output by default (a per-joint signal); a block whose optional input has a width of its
        own (the Manipulator's 6-element wrench) says so."""
        return max(list(self.out_widths.values()) + [1])

    def configure(self, in_widths: dict[str, int], out_widths: dict[str, int]) -> None:
        """Final widths are known: set n_xc, n_xd, n_zc, zc_directions and preallocate scratch."""

    # ---- time -------------------------------------------------------------------------------
    def sample_time(self) -> SampleTime:
        """`sample`; a discrete block's period and offset are its parameters declared with the
        roles "period" and "offset" (no offset parameter: offset 0)."""
        if self.sample != "discrete":
            return SampleTime(self.sample)
        period, offset = self.param_with_role("period"), self.param_with_role("offset")
        if period is None:
            raise TypeError(f"{self.type_name} is discrete but declares no parameter with "
                            f"role='period'")
        return SampleTime.discrete(getattr(self.p, period),
                                   0 if offset is None else getattr(self.p, offset))

    def breakpoints(self, t0: float, t1: float, p=None) -> list[float]:
        """Times in (t0, t1] where an output has a kink or jump the solver must not step over (s);
        p: the run's parameter record (None: the block's own)."""
        return []

    # ---- states -----------------------------------------------------------------------------
    def initial_state(self, xc: np.ndarray, xd: np.ndarray, p=None) -> None:
        """Fill the initial continuous (B, n_xc) and discrete (B, n_xd) states in place; p: the
        run's parameter record (None: the block's own)."""

    def take_run_settings(self, settings, p=None) -> None:
        """Before a run: what of the run's settings (`engine.scheduler.RunSettings`: the solver,
        its fixed step or its rtol and atol) the block's kernels read, written into its record p
        (None: the block's own) in place. Default: nothing (a block's arithmetic does not depend
        on the solver)."""

    def state_names(self) -> tuple[list[str], list[str]]:
        """Names of the continuous and discrete state elements, for `blocksim check`."""
        return ([f"xc[{i}]" for i in range(self.n_xc)], [f"xd[{i}]" for i in range(self.n_xd)])

    # ---- runtime: the kernels by default (override only a Python-only part) ------------------
    # p: the kernels' parameter record of the run (Block.record); None: the block's own.
    def output(self, t: float, xc, xd, u, y, p=None) -> None:
        """Fill the outputs y: the output kernel with the parameter record."""
        k = self.runtime_kernels()
        if k is None or k.output is None:
            raise NotImplementedError(f"{self.type_name}.output")
        k.output(t, xc, xd, u, y, self.own_record(p))

    def derivative(self, t: float, xc, xd, u, dxc, p=None) -> None:
        """dxc = dx/dt: the derivative kernel, or 0 without one."""
        k = self.runtime_kernels()
        if k is None or k.derivative is None:
            dxc[...] = 0.0
        else:
            k.derivative(t, xc, xd, u, dxc, self.own_record(p))

    def update(self, t: float, xc, xd, u, p=None) -> None:
        """Update xd in place: discrete blocks at their sample hits; continuous blocks that have
        n_xd > 0 (memory such as a rate limiter's last output) at every major step. The update
        kernel; nothing without one."""
        k = self.runtime_kernels()
        if k is not None and k.update is not None:
            k.update(t, xc, xd, u, self.own_record(p))

    def modes(self, t: float, xc, xd, u, p=None) -> None:
        """Set the block's modes, the last n_modes columns of xd, from its inputs and states: at
        major steps only (just before its output call there), so that solver stages and every
        other evaluation between major steps use the mode of the last major step, and a mode
        changes only at a major step: a located crossing's, under an adaptive solver (Simulink's
        zero-crossing modes). The modes kernel; nothing without one."""
        k = self.runtime_kernels()
        if k is not None and k.modes is not None:
            k.modes(t, xc, xd, u, self.own_record(p))

    def zero_crossings(self, t: float, xc, xd, u, g, p=None) -> None:
        """Event functions (B, n_zc); only called when n_zc > 0. The zero-crossing kernel."""
        k = self.runtime_kernels()
        if k is not None and k.zero_crossings is not None:
            k.zero_crossings(t, xc, xd, u, g, self.own_record(p))

    def bind(self, method: str, args: tuple, p=None, wait: bool = True,
             want: tuple[bool, ...] | None = None) -> tuple[Any, tuple]:
        """(fn, full args) such that fn(t, *full) does what getattr(self, method)(t, *args, p)
        does, for one call site whose arrays stay the same (the engine's views of one run); p is
        the run's parameter record (None: the block's own).

        When the block runs `method` through its kernel (it does not override it), fn is the
        kernel's compiled entry point for these arguments' types, resolved once: a call then
        skips the Python method and numba's per-call typing of the tuples (a Gain's output
        costs about 0.7 us instead of 1.5 us). Otherwise fn is the bound method itself.
        wait=False: a kernel not compiled yet runs as its Python twin (entry_point). want: for
        "output", the flags of the outputs read (OutputStep.wanted): when some are not, the
        partial_output kernel where the block has one, as compiled mode calls it."""
        k = self.runtime_kernels()
        kernel = None if k is None else getattr(k, method)
        if kernel is None or getattr(type(self), method) is not getattr(Block, method):
            return getattr(self, method), (args if p is None else args + (p,))
        full = args + (self.own_record(p),)
        if method == "output" and want is not None and not all(want) \
                and k.partial_output is not None:
            kernel, full = k.partial_output, full + (tuple(want),)
        return entry_point(kernel, full, wait), full

    def on_event(self, t: float, xc, xd, u, mask, p=None) -> bool:
        """React to located crossings (mask (B, n_zc): the functions that fired); True stops the
        simulation. The event kernel; nothing (False) without one. p: the run's record."""
        k = self.runtime_kernels()
        if k is not None and k.event is not None:
            return bool(k.event(t, xc, xd, u, mask, self.own_record(p)))
        return False

    def stop_requested(self, t: float, xc, xd, u, p=None) -> bool:
        """Checked once, at the start time, for blocks with zero crossings: True stops the run
        there (a crossing needs a change, so a condition already true at the start is seen here).
        The stop_requested kernel; False without one. p: the run's record."""
        k = self.runtime_kernels()
        if k is not None and k.stop_requested is not None:
            return bool(k.stop_requested(t, xc, xd, u, self.own_record(p)))
        return False

    # ---- compiled mode ----------------------------------------------------------------------
    def kernels(self) -> "Kernels | None":
        """The block's arithmetic (see Kernels), or None: the block then runs interpreted only,
        by its own methods. Called once, after configure() (`runtime_kernels` keeps the result);
        a block that overrides a runtime method must compute there what its kernel does."""
        return None

    def runtime_kernels(self) -> "Kernels | None":
        """kernels(), computed on the first call (after configure) and kept; for a block whose
        values are data, with the record of its own values (`record(self.p)`)."""
        if self._kernels is None:
            k = self.kernels()
            if k is not None and self.has_record():
                k = replace(k, params=self.record(self.p))
            self._kernels = k
        return self._kernels

    # ---- helpers for subclasses -------------------------------------------------------------
    def param_width(self, key: str) -> int:
        """Width implied by an array parameter: 1 for a scalar, len for a vector (not 0: an
        empty list gives no value to any element)."""
        shape = getattr(self.p, key).shape[1:]
        if len(shape) == 0:
            return 1
        if shape == (0,):
            raise ParameterError(f"parameter '{key}' is an empty list; give one value, or one "
                                 "per element of the signal", block=self.name)
        if len(shape) == 1:
            return shape[0]
        raise ParameterError(f"parameter '{key}' must be a scalar or a vector, got shape {shape}",
                             block=self.name)

    def param_as_row(self, key: str, width: int, v: Params | None = None) -> np.ndarray:
        """An array parameter of the values v (the block's own by default) expanded to
        (B, width) (a scalar repeated), for kernels."""
        value = getattr(self.p if v is None else v, key)
        if value.ndim == 1:
            return np.ascontiguousarray(np.repeat(value[:, None], width, axis=1))
        if value.ndim == 2 and value.shape[1] == width:
            return value
        if value.ndim == 2 and value.shape[1] == 1:
            return np.ascontiguousarray(np.repeat(value, width, axis=1))
        raise WidthError(f"parameter '{key}' has {value.shape[1:]} elements, the signal has {width}",
                         block=self.name)


def numbered_ports(prefix: str, count: int) -> list[str]:
    """Port names by blocksim's naming rule: `prefix` alone for one port, else prefix1..prefixN."""
    if count == 1:
        return [prefix]
    return [f"{prefix}{k + 1}" for k in range(count)]


def common_width(block: "Block", keys) -> int:
    """The signal width implied by several scalar-or-vector array parameters (1 when all scalar).

    Vectors must agree in length; a ParameterError names the parameters that do not.
    """
    widths = {key: block.param_width(key) for key in keys}
    vectors = {key: w for key, w in widths.items() if w > 1}
    if len(set(vectors.values())) > 1:
        listed = ", ".join(f"'{k}' has {w}" for k, w in vectors.items())
        raise ParameterError(f"vector parameters must have one length: {listed} elements",
                             block=block.name)
    return max(widths.values(), default=1)


@dataclass
class BatchValue:
    """A parameter given one value per batch member (from `simulate(..., batch=...)`)."""

    values: list = field(default_factory=list)


@dataclass(frozen=True)
class Kernels:
    """A block's arithmetic: its runtime methods as numba-compiled functions, run by Block's
    default methods (interpreted mode) and by the generated diagram code (compiled mode).

    Each is a module-level @njit function (importable by module and name: the code generator
    calls it from the diagram's generated step function), or None when the block has no such part:

        output(t, xc, xd, u, y, p)           u, y: tuples of (B, width) arrays (in port order)
        derivative(t, xc, xd, u, dxc, p)
        update(t, xc, xd, u, p)
        zero_crossings(t, xc, xd, u, g, p)
        modes(t, xc, xd, u, p)               the block's modes (the last n_modes columns of xd)
                                             from its inputs, at major steps only (Block.modes)
        partial_output(t, xc, xd, u, y, p, want)
                                             optional: only the outputs whose flag in `want` (a
                                             tuple of bools, in port order) is set
        event(t, xc, xd, u, mask, p) -> bool the block's reaction to located crossings
                                             (Block.on_event): mask is a (B, n_zc) bool array
                                             (possibly a non-contiguous column view of a larger
                                             array) of the block's functions that fired; resets
                                             xc / xd in place; returns True to stop the run (a
                                             terminal event)
        stop_requested(t, xc, xd, u, p) -> bool
                                             checked once at the start time
                                             (Block.stop_requested): True stops the run there

    An output kernel writes the block's outputs and nothing another kernel relies on (memos that
    the others recompute on a miss are fine): compiled mode leaves out output calls whose outputs
    nobody reads, for blocks without update and zero-crossing kernels, and calls partial_output,
    where the block has one, when only some are read. Kernels, and the helpers that index their
    arrays, are declared forceinline=True: each is compiled on its own, once per installation and
    cached, and LLVM inlines it into a diagram's loop, so a call costs nothing beyond its work and
    the loop's compile does not type and lower the kernel again (docs/architecture.md,
    "Physics"); a law's arithmetic on numbers (models/friction.py) is a function compiled on its
    own that is called, not inlined. The event and
    stop_requested kernels run inside loops compiled without numba's runtime: they allocate
    nothing (explicit loops over members and channels, scalar temporaries), read everything
    beyond their arguments from p, and return a plain bool on every path.

    p is the block's parameter record (`params`): a `collections.namedtuple` declared with the
    kernels, of parameter arrays, numbers and scratch, read by name (`p.lower`; numba compiles it
    as the plain tuple it is). Runtime data: changing a gain or a mass recompiles nothing; only
    the functions' identities, the record's type (field types, array ranks and layouts) and the
    wiring are part of the compiled code's cache key.
    """

    output: Any = None
    derivative: Any = None
    update: Any = None
    zero_crossings: Any = None
    params: tuple = NO_PARAMS
    partial_output: Any = None
    modes: Any = None
    event: Any = None
    stop_requested: Any = None

    @staticmethod
    def missing(block: Block, sample: SampleTime) -> list[str]:
        """The kernels `block` (running at `sample`) needs and its kernels() lacks, in the order
        output, derivative, update, zero_crossings: outputs need an output kernel (unless the block
        is constant, computed once in Python), continuous states a derivative, discrete states an
        update (as does a discrete block with an update method of its own), modes a modes kernel,
        zero crossings a zero-crossing kernel."""
        k = block.runtime_kernels()
        needs = []
        if block.output_names() and sample.kind != "constant":
            needs.append("output")
        if block.n_xc:
            needs.append("derivative")
        if block.n_xd > block.n_modes or (sample.is_discrete
                                          and type(block).update is not Block.update):
            needs.append("update")
        if block.n_modes:
            needs.append("modes")
        if block.n_zc:
            needs.append("zero_crossings")
        return [n for n in needs if k is None or getattr(k, n) is None]
