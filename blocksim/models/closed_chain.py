"""Closed kinematic chains (parallel mechanisms such as the five-bar linkage) in redundant
coordinates with Lagrange multipliers: the mechanism cut open into serial branches that share
the base, the loops closed by constraints phi(q) = 0.

Equations (SI units, world = the branches' common base frame; n joints, m constraint rows):
    M(q) qdd + c(q, qd) + g(q) = B tau - D qd + Jc(q)^T lambda,      phi(q) = 0,
    Jc qdd = -gamma,   gamma = Jcdot qd + 2 alpha Jc qd + beta^2 phi   (Baumgarte; alpha = beta = 0
                                                                        is the exact index-1 form)
with q the branches' joint coordinates in branch order, M = blockdiag(M_branch) by the CRBA and
c + g = blockdiag(RNEA(q, qd, 0)) of each branch (`model_data`), D the joint damping
(N m s/rad, diagonal), B the selection of the actuated joints. A loop (a, b) makes the tool
origin of branch a coincide with that of branch b: phi = p_a - p_b, its x-y rows (planar, 2) or
x-y-z (3); Jc = [J_a rows on a's columns, -J_b rows on b's columns] from the branches' geometric
Jacobians (`kinematics`), Jcdot qd from their bias accelerations. Rows that depend on the others
(a spatial loop closed over planar joints: no joint moves the tips along z) are left out of the
kernels' loops (`ClosedChain.independent_rows`, a rank-revealing choice at the assembled start),
so S stays regular; their multipliers are 0. lambda (N, world frame) is the
force on branch a's tip (the force on b's tip is -lambda). A `pose` loop also welds the tool
frames: its rows 3-5 hold the orientation error phi_w = 1/2 sum_k r_b,k x r_a,k (r_k the tool
frames' axes in the world: the rotation vector from b's frame to a's to first order, so its
rate is w_a - w_b, the Jacobians' angular rows; Siciliano et al., Robotics, 2009, sec. 3.7),
their multipliers the moment on a's tool frame (N m, world frame). Solved by the Schur complement:
X = M^-1 Jc^T, S = Jc X, lambda = S^-1 (-gamma - Jc M^-1 f), qdd = M^-1 (f + Jc^T lambda),
f = B tau - D qd - c - g (Cholesky solves, `plant.solve_free`).

Projection (`project`, drift control at major steps; Bayo & Ledesma 1996, Blajer 2002): q by
Gauss-Newton steps dq = -M^-1 Jc^T S^-1 phi onto phi = 0, then qd by dqd = -M^-1 Jc^T S^-1 Jc qd
onto Jc qd = 0: the corrections orthogonal in the kinetic-energy metric, so the velocity
projection removes only the kinetic energy of the constraint-violating motion.

The numba part works on a Chain = (models, datas, offsets, loops): one `model_data` Model and
Data per branch (tuples), offsets (k + 1,) int64 the first column of each branch in q, loops
(L, 9) int64 rows (branch a, branch b, the row count r, then the r axes it holds, 0 x, 1 y,
2 z of the position, 3-5 of the orientation; -1 pads). A per-member scratch `work` (work_size(n, m))
holds the dense matrices. The Python part (`ClosedChain`) holds the branches' RobotModels, builds
the Chain, and assembles a configuration (passive joints by Newton from the file's guess, which
chooses the branch).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from ..errors import ParameterError, SourceLoc
from ..twins import python_twin
from . import kinematics as kin
from . import model_data as md
from .plant import solve_free

#: Rows of a loop by name: the world axes whose components of p_a - p_b it holds at 0, x-y
#: (planar mechanisms) or x-y-z; `pose` also the three of the orientation error (axes 3, 4, 5:
#: the tool frames welded together).
LOOP_ROWS = {"xy": (0, 1), "xyz": (0, 1, 2), "pose": (0, 1, 2, 3, 4, 5)}

#: A row is dependent on the rows before it when it adds a singular value below this times the
#: largest |Jc| entry (`ClosedChain.independent_rows`).
DEPENDENT_ROW = 1e-9

#: Newton iterations of a projection (each one a full Gauss-Newton step: quadratic convergence
#: takes an O(1e-8) drift to rounding in two or three).
PROJECTION_ITERATIONS = 6


class AssemblyError(ParameterError):
    """A closed chain that cannot be assembled (a loop does not close at the given actuated
    joints), or one of whose loops adds no independent constraint row; the message names the
    loop."""


# ============================================================================ the numba part

def work_size(n: int, m: int) -> int:
    """Length of one member's scratch for n joints and m constraint rows (`_views`)."""
    return 2 * n * n + 2 * m * n + 2 * m * m + 6 * n + 3 * n + 5 * m + 30


