"""The robot's Model and Data for the numba kernels (Pinocchio's split): an immutable Model of named
fields, one row per batch member, a preallocated Data workspace of named fields, and algorithms
`algo(model, data, k, ...)` that allocate nothing.

Model = (jtype, rows): jtype (n,) int64 the joint types (0 revolute about the body z axis,
1 prismatic along it), shared by every member; rows (Bm, model_size(n)) float64, one row of float
fields per member (Bm is 1 when every batch member has the same robot, else B; member b reads row
`member(model, b)`). The fields of a row, read by the accessors of the same name:
    tool         (12,)    tool frame in the last body frame (the layout of an xtree row)
    gravity      (3,)     gravity in the base frame (m/s^2)
    closed_form  (11,)    the planar 2R closed-form parameters (`planar2r`), zeros when unused
    xtree        (n, 12)  joint i's placement in body frame i - 1 (R row-major, then p in m)
    inertia      (n, 10)  body i's ten inertial parameters about its origin
    armature     (n,)     reflected rotor inertia N^2 Jm on M's diagonal (0 when off)
Layouts and frames are those of `rigid_body_kernels` (body frame i is joint i's frame after its
motion).

Data: one float64 array of data_size(n, B) for n joints and batch B, its fields read by accessors:
    f1         (1, 6)            one member's tool wrench
    ws         (n + 1, WS_COLS)  the rigid-body kernels' workspace
    joint      (10, n)           per-call joint rows, named by the row constants below (Q1 ... STUCK)
    mass       (1, n, n)         one member's mass matrix
    chol       (n, n)            its Cholesky factor on the free joints
    poses      (n + 2, 12)       body poses in the base frame, then two scratch poses
    v          (B, n)            ComputedTorque's commanded acceleration; zeros in every other block
    acc_memo   (B, 5 n + 7)      the Manipulator's last accelerations per member: valid flag, the
                                 state it came from (q, qd, z: 3 n), tau (n), f_ext (6), qdd (n)
    pose_memo  (B, n + 13)       its last tool pose per member: valid flag, q (n), pose (12)

Each layout is written once, as its fields' sizes in order (`_model_sizes`, `_data_sizes`); a
field's offset is the sum of the sizes before it. Those sums are taken once, at import, as integer
coefficients of n and B (`MODEL_LAYOUT`, `DATA_LAYOUT`): numba folds these constants into each
accessor, so a field costs a multiply-add by n at most and nothing at all before the fields that
grow with n (the tool, gravity and closed form of a Model row; the wrench of a Data). A new datum
(a second tool frame, a loop-closure constraint) is one new field: its size in that list, its
constant and its accessor; `check` follows from the sizes.

Why this form, measured (numba 0.68, 2 shared cores; the first table is `benchmarks/dynamics.py
--forms`). The Puma 560's RNEA at B = 1 through a thin function reading its model in each form,
called from Python / called from a compiled loop / that function's compile time:
    one float row per member (this form)        1.76 us / 0.86 us / 0.80 s
    tuple of 7 named arrays                     2.07 us / 0.73 us / 0.55 s
    namedtuple Model + namedtuple Data          3.60 us / 0.75 us / 0.62 s
    one record array with named fields          1.70 us / 0.65 us / 1.72 s
    jitclass                                   12.32 us / 0.72 us / 0.48 s
Whole diagrams in compiled mode, run time per run (CPU time, the minimum of several), the robot
blocks' kernels on a Model of 7 arrays and a Data of 9 (a tuple each) / on this form / on the
hand-kept packed rows this form replaced: W1 (planar 2R closed form) 4.4 / 2.9 / 2.8 ms, the
Puma 560 under computed torque (W3) 33.2 / 31.6 / 29.9 ms. Every array that crosses a call
numba does not inline is passed as its whole struct (about ten machine words), and binding a tuple
of arrays counts a reference per array: a kernel's cost grows with the arrays it handles, not with
its arithmetic. namedtuples, jitclasses and structrefs are typed by Python code at each call from
Python (interpreted mode, the adaptive compiled runs), plain tuples and arrays by numba's C
fingerprint; a record array's nested-array fields triple the compile time of each function that
reads them (W1's first compile is what users wait for); functions taking a jitclass cannot be
cached on disk, which compiled mode relies on.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..twins import python_twin

from . import planar2r as p2r
from . import rigid_body_kernels as rbk

WS_COLS = rbk.WS_COLS

#: Fields of a Model row, in layout order (`_model_sizes`): the fixed-size fields first, so their
#: offsets do not depend on n.
TOOL, GRAVITY, CLOSED_FORM, XTREE, INERTIA, ARMATURE = range(6)

#: Fields of a Data array, in layout order (`_data_sizes`): fixed size, then growing with n, then
#: per member.
F1, WS, JOINT, MASS, CHOL, POSES, V, ACC_MEMO, POSE_MEMO = range(9)

#: Rows of the joint field: one member's q, qd, effective torque (or qdd), zeros, result, bias
#: torque c + G, the constrained solve's right-hand side and solution, and the free and stuck flags.
Q1, QD1, TE, ZERO1, OUT1, BIAS, RHS, SOL, FREE, STUCK = range(10)
N_JOINT_ROWS = 10

#: Length of the closed-form parameter vector (`planar2r.Distributed2R.params`).
N_CLOSED_FORM = 11


def _model_sizes(n):
    """Sizes of a Model row's fields for n joints, in the order of the field constants."""
    return (12, 3, N_CLOSED_FORM, 12 * n, 10 * n, n)


