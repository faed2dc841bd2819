"""The robot's Model and Data for the numba kernels (Pinocchio's split): an immutable Model of named
fields stacked over batch members, a preallocated Data workspace of named fields, and algorithms
`algo(model, data, k, ...)` that allocate nothing.

Model (a tuple; its fields are read by the index constants below, `model[XTREE]`):
    JTYPE        (n,)         int64    joint types, shared by every member: 0 revolute about the
                                       body z axis, 1 prismatic along it
    XTREE        (Bm, n, 12)  float64  joint i's placement in body frame i - 1 (R row-major, p in m)
    INERTIA      (Bm, n, 10)  float64  body i's ten inertial parameters about its origin
    ARMATURE     (Bm, n)      float64  reflected rotor inertia N^2 Jm on M's diagonal (0 when off)
    TOOL         (Bm, 12)     float64  tool frame in the last body frame (layout of an XTREE row)
    GRAVITY      (Bm, 3)      float64  gravity in the base frame (m/s^2)
    CLOSED_FORM  (Bm, 11)     float64  planar 2R closed-form parameters (`planar2r`), zeros unused
Bm is 1 when every batch member has the same robot, else B; member b reads row `member(model, b)`.
The layouts and frames are those of `rigid_body_kernels` (body frame i = joint i's frame after its
motion). A new kind of datum (a second tool frame, a loop-closure constraint) is one new field:
a constant here, a line in `stack_model` and in `check`.

Data (a tuple, fields read by index: `data[WS]`), for batch B and n joints:
    WS         (n + 1, WS_COLS)  the rigid-body kernels' workspace
    JOINT      (10, n)           per-call joint rows, named by the row constants below (Q1 ... STUCK)
    F1         (1, 6)            one member's tool wrench
    MASS       (1, n, n)         one member's mass matrix
    CHOL       (n, n)            its Cholesky factor on the free joints
    POSES      (n + 2, 12)       body poses in the base frame, then two scratch poses
    V          (B, n)            ComputedTorque's commanded acceleration; zeros in every other block
    ACC_MEMO   (B, 5 n + 7)      the Manipulator's last accelerations per member: valid flag, the
                                 state it came from (q, qd, z: 3 n), tau (n), f_ext (6), qdd (n)
    POSE_MEMO  (B, n + 13)       its last tool pose per member: valid flag, q (n), pose (12)

Why tuples with index constants (measured for the Puma 560's RNEA at B = 1, numba 0.68, the
function below called from Python / from a compiled loop / its compile time):
    today's packed row (jt, mem, ws)                 1.76 us / 0.86 us / 0.80 s
    tuple of 7 arrays (this form)                    2.07 us / 0.73 us / 0.55 s
    namedtuple Model + namedtuple Data               3.60 us / 0.75 us / 0.62 s
    one record array with named fields               1.70 us / 0.65 us / 1.72 s
    jitclass                                        12.32 us / 0.72 us / 0.48 s
Inside compiled code every form costs the same (a field is a static index). From Python, numba
types plain tuples of arrays by its C fingerprint (about 0.1 us an array) but a namedtuple, a
jitclass or a structref by Python code: the interpreted mode and the compiled adaptive runs (whose
scheduler passes the whole parameter tuple at every stage) would pay 1.5 us more per namedtuple
per call. A record array's nested-array fields triple the compile time of each function reading
them (W1's first compile is what users wait for), and functions taking a jitclass cannot be cached
on disk, which compiled mode relies on. Data keeps few arrays because each costs its unboxing.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from . import planar2r as p2r
from . import rigid_body_kernels as rbk

JTYPE, XTREE, INERTIA, ARMATURE, TOOL, GRAVITY, CLOSED_FORM = range(7)
MODEL_FIELDS = ("jtype", "xtree", "inertia", "armature", "tool", "gravity", "closed_form")

WS, JOINT, F1, MASS, CHOL, POSES, V, ACC_MEMO, POSE_MEMO = range(9)
DATA_FIELDS = ("ws", "joint", "f1", "mass", "chol", "poses", "v", "acc_memo", "pose_memo")

#: Rows of data[JOINT]: one member's q, qd, effective torque (or qdd), zeros, result, bias torque
#: c + G, the constrained solve's right-hand side and solution, and the free and stuck joint flags.
Q1, QD1, TE, ZERO1, OUT1, BIAS, RHS, SOL, FREE, STUCK = range(10)
N_JOINT_ROWS = 10

#: Length of the closed-form parameter vector (`planar2r.Distributed2R.params`).
N_CLOSED_FORM = 11


def stack_model(robots, closed_form: bool) -> tuple:
    """The Model of the members' RobotModels (same joint types), one row each; CLOSED_FORM holds
    the planar 2R parameters when closed_form, else zeros."""
    jtype = np.ascontiguousarray(np.array(robots[0].arrays[0]), dtype=np.int64)
    fields = [np.ascontiguousarray(np.stack([np.array(r.arrays[j], dtype=float) for r in robots]))
              for j in (1, 2, 3, 4)]
    gravity = np.stack([np.array(r.gravity, dtype=float) for r in robots])
    cf = np.stack([r.closed_form.params() if closed_form else np.zeros(N_CLOSED_FORM)
                   for r in robots])
    return (jtype, *fields, np.ascontiguousarray(gravity), np.ascontiguousarray(cf))


def make_data(n: int, batch: int) -> tuple:
    """A zeroed Data workspace for n joints and batch B (shapes in the module docstring)."""
    return (rbk.workspace(n), np.zeros((N_JOINT_ROWS, n)), np.zeros((1, 6)), np.zeros((1, n, n)),
            np.zeros((n, n)), np.zeros((n + 2, 12)), np.zeros((batch, n)),
            np.zeros((batch, 5 * n + 7)), np.zeros((batch, n + 13)))


def check(model: tuple, data: tuple, batch: int) -> None:
    """Raise ValueError unless model and data are a Model and a Data of one robot for batch B:
    field count, dtypes, shapes, C order and writable Data."""
    if len(model) != len(MODEL_FIELDS) or len(data) != len(DATA_FIELDS):
        raise ValueError(f"a Model has {len(MODEL_FIELDS)} fields and a Data {len(DATA_FIELDS)}; "
                         f"got {len(model)} and {len(data)}")
    n = model[JTYPE].shape[0]
    bm = model[XTREE].shape[0]
    if bm not in (1, batch):
        raise ValueError(f"a Model has 1 or B = {batch} member rows, got {bm}")
    want = {"jtype": (n,), "xtree": (bm, n, 12), "inertia": (bm, n, 10), "armature": (bm, n),
            "tool": (bm, 12), "gravity": (bm, 3), "closed_form": (bm, N_CLOSED_FORM),
            "ws": (n + 1, rbk.WS_COLS), "joint": (N_JOINT_ROWS, n), "f1": (1, 6),
            "mass": (1, n, n), "chol": (n, n), "poses": (n + 2, 12), "v": (batch, n),
            "acc_memo": (batch, 5 * n + 7), "pose_memo": (batch, n + 13)}
    for name, value in zip(MODEL_FIELDS + DATA_FIELDS, tuple(model) + tuple(data)):
        dtype = np.int64 if name == "jtype" else np.float64
        if not isinstance(value, np.ndarray) or value.dtype != dtype:
            raise ValueError(f"{name} must be a {np.dtype(dtype).name} array, got {value!r:.60}")
        if value.shape != want[name]:
            raise ValueError(f"{name} has shape {value.shape}, a robot with {n} joints and batch "
                             f"{batch} needs {want[name]}")
        if not value.flags.c_contiguous:
            raise ValueError(f"{name} must be C-contiguous")
    for name, value in zip(DATA_FIELDS, data):
        if not value.flags.writeable:
            raise ValueError(f"Data field {name} must be writable")


@njit(cache=True, error_model="numpy", inline="always")
def member(model, b):
    """Model row of batch member b: b when the Model has one row per member, else 0 (shared)."""
    return b if model[XTREE].shape[0] > 1 else 0


@njit(cache=True, error_model="numpy", inline="always")
def joint_row(data, r):
    """Row r of data[JOINT] (Q1 ... STUCK) as a (1, n) view, the batch-of-one the kernels take."""
    return data[JOINT][r:r + 1]


@njit(cache=True, error_model="numpy", inline="always")
def rnea(model, data, k, q, qd, qdd, fext, out):
    """out (B', n) = M qdd + c + G - J^T fext of member k's model for every row of q, qd, qdd
    (`rigid_body_kernels.rnea_into`; fext (B', 6) or (0, 6))."""
    rbk.rnea_into(model[JTYPE], model[XTREE][k], model[INERTIA][k], model[ARMATURE][k],
                  model[TOOL][k], q, qd, qdd, model[GRAVITY][k], fext, out, data[WS])


@njit(cache=True, error_model="numpy", inline="always")
def aba(model, data, k, q, qd, tau, fext, out):
    """out (B', n) = the accelerations of member k's model under tau (`aba_into`)."""
    rbk.aba_into(model[JTYPE], model[XTREE][k], model[INERTIA][k], model[ARMATURE][k],
                 model[TOOL][k], q, qd, tau, model[GRAVITY][k], fext, out, data[WS])


@njit(cache=True, error_model="numpy", inline="always")
def mass_matrix(model, data, k, q, out):
    """out (B', n, n) = M(q) of member k's model, armature included (`mass_matrix_into`)."""
    rbk.mass_matrix_into(model[JTYPE], model[XTREE][k], model[INERTIA][k], model[ARMATURE][k],
                         q, out, data[WS])


@njit(cache=True, error_model="numpy")
def inverse_dynamics(model, data, k, use_cf, q, qd, qdd, fext, out):
    """out (1, n) = M qdd + c + G - J^T fext of member k: the planar 2R closed form when use_cf
    and there is no wrench (fext (0, 6)), else the RNEA."""
    if use_cf and fext.shape[0] == 0:
        p2r.rnea_into(model[CLOSED_FORM][k], q, qd, qdd, out)
    else:
        rnea(model, data, k, q, qd, qdd, fext, out)