#: Positions in `_views`' tuple of the fields read outside this module's kernels: Jc, the
#: one-branch scratch (a tool pose fits), Jcdot qd, phi.
VIEW_JC, VIEW_SCRATCH, VIEW_GAMMA, VIEW_PHI = 2, 6, 10, 13


# numba's inline: it returns views, which a function compiled on its own cannot without
# reference counts (docs/architecture.md, "Physics")
@njit(cache=True, error_model="numpy", inline="always")
def _views(work, n, m):
    """The scratch fields: M, L (n, n), Jc, X (m, n), S, LS (m, m), Jb (6 n) one branch's
    Jacobian (or tool pose), f, u, ones (n), gam, r, lam, phi, Jq (m), a6 (6), tips (2, 12)
    the two tool poses of a loop (p, R row-major)."""
    o = 0
    M = work[o:o + n * n].reshape((n, n))
    o += n * n
    L = work[o:o + n * n].reshape((n, n))
    o += n * n
    Jc = work[o:o + m * n].reshape((m, n))
    o += m * n
    X = work[o:o + m * n].reshape((m, n))
    o += m * n
    S = work[o:o + m * m].reshape((m, m))
    o += m * m
    LS = work[o:o + m * m].reshape((m, m))
    o += m * m
    Jb = work[o:o + 6 * n]
    o += 6 * n
    f = work[o:o + n]
    u = work[o + n:o + 2 * n]
    ones = work[o + 2 * n:o + 3 * n]
    o += 3 * n
    gam = work[o:o + m]
    r = work[o + m:o + 2 * m]
    lam = work[o + 2 * m:o + 3 * m]
    phi = work[o + 3 * m:o + 4 * m]
    Jq = work[o + 4 * m:o + 5 * m]
    o += 5 * m
    a6 = work[o:o + 6]
    tips = work[o + 6:o + 30].reshape((2, 12))
    return M, L, Jc, X, S, LS, Jb, f, u, ones, gam, r, lam, phi, Jq, a6, tips


# numba's inline: it returns views, which a function compiled on its own cannot without
# reference counts (docs/architecture.md, "Physics")
@njit(cache=True, error_model="numpy", inline="always")
def _branch_state(chain, j, q, qd, b):
    """Branch j's q and qd of member b copied into its Data's Q1 and QD1 rows; (q1, qd1) (1, nb)."""
    models, datas, offsets = chain[0], chain[1], chain[2]
    off = offsets[j]
    nb = offsets[j + 1] - off
    data = datas[j]
    q1 = md.joint_row(data, nb, md.Q1)
    qd1 = md.joint_row(data, nb, md.QD1)
    for i in range(nb):
        q1[0, i] = q[b, off + i]
        qd1[0, i] = qd[b, off + i]
    return q1, qd1


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def _orientation_error(tips, c):
    """Component c of 1/2 sum_k r_b,k x r_a,k, r_k column k of the tool rotations (tips rows a, b:
    p then R row-major): the rotation vector from b's tool frame to a's, to first order."""
    c1, c2 = (c + 1) % 3, (c + 2) % 3
    s = 0.0
    for k in range(3):
        s += tips[1, 3 + 3 * c1 + k] * tips[0, 3 + 3 * c2 + k] \
            - tips[1, 3 + 3 * c2 + k] * tips[0, 3 + 3 * c1 + k]
    return 0.5 * s