def _data_sizes(n, B):
    """Sizes of a Data array's fields for n joints and batch B, in the order of the constants."""
    return (6, (n + 1) * WS_COLS, N_JOINT_ROWS * n, n * n, n * n, 12 * (n + 2), B * n,
            B * (5 * n + 7), B * (n + 13))


def _coefficients(sizes) -> tuple:
    """Each field's (start, size) as integer coefficients of the monomials 1, n, n^2, B, n B,
    n^2 B, from `sizes(n, B)`: the layout's offsets as constants (numba folds the constant tuples
    into the accessors' code: an offset costs a multiply-add by n, or nothing for a field before
    every n-sized one). Raises unless every size is such a polynomial."""
    def coefficients(f):
        c0, c2 = f(0), (f(2) - 2 * f(1) + f(0)) // 2
        return (c0, f(1) - c0 - c2, c2)

    count = len(sizes(0, 0))
    out, start = [], (0,) * 6
    for j in range(count):
        low = coefficients(lambda n: sizes(n, 0)[j])
        per_member = coefficients(lambda n: sizes(n, 1)[j] - sizes(n, 0)[j])
        size = low + per_member
        for n in range(8):
            for B in range(4):
                if _at.py_func(size, n, B) != sizes(n, B)[j]:
                    raise ValueError(f"field {j}'s size is not a polynomial a(n) + B b(n) of degree 2")
        out.append((start, size))
        start = tuple(s + c for s, c in zip(start, size))
    return tuple(out)


@njit(cache=True, error_model="numpy", inline="always")
def _at(c, n, B):
    """The value at n joints and batch B of the coefficients c of 1, n, n^2, B, n B, n^2 B."""
    return c[0] + n * (c[1] + n * c[2]) + B * (c[3] + n * (c[4] + n * c[5]))


#: (start, size) coefficients of each field (`_coefficients`), for the accessors.
MODEL_LAYOUT = _coefficients(lambda n, B: _model_sizes(n))
DATA_LAYOUT = _coefficients(_data_sizes)


def model_size(n: int) -> int:
    """Length of a Model row for n joints."""
    return sum(_model_sizes(n))


def data_size(n: int, batch: int) -> int:
    """Length of a Data array for n joints and batch B."""
    return sum(_data_sizes(n, batch))


# ----------------------------------------------------------------------------- Model accessors

@njit(cache=True, error_model="numpy", inline="always")
def member(model, b):
    """Model row of batch member b: b when the Model has one row per member, else 0 (shared)."""
    return b if model[1].shape[0] > 1 else 0


@njit(cache=True, error_model="numpy", inline="always")
def _field(model, k, layout):
    """The field of member row k at `layout` (a MODEL_LAYOUT entry), flat."""
    n = model[0].shape[0]
    start = _at(layout[0], n, 0)
    return model[1][k, start:start + _at(layout[1], n, 0)]