@njit(cache=True, error_model="numpy")
def constraints(chain, work, b, q, qd, jacobians):
    """phi (m,) of member b at q[b] in `work` (`_views`); with jacobians, Jc (m, n) and
    Jcdot qd (m,) at q[b], qd[b] too (into Jc and gam). Returns max |phi| (m)."""
    models, datas, offsets, loops = chain
    n = q.shape[1]
    m = 0
    for li in range(loops.shape[0]):
        m += loops[li, 2]
    M, L, Jc, X, S, LS, Jb, f, u, ones, gam, r, lam, phi, Jq, a6, tips = _views(work, n, m)
    row = 0
    worst = 0.0
    if jacobians:
        for i in range(m):
            for c in range(n):
                Jc[i, c] = 0.0
    for li in range(loops.shape[0]):
        rows = loops[li, 2]
        for side in range(2):
            j = loops[li, side]
            model, data = models[j], datas[j]
            k = md.member(model, b)
            off = offsets[j]
            nb = offsets[j + 1] - off
            q1, qd1 = _branch_state(chain, j, q, qd, b)
            kin.tool_pose(model, k, q1, 0, Jb, 0)
            for r3 in range(12):
                tips[side, r3] = Jb[r3]
            if jacobians:
                sign = 1.0 if side == 0 else -1.0
                kin.jacobian(model, data, k, q1, 0, Jb[:6 * nb])
                for i in range(rows):
                    axis = loops[li, 3 + i]
                    for c in range(nb):
                        Jc[row + i, off + c] += sign * Jb[axis * nb + c]
                kin.bias_acceleration(model, data, k, q1, qd1, 0, a6)
                for i in range(rows):
                    axis = loops[li, 3 + i]
                    if side == 0:
                        gam[row + i] = a6[axis]
                    else:
                        gam[row + i] -= a6[axis]
        for i in range(rows):
            axis = loops[li, 3 + i]
            phi[row + i] = tips[0, axis] - tips[1, axis] if axis < 3 else \
                _orientation_error(tips, axis - 3)
            worst = max(worst, abs(phi[row + i]))
        row += rows
    return worst


@njit(cache=True, error_model="numpy")
def _mass_and_bias(chain, work, b, q, qd, bias):
    """M (n, n) of member b into work (block diagonal, one CRBA per branch); with bias, f = -(c + g)
    (one RNEA per branch at qdd = 0)."""
    models, datas, offsets, loops = chain
    n = q.shape[1]
    m = 0
    for li in range(loops.shape[0]):
        m += loops[li, 2]
    M, L, Jc, X, S, LS, Jb, f, u, ones, gam, r, lam, phi, Jq, a6, tips = _views(work, n, m)
    for i in range(n):
        ones[i] = 1.0
        for c in range(n):
            M[i, c] = 0.0
    for j in range(len(models)):
        model, data = models[j], datas[j]
        k = md.member(model, b)
        off = offsets[j]
        nb = offsets[j + 1] - off
        q1, qd1 = _branch_state(chain, j, q, qd, b)
        Mb = md.mass(data, nb)
        md.mass_matrix(model, data, k, q1, Mb)
        for i in range(nb):
            for c in range(nb):
                M[off + i, off + c] = Mb[0, i, c]
        if bias:
            zero = md.joint_row(data, nb, md.ZERO1)
            out = md.joint_row(data, nb, md.OUT1)
            for i in range(nb):
                zero[0, i] = 0.0
            md.rnea(model, data, k, q1, qd1, zero, md.no_fext(data, nb), out)
            for i in range(nb):
                f[off + i] = -out[0, i]
    return m


@njit(cache=True, error_model="numpy")
def _schur(work, n, m):
    """X = M^-1 Jc^T (row i: M^-1 Jc[i]) and S = Jc X^T (the Schur complement Jc M^-1 Jc^T)."""
    M, L, Jc, X, S, LS, Jb, f, u, ones, gam, r, lam, phi, Jq, a6, tips = _views(work, n, m)
    for i in range(m):
        solve_free(M, Jc[i], ones, L, X[i])
    for i in range(m):
        for j in range(m):
            s = 0.0
            for c in range(n):
                s += Jc[i, c] * X[j, c]
            S[i, j] = s


@njit(cache=True, error_model="numpy")
def accelerations(chain, work, b, q, qd, tau, act, damping, alpha, beta, qdd, lam_out):
    """qdd[b] (n) and lam_out[b] (m, N: the force on each loop's branch-a tip) of member b at
    q[b], qd[b] under the actuated joints' torques tau[b] (act (na,) their columns in q) and the
    damping (B or 1, n) (module docstring; alpha, beta (1/s) the Baumgarte gains, 0 for none)."""
    n = q.shape[1]
    constraints(chain, work, b, q, qd, True)
    m = _mass_and_bias(chain, work, b, q, qd, True)
    M, L, Jc, X, S, LS, Jb, f, u, ones, gam, r, lam, phi, Jq, a6, tips = _views(work, n, m)
    d = damping[b if damping.shape[0] > 1 else 0]
    for i in range(n):
        f[i] -= d[i] * qd[b, i]
    for i in range(act.shape[0]):
        f[act[i]] += tau[b, i if tau.shape[1] > 1 else 0]
    _schur(work, n, m)
    solve_free(M, f, ones, L, u)
    for i in range(m):
        s = 0.0
        v = 0.0
        for c in range(n):
            s += Jc[i, c] * u[c]
            v += Jc[i, c] * qd[b, c]
        r[i] = -(gam[i] + 2.0 * alpha * v + beta * beta * phi[i]) - s
    solve_free(S, r, ones[:m], LS, lam)
    for c in range(n):
        s = u[c]
        for i in range(m):
            s += X[i, c] * lam[i]
        qdd[b, c] = s
    for i in range(m):
        lam_out[b, i] = lam[i]


@njit(cache=True, error_model="numpy")
def _correct(work, n, m, rhs, x, b):
    """x[b] -= M^-1 Jc^T S^-1 rhs (the mass-orthogonal correction; M, Jc, X, S in work)."""
    M, L, Jc, X, S, LS, Jb, f, u, ones, gam, r, lam, phi, Jq, a6, tips = _views(work, n, m)
    solve_free(S, rhs, ones[:m], LS, lam)
    for c in range(n):
        s = 0.0
        for i in range(m):
            s += X[i, c] * lam[i]
        x[b, c] -= s


@njit(cache=True, error_model="numpy")
def project(chain, work, b, q, qd):
    """Member b's q[b] onto phi = 0, then qd[b] onto Jc qd = 0, in place (module docstring).
    Returns the largest |phi| (m) left."""
    n = q.shape[1]
    worst = constraints(chain, work, b, q, qd, True)
    m = _mass_and_bias(chain, work, b, q, qd, False)
    M, L, Jc, X, S, LS, Jb, f, u, ones, gam, r, lam, phi, Jq, a6, tips = _views(work, n, m)
    _schur(work, n, m)
    for it in range(PROJECTION_ITERATIONS):
        if worst == 0.0:
            break
        _correct(work, n, m, phi, q, b)
        before = worst
        worst = constraints(chain, work, b, q, qd, True)
        if not worst < 0.5 * before:        # rounding reached: no further gain
            break
        _mass_and_bias(chain, work, b, q, qd, False)
        _schur(work, n, m)
    constraints(chain, work, b, q, qd, True)
    _mass_and_bias(chain, work, b, q, qd, False)
    _schur(work, n, m)
    for i in range(m):
        s = 0.0
        for c in range(n):
            s += Jc[i, c] * qd[b, c]
        Jq[i] = s
    _correct(work, n, m, Jq, qd, b)
    return worst