@njit(cache=True, error_model="numpy", inline="always")
def xtree(model, k):
    return _field(model, k, MODEL_LAYOUT[XTREE]).reshape((model[0].shape[0], 12))


@njit(cache=True, error_model="numpy", inline="always")
def tool(model, k):
    return _field(model, k, MODEL_LAYOUT[TOOL])


@njit(cache=True, error_model="numpy", inline="always")
def inertia(model, k):
    return _field(model, k, MODEL_LAYOUT[INERTIA]).reshape((model[0].shape[0], 10))


@njit(cache=True, error_model="numpy", inline="always")
def armature(model, k):
    return _field(model, k, MODEL_LAYOUT[ARMATURE])


@njit(cache=True, error_model="numpy", inline="always")
def gravity(model, k):
    return _field(model, k, MODEL_LAYOUT[GRAVITY])


@njit(cache=True, error_model="numpy", inline="always")
def closed_form(model, k):
    return _field(model, k, MODEL_LAYOUT[CLOSED_FORM])


# ----------------------------------------------------------------------------- Data accessors

@njit(cache=True, error_model="numpy", inline="always")
def _part(data, n, B, layout):
    """The field of a Data array at `layout` (a DATA_LAYOUT entry), flat (B only matters for the
    per-member fields)."""
    start = _at(layout[0], n, B)
    return data[start:start + _at(layout[1], n, B)]


@njit(cache=True, error_model="numpy", inline="always")
def ws(data, n):
    return _part(data, n, 0, DATA_LAYOUT[WS]).reshape((n + 1, WS_COLS))


@njit(cache=True, error_model="numpy", inline="always")
def joint_row(data, n, r):
    """Joint row r (Q1 ... STUCK) as a (1, n) view: the batch of one the kernels take."""
    return _part(data, n, 0, DATA_LAYOUT[JOINT])[r * n:(r + 1) * n].reshape((1, n))


@njit(cache=True, error_model="numpy", inline="always")
def joint_rows(data, n, r, count):
    """Joint rows r .. r + count - 1 as one (count, n) view (a scratch matrix)."""
    return _part(data, n, 0, DATA_LAYOUT[JOINT])[r * n:(r + count) * n].reshape((count, n))


@njit(cache=True, error_model="numpy", inline="always")
def joint_vector(data, n, r):
    """Joint row r as an (n,) view."""
    return _part(data, n, 0, DATA_LAYOUT[JOINT])[r * n:(r + 1) * n]


@njit(cache=True, error_model="numpy", inline="always")
def f1(data, n):
    return _part(data, n, 0, DATA_LAYOUT[F1]).reshape((1, 6))


@njit(cache=True, error_model="numpy", inline="always")
def no_fext(data, n):
    """A (0, 6) wrench array: no external wrench."""
    return _part(data, n, 0, DATA_LAYOUT[F1])[:0].reshape((0, 6))


@njit(cache=True, error_model="numpy", inline="always")
def mass(data, n):
    return _part(data, n, 0, DATA_LAYOUT[MASS]).reshape((1, n, n))


@njit(cache=True, error_model="numpy", inline="always")
def chol(data, n):
    return _part(data, n, 0, DATA_LAYOUT[CHOL]).reshape((n, n))


@njit(cache=True, error_model="numpy", inline="always")
def poses(data, n):
    return _part(data, n, 0, DATA_LAYOUT[POSES]).reshape((n + 2, 12))


@njit(cache=True, error_model="numpy", inline="always")
def v(data, n, B):
    return _part(data, n, B, DATA_LAYOUT[V]).reshape((B, n))


@njit(cache=True, error_model="numpy", inline="always")
def acc_memo(data, n, B):
    return _part(data, n, B, DATA_LAYOUT[ACC_MEMO]).reshape((B, 5 * n + 7))


@njit(cache=True, error_model="numpy", inline="always")
def pose_memo(data, n, B):
    return _part(data, n, B, DATA_LAYOUT[POSE_MEMO]).reshape((B, n + 13))


# ----------------------------------------------------------------------------- building, checking

def stack_model(robots, use_closed_form: bool) -> tuple:
    """The Model of the members' RobotModels (same joint types), one row each; the closed_form
    field holds the planar 2R parameters when use_closed_form, else zeros."""
    jtype = np.ascontiguousarray(np.array(robots[0].arrays[0]), dtype=np.int64)
    model = (jtype, np.zeros((len(robots), model_size(jtype.shape[0]))))
    field = {f.__name__: python_twin(f)       # set-up code: nothing compiled for it
             for f in (xtree, tool, inertia, armature, gravity, closed_form)}
    for k, r in enumerate(robots):
        _, xt, inert, arm, tl = r.arrays
        field["xtree"](model, k)[:] = xt
        field["tool"](model, k)[:] = tl
        field["inertia"](model, k)[:] = inert
        field["armature"](model, k)[:] = arm
        field["gravity"](model, k)[:] = r.gravity
        if use_closed_form:
            field["closed_form"](model, k)[:] = r.closed_form.params()
    return model


def make_data(n: int, batch: int) -> np.ndarray:
    """A zeroed Data workspace for n joints and batch B."""
    return np.zeros(data_size(n, batch))


def check(model: tuple, data: np.ndarray, batch: int) -> None:
    """Raise ValueError unless model is a Model and data a Data of the same robot for batch B:
    dtypes, shapes (the sizes of the layouts), C order, a writable Data."""
    if not isinstance(model, tuple) or len(model) != 2:
        raise ValueError("a Model is the tuple (jtype, rows)")
    jtype, rows = model
    for name, value, dtype in (("jtype", jtype, np.int64), ("Model rows", rows, np.float64),
                               ("Data", data, np.float64)):
        if not isinstance(value, np.ndarray) or value.dtype != dtype or not value.flags.c_contiguous:
            raise ValueError(f"{name} must be a C-contiguous {np.dtype(dtype).name} array")
    n = jtype.shape[0]
    if jtype.ndim != 1 or rows.ndim != 2 or rows.shape[1] != model_size(n):
        raise ValueError(f"Model rows have shape {rows.shape}; a robot with {n} joints needs "
                         f"(Bm, {model_size(n)})")
    if rows.shape[0] not in (1, batch):
        raise ValueError(f"a Model has 1 or B = {batch} member rows, got {rows.shape[0]}")
    if data.shape != (data_size(n, batch),):
        raise ValueError(f"Data has shape {data.shape}; {n} joints and batch {batch} need "
                         f"({data_size(n, batch)},)")
    if not data.flags.writeable:
        raise ValueError("Data must be writable")


# ----------------------------------------------------------------------------- algorithms

@njit(cache=True, error_model="numpy", inline="always")
def rnea(model, data, k, q, qd, qdd, fext, out):
    """out (B', n) = M qdd + c + G - J^T fext of member k's model for every row of q, qd, qdd
    (`rigid_body_kernels.rnea_into`; fext (B', 6) or (0, 6))."""
    rbk.rnea_into(model[0], xtree(model, k), inertia(model, k), armature(model, k), tool(model, k),
                  q, qd, qdd, gravity(model, k), fext, out, ws(data, model[0].shape[0]))


@njit(cache=True, error_model="numpy", inline="always")
def aba(model, data, k, q, qd, tau, fext, out):
    """out (B', n) = the accelerations of member k's model under tau (`aba_into`)."""
    rbk.aba_into(model[0], xtree(model, k), inertia(model, k), armature(model, k), tool(model, k),
                 q, qd, tau, gravity(model, k), fext, out, ws(data, model[0].shape[0]))


@njit(cache=True, error_model="numpy", inline="always")
def mass_matrix(model, data, k, q, out):
    """out (B', n, n) = M(q) of member k's model, armature included (`mass_matrix_into`)."""
    rbk.mass_matrix_into(model[0], xtree(model, k), inertia(model, k), armature(model, k), q, out,
                         ws(data, model[0].shape[0]))


@njit(cache=True, error_model="numpy")
def inverse_dynamics(model, data, k, use_cf, q, qd, qdd, fext, out):
    """out (1, n) = M qdd + c + G - J^T fext of member k: the planar 2R closed form when use_cf
    and there is no wrench (fext (0, 6)), else the RNEA."""
    if use_cf and fext.shape[0] == 0:
        p2r.rnea_into(closed_form(model, k), q, qd, qdd, out)
    else:
        rnea(model, data, k, q, qd, qdd, fext, out)