@njit(cache=True, error_model="numpy", _nrt=True)
def _spread(G):
    """sqrt(lambda_min / lambda_max) of the symmetric positive semi-definite G (0 when G = 0).
    Compiled with numba's reference counts (_nrt=True) whatever calls it: LAPACK's eigenvalues
    allocate, and kernels without counts call it."""
    ev = np.linalg.eigvalsh(G)
    top = ev[-1]
    return math.sqrt(max(ev[0], 0.0) / top) if top > 0.0 else 0.0


@njit(cache=True, error_model="numpy", _nrt=True)
def singularity_ratios(chain, work, b, q, qd, passive):
    """(sigma_min / sigma_max of the passive joints' columns of Jc, lambda_min / lambda_max of
    Jc M^-1 Jc^T) of member b at q[b] (passive (np,) their columns in q): both 1 for a well
    conditioned loop, 0 at a singular configuration. The first falls to 0 where the passive joints
    lose control of the loop (the five-bar's distal links aligned: the constraint forces and the
    passive rates grow without bound there); the second where the constraint rows themselves
    become dependent. It allocates G, so it is compiled with numba's reference counts (_nrt=True)
    even when reached from a kernel compiled without them; it returns numbers only."""
    n = q.shape[1]
    constraints(chain, work, b, q, qd, True)
    m = _mass_and_bias(chain, work, b, q, qd, False)
    M, L, Jc, X, S, LS, Jb, f, u, ones, gam, r, lam, phi, Jq, a6, tips = _views(work, n, m)
    _schur(work, n, m)
    k = passive.shape[0]
    small = min(m, k)
    G = np.zeros((small, small))
    for i in range(small):
        for j in range(small):
            s = 0.0
            if m <= k:                          # Jp Jp^T (m, m)
                for c in range(k):
                    s += Jc[i, passive[c]] * Jc[j, passive[c]]
            else:                               # Jp^T Jp (k, k)
                for c in range(m):
                    s += Jc[c, passive[i]] * Jc[c, passive[j]]
            G[i, j] = s
    schur = _spread(np.ascontiguousarray(S))
    return _spread(G), schur * schur


@njit(cache=True, error_model="numpy")
def energy(chain, b, q, qd):
    """(kinetic, potential) energy (J) of member b: the sum over the branches (`kinematics.energy`)."""
    models, datas, offsets, loops = chain
    T = 0.0
    V = 0.0
    for j in range(len(models)):
        model, data = models[j], datas[j]
        q1, qd1 = _branch_state(chain, j, q, qd, b)
        t, v = kin.energy(model, data, md.member(model, b), q1, qd1, 0)
        T += t
        V += v
    return T, V


# ============================================================================ the Python part

@dataclass(frozen=True)
class Loop:
    """A loop closure: the tool origin of branch a (index) coincides with branch b's along the
    world `axes` (0 x, 1 y, 2 z: (0, 1) planar, (0, 1, 2) spatial; 3-5 the orientation error's
    components: the tool frames welded). where: its place in the file."""

    name: str
    a: int
    b: int
    axes: tuple[int, ...]
    where: SourceLoc | None = None

    @property
    def rows(self) -> int:
        return len(self.axes)


class ClosedChain:
    """An immutable closed-chain mechanism: serial branches (RobotModels sharing the base frame),
    loops, the actuated joints and the assembly branch.

    Attributes: `name`, `branches` (tuple of (name, RobotModel)), `loops` (tuple of Loop),
    `joint_names` (n, q order: branch by branch), `n`, `m` (constraint rows), `actuated` (indices
    into q), `passive`, `assembly_guess` (n,: rad, the passive joints' starting values for the
    assembly, which choose its branch), `gravity` (3,), `viscous` (n, N m s/rad, the files')."""

    def __init__(self, name, branches, loops, actuated, assembly_guess, where=None):
        self.name = str(name)
        self.branches = tuple(branches)
        self.loops = tuple(loops)
        self.where = where
        self.joint_names = tuple(j for _, r in self.branches for j in r.joint_names)
        self.n = len(self.joint_names)
        self.m = sum(lp.rows for lp in self.loops)
        self.actuated = np.array(actuated, dtype=np.int64)
        self.passive = np.array([i for i in range(self.n) if i not in set(actuated)], dtype=np.int64)
        self.assembly_guess = np.asarray(assembly_guess, dtype=float).copy()
        self.gravity = self.branches[0][1].gravity
        self.viscous = np.concatenate([r.viscous for _, r in self.branches])
        self.revolute = np.array([t == "revolute" for _, r in self.branches for t in r.joint_types])
        self.offsets = np.cumsum([0] + [r.n for _, r in self.branches]).astype(np.int64)
        self.loop_table = np.array([(lp.a, lp.b, lp.rows) + tuple(lp.axes) + (-1,) * (6 - lp.rows)
                                    for lp in self.loops], dtype=np.int64).reshape(-1, 9)

    # ------------------------------------------------------------------ the Chain of members
    def link_masses(self) -> np.ndarray:
        """(n,) the file's link masses (kg), q order."""
        return np.concatenate([[r.standard_parameters()[10 * i] for i in range(r.n)]
                               for _, r in self.branches])

    def chain(self, masses=None, batch: int = 1):
        """The numba Chain for batch B: one Model per branch, with one row per member of
        `masses` ((B, n) kg, q order; one row when None, the file's masses, or when every member
        has the same), and Data for B members. A member's link of mass m is the file's link
        with its mass and inertia scaled by m / m_file together, the centre of mass kept (the same
        shape, another density: `RobotModel.scaled`)."""
        inertia = python_twin(md.inertia)
        file_masses = self.link_masses()
        if masses is not None:
            masses = np.asarray(masses, dtype=float).reshape(-1, self.n)
            if np.all(masses == masses[:1]):
                masses = masses[:1]
            empty = file_masses == 0.0
            if np.any(masses[:, empty] != 0.0):
                i = int(np.nonzero(empty)[0][0])
                raise ParameterError(f"masses: link {self.joint_names[i]} has no mass in the file, "
                                     "so there is no body to scale")
        models = []
        for j, (_, r) in enumerate(self.branches):
            model = md.stack_model([r], False)
            if masses is not None:
                a, b = self.offsets[j], self.offsets[j + 1]
                with np.errstate(divide="ignore", invalid="ignore"):
                    factor = np.where(file_masses[a:b] > 0, masses[:, a:b] / file_masses[a:b], 1.0)
                model = (model[0], np.ascontiguousarray(np.repeat(model[1], len(masses), axis=0)))
                for k in range(len(masses)):
                    inertia(model, k)[:] *= factor[k][:, None]
            models.append(model)
        datas = tuple(md.make_data(r.n, batch) for _, r in self.branches)
        return tuple(models), datas, self.offsets.copy(), self.loop_table.copy()

    def scratch(self) -> np.ndarray:
        return np.zeros(work_size(self.n, self.m))

    # ------------------------------------------------------------------ geometry in Python
    def residual(self, chain, q, qd=None):
        """(phi (m,), Jc (m, n), Jcdot qd (m,)) of member 0 of `chain` at q (n,) (set-up code:
        the kernels' Python twins)."""
        work = self.scratch()
        q = np.ascontiguousarray(np.asarray(q, dtype=float).reshape(1, self.n))
        qd = np.zeros_like(q) if qd is None else np.asarray(qd, dtype=float).reshape(1, self.n)
        python_twin(constraints)(chain, work, 0, q, np.ascontiguousarray(qd), True)
        views = python_twin(_views)(work, self.n, self.m)
        return (views[VIEW_PHI].copy(), views[VIEW_JC].copy(), views[VIEW_GAMMA].copy())

    def assemble(self, chain, q_actuated):
        """The full q (n,) with the actuated joints at q_actuated (rad) and the passive joints
        solved by damped Newton (least squares when m differs from the passive count) from the
        file's assembly guess, which chooses the branch: the solution whose basin holds the guess
        (each step must shrink |phi|, so Newton does not jump to another branch). Raises
        AssemblyError naming the loop that does not close."""
        q = self.assembly_guess.copy()
        q[self.actuated] = np.asarray(q_actuated, dtype=float).reshape(-1)
        q, err = self._newton(chain, q)
        if not err <= 1e-12:
            phi = self.residual(chain, q)[0]
            loop = self._loop_of_row(int(np.argmax(np.abs(phi))))
            raise AssemblyError(
                f"loop '{loop.name}' cannot be closed with the actuated joints at "
                f"{self._actuated_text(q)}: the branches' tips stay {err:.3g} m apart after "
                "Newton from the assembly guess (out of reach, or a guess too far from the "
                "branch)", where=loop.where)
        return q

    def _actuated_text(self, q):
        return ", ".join(f"{self.joint_names[i]} = {q[i]:.6g} rad" for i in self.actuated)

    def _loop_of_row(self, row: int) -> Loop:
        start = 0
        for lp in self.loops:
            if row < start + lp.rows:
                return lp
            start += lp.rows
        return self.loops[-1]

    def _newton(self, chain, q, columns=None, tool=None):
        """(q, max |residual|) after damped Newton from q on the joints `columns` (default: the
        passive ones) for phi = 0, and with `tool` ((rows,) m) for the first loop's branch-a tip
        at it too; revolute joints that moved are wrapped into (-pi, pi]."""
        columns = self.passive if columns is None else columns
        q = q.copy()

        def equations(q):
            phi, Jc, _ = self.residual(chain, q)
            if tool is None:
                return phi, Jc[:, columns]
            rows = len(tool)
            j = self.loops[0].a
            a, b = self.offsets[j], self.offsets[j + 1]
            robot = self.branches[j][1]
            J = np.zeros((rows, self.n))
            J[:, a:b] = robot.jacobian(q[a:b])[:rows]
            gap = robot.fk(q[a:b])[:rows, 3] - tool
            return np.concatenate([phi, gap]), np.vstack([Jc, J])[:, columns]

        res, J = equations(q)
        err = np.max(np.abs(res))
        for _ in range(60):
            if err <= 1e-15:
                break
            step = np.linalg.lstsq(J, -res, rcond=None)[0]
            t = 1.0
            while t > 1e-4:
                trial = q.copy()
                trial[columns] += t * step
                res_t, J_t = equations(trial)
                err_t = np.max(np.abs(res_t))
                if err_t < err:
                    break
                t *= 0.5
            else:
                break
            q, res, J, err = trial, res_t, J_t, err_t
        if not np.all(np.isfinite(q)):
            return q, math.inf
        turn = columns[self.revolute[columns]]
        q[turn] = np.angle(np.exp(1j * q[turn]))
        return q, float(np.max(np.abs(equations(q)[0])))

    def assemble_at_tool(self, chain, tool, q_actuated_guess):
        """The full q (n,) that closes the loops with the first loop's point at `tool` (m, its
        rows: x-y for a planar loop): Newton on every joint from the actuated joints at
        q_actuated_guess and the passive ones at the file's guess, which choose the branch.
        Raises AssemblyError naming the loop when the point is out of reach from there."""
        q = self.assembly_guess.copy()
        q[self.actuated] = np.asarray(q_actuated_guess, dtype=float).reshape(-1)
        tool = np.asarray(tool, dtype=float).reshape(-1)[:min(3, self.loops[0].rows)]
        q, err = self._newton(chain, q, np.arange(self.n), tool)
        if not err <= 1e-12:
            loop = self.loops[0]
            raise AssemblyError(
                f"loop '{loop.name}' cannot be closed with its point at "
                f"({', '.join(f'{x:.6g}' for x in tool)}) m: {err:.3g} m left after Newton from "
                f"the actuated joints at {self._actuated_text(q)} (out of reach, or a guess too "
                "far from the branch)", where=loop.where)
        return q

    def rates(self, chain, q, qd_actuated):
        """The full qd (n,) with the actuated rates qd_actuated (rad/s) and the passive rates
        from Jc qd = 0 at q."""
        _, Jc, _ = self.residual(chain, q)
        qd = np.zeros(self.n)
        qd[self.actuated] = np.asarray(qd_actuated, dtype=float).reshape(-1)
        rhs = -Jc[:, self.actuated] @ qd[self.actuated]
        qd[self.passive] = np.linalg.lstsq(Jc[:, self.passive], rhs, rcond=None)[0]
        return qd

    def independent_rows(self, chain, q):
        """(the chain with only its independent constraint rows, kept (m',) int64 their indices
        in the full rows, [(loop, dropped rows)]) at q (n,): the rows taken in order, one kept
        when it raises the rank of those kept before it (a singular value above DEPENDENT_ROW
        times the largest |Jc| entry); a rank-revealing choice, so that a redundant row (a spatial
        loop closed over planar joints has a zero z row) leaves S regular. Raises AssemblyError
        naming a loop none of whose rows is independent."""
        _, Jc, _ = self.residual(chain, q)
        scale = max(1.0, float(np.max(np.abs(Jc))))
        kept, loops, dropped, start = [], [], [], 0
        for lp in self.loops:
            axes = []
            for i, axis in enumerate(lp.axes):
                trial = Jc[kept + [start + i]]
                sv = np.linalg.svd(trial, compute_uv=False)
                if sv[-1] > DEPENDENT_ROW * scale:
                    kept.append(start + i)
                    axes.append(axis)
            if not axes:
                raise AssemblyError(
                    f"loop '{lp.name}': none of its {lp.rows} constraint rows is independent of "
                    "the other loops' (the joints cannot move its tips apart along them): the "
                    "loop adds no constraint; remove it", where=lp.where)
            if len(axes) < lp.rows:
                dropped.append((lp, lp.rows - len(axes)))
            loops.append(Loop(lp.name, lp.a, lp.b, tuple(axes), lp.where))
            start += lp.rows
        if len(kept) >= self.n:
            raise AssemblyError(
                f"the loops hold {len(kept)} independent constraint rows on {self.n} joints: the "
                "mechanism cannot move", where=self.loops[-1].where)
        if not dropped:
            return self, np.arange(self.m, dtype=np.int64), []
        reduced = ClosedChain(self.name, self.branches, loops, self.actuated, self.assembly_guess,
                              self.where)
        return reduced, np.array(kept, dtype=np.int64), dropped

    def singularity_measures(self, chain, q) -> tuple[float, float]:
        """`singularity_ratios` of member 0 of `chain` at q (n,) (set-up code: the kernel's
        Python twin)."""
        q = np.ascontiguousarray(np.asarray(q, dtype=float).reshape(1, self.n))
        passive, schur = python_twin(singularity_ratios)(chain, self.scratch(), 0, q,
                                                          np.zeros_like(q), self.passive)
        return float(passive), float(schur)

    def __repr__(self):
        return (f"ClosedChain('{self.name}', branches={[b for b, _ in self.branches]}, "
                f"n={self.n}, loops={[lp.name for lp in self.loops]})")
