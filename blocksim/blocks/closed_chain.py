"""The closed-chain plant (parallel mechanisms such as the five-bar linkage): serial branches that
share the base, their loops closed by constraints, solved in redundant coordinates with Lagrange
multipliers (`models.closed_chain`; the formulation and the choice of drift control are in
docs/closed-chains.md).

The block maps its parameter values onto the kernels' record (`ClosedChainParams`): the Chain (one
`model_data` Model and Data per branch, the loops), the members' damping, the Baumgarte gains and
the initial state assembled from the actuated joints. Both modes run the kernels below with it.
"""
from __future__ import annotations

import functools
import math
import warnings
from collections import namedtuple
from pathlib import Path

import numpy as np
from numba import njit

from ..errors import BlocksimError, BlocksimWarning, ParameterError, WidthError
from ..models import closed_chain as cc
from ..models import kinematics as kin
from ..models import model_data as md
from ..models.closed_chain_file import preset, preset_names, read_closed_chain
from ..reading.dependencies import stamped
from ..reading.limits import shorten, shown
from ..reading.located_yaml import os_reason
from ..twins import python_twin
from ._kernels import kernel_params
from .base import Block, Kernels, Param, register

DRIFT_CONTROLS = ("projection", "baumgarte", "none")

#: What a run does when the chain nears a singular configuration (`singular`).
SINGULAR_CHOICES = ("warn", "stop", "none")

#: The default `singular_ratio`: below this sigma_min / sigma_max of the passive joints'
#: constraint Jacobian, or lambda_min / lambda_max of Jc M^-1 Jc^T
#: (`closed_chain.singularity_ratios`), a configuration is near-singular: `blocksim check` warns
#: of such a start, and a run warns (or stops) when it gets there.
SINGULAR_RATIO = 1e-3

ClosedChainParams = namedtuple(
    "ClosedChainParams",
    "chain work act damping alpha beta tol run_tol acc lam lam_rows memo saved q0 qd0 e0 passive "
    "singular warned")
"""The ClosedChain's record: chain (models, datas, offsets, loops) of `models.closed_chain`; work
(scratch of one member); act (na,) int64 the actuated joints' columns in q; damping (B or 1, n)
N m s/rad; alpha, beta (B,) 1/s the members' Baumgarte gains (0 without Baumgarte); tol (B,) rad
and rad/s the block's override of the largest projection that leaves the state as it is
(negative: none given, the run's tolerance decides); run_tol (2,) the run's (rtol, atol) under an
adaptive solver, (0, 0) under a fixed step (`take_run_settings`); acc (B, n), lam (B, m) scratch
for qdd and lambda (m' rows: the independent constraint rows, `ClosedChain.independent_rows`);
lam_rows (m',) int64 their places in the output lambda (the others are 0); memo (B, 1 + 2 n + na + n + m) each member's last solve (`_solve`); saved (2 n,) scratch of one member's state; q0, qd0 (B, n)
the assembled initial state; e0 (B,) J its energy T + V; passive (np,) int64 the passive joints'
columns in q; singular (B,) the members' singular_ratio (the crossing's threshold); warned (B,) the members'
near-singular crossings in this run (Python-side: the warning is the run's first)."""


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def _same(a, b):
    """a and b are the same float (a signed zero differs from the other; NaN never matches)."""
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


@njit(cache=True, error_model="numpy")
def _solve(t, xc, u, p):
    """qdd and lambda of every member into p.acc, p.lam; q and qd as views of xc.

    Each member's result is remembered in p.memo (flag, q and qd, the actuated torques, then
    qdd and lambda) with the numbers it came from: a call with the very same state and torque
    (the derivative after the output at one solver stage) copies it instead of solving again
    (a deterministic function of those numbers and the record: the same bits), as the
    Manipulator's accelerations do."""
    n = p.acc.shape[1]
    m = p.lam.shape[1]
    na = p.act.shape[0]
    q = xc[:, :n]
    qd = xc[:, n:2 * n]
    tau = u[0]
    wide = tau.shape[1] > 1
    memo = p.memo
    for b in range(xc.shape[0]):
        hit = memo[b, 0] == 1.0
        i = 0
        while hit and i < 2 * n:
            hit = _same(memo[b, 1 + i], xc[b, i])
            i += 1
        i = 0
        while hit and i < na:
            hit = _same(memo[b, 1 + 2 * n + i], tau[b, i if wide else 0])
            i += 1
        out = 1 + 2 * n + na
        if hit:
            for i in range(n):
                p.acc[b, i] = memo[b, out + i]
            for i in range(m):
                p.lam[b, i] = memo[b, out + n + i]
            continue
        cc.accelerations(p.chain, p.work, b, q, qd, tau, p.act, p.damping, p.alpha[b],
                         p.beta[b], p.acc, p.lam)
        for i in range(2 * n):
            memo[b, 1 + i] = xc[b, i]
        for i in range(na):
            memo[b, 1 + 2 * n + i] = tau[b, i if wide else 0]
        for i in range(n):
            memo[b, out + i] = p.acc[b, i]
        for i in range(m):
            memo[b, out + n + i] = p.lam[b, i]
        memo[b, 0] = 1.0
    return q, qd


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def _powers(p, b, qd, tau):
    """(motor power B tau . qd, damper power qd^T D qd) of member b (W)."""
    d = p.damping[b if p.damping.shape[0] > 1 else 0]
    motor = 0.0
    for i in range(p.act.shape[0]):
        motor += tau[b, i if tau.shape[1] > 1 else 0] * qd[b, p.act[i]]
    loss = 0.0
    for i in range(qd.shape[1]):
        loss += d[i] * qd[b, i] * qd[b, i]
    return motor, loss


@njit(cache=True, error_model="numpy")
def closed_chain_output(t, xc, xd, u, y, p):
    """q, qd, qdd (n), lambda (m), phi_norm, tool (3), power (2), work (2), energy, balance."""
    q, qd = _solve(t, xc, u, p)
    n = q.shape[1]
    models, datas, offsets, loops = p.chain
    for b in range(xc.shape[0]):
        for i in range(n):
            y[0][b, i] = q[b, i]
            y[1][b, i] = qd[b, i]
            y[2][b, i] = p.acc[b, i]
        for i in range(y[3].shape[1]):
            y[3][b, i] = 0.0
        for i in range(p.lam.shape[1]):
            y[3][b, p.lam_rows[i]] = p.lam[b, i]
        worst = cc.constraints(p.chain, p.work, b, q, qd, False)
        m = p.lam.shape[1]
        phi = cc._views(p.work, n, m)[cc.VIEW_PHI]
        s = 0.0
        for i in range(m):
            s += phi[i] * phi[i]
        y[4][b, 0] = math.sqrt(s) if worst > 0.0 else 0.0
        j = loops[0, 0]
        q1, qd1 = cc._branch_state(p.chain, j, q, qd, b)
        pose = cc._views(p.work, n, m)[cc.VIEW_SCRATCH]
        kin.tool_pose(models[j], md.member(models[j], b), q1, 0, pose, 0)
        for i in range(3):
            y[5][b, i] = pose[i]
        motor, loss = _powers(p, b, qd, u[0])
        y[6][b, 0] = motor
        y[6][b, 1] = loss
        y[7][b, 0] = xc[b, 2 * n]
        y[7][b, 1] = xc[b, 2 * n + 1]
        T, V = cc.energy(p.chain, b, q, qd)
        y[8][b, 0] = T + V
        y[9][b, 0] = T + V - p.e0[b] - (xc[b, 2 * n] - xc[b, 2 * n + 1])


@njit(cache=True, error_model="numpy")
def closed_chain_derivative(t, xc, xd, u, dxc, p):
    """q' = qd, qd' = qdd, and the motor work and damper loss' rates (W)."""
    q, qd = _solve(t, xc, u, p)
    n = q.shape[1]
    for b in range(xc.shape[0]):
        for i in range(n):
            dxc[b, i] = qd[b, i]
            dxc[b, n + i] = p.acc[b, i]
        motor, loss = _powers(p, b, qd, u[0])
        dxc[b, 2 * n] = motor
        dxc[b, 2 * n + 1] = loss


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def _within_tolerance(xc, b, saved, tol, rtol, atol):
    """Whether member b's projected state xc[b] is within the tolerance of the state before it
    (saved): every |dx_i| <= tol when tol >= 0 (the block's override), else every |dx_i| <=
    atol + rtol max(|x_i|, |x_i'|), the scale an adaptive solver measures its error on (its error
    is the RMS of the same ratios, so a move within this is within the solver's error; with
    rtol = atol = 0, a fixed-step run, only a move of nothing)."""
    for i in range(saved.shape[0]):
        move = abs(xc[b, i] - saved[i])
        scale = tol if tol >= 0.0 else atol + rtol * max(abs(xc[b, i]), abs(saved[i]))
        if not move <= scale:
            return False
    return True


@njit(cache=True, error_model="numpy")
def closed_chain_update(t, xc, xd, u, p):
    """Drift control by projection at a major step: each member's q onto phi = 0 and qd onto
    Jc qd = 0 (`closed_chain.project`); a projection within the tolerance (`_within_tolerance`)
    is undone (no discontinuity: the state stays bit for bit, so an adaptive solver goes on), else
    xd[b, 0] counts it (the count is what tells the engine the state was reset)."""
    n = p.acc.shape[1]
    q = xc[:, :n]
    qd = xc[:, n:2 * n]
    for b in range(xc.shape[0]):
        for i in range(2 * n):
            p.saved[i] = xc[b, i]
        cc.project(p.chain, p.work, b, q, qd)
        if _within_tolerance(xc, b, p.saved, p.tol[b], p.run_tol[0], p.run_tol[1]):
            for i in range(2 * n):
                xc[b, i] = p.saved[i]
        else:
            xd[b, 0] += 1.0


@njit(cache=True, error_model="numpy")
def closed_chain_zero_crossings(t, xc, xd, u, g, p):
    """g[b, 0] = min(singularity ratios) - singular_ratio: falls through 0 where member b nears
    a singular configuration (`closed_chain.singularity_ratios`)."""
    n = p.acc.shape[1]
    q = xc[:, :n]
    qd = xc[:, n:2 * n]
    for b in range(xc.shape[0]):
        passive, schur = cc.singularity_ratios(p.chain, p.work, b, q, qd, p.passive)
        g[b, 0] = min(passive, schur) - p.singular[b]


@functools.lru_cache(maxsize=16)
def _read(path: str, stamp):
    return read_closed_chain(path)


def load_chain(source: str, diagram_dir: str | None) -> cc.ClosedChain:
    """The ClosedChain named by a block's `chain` parameter: a preset (five_bar) or a closed-chain
    YAML file relative to the diagram's folder."""
    if source in preset_names():
        return preset(source)
    path = Path(source)
    if not path.is_absolute():
        path = Path(diagram_dir or ".") / path
    try:
        found = path.suffix.lower() in (".yaml", ".yml") and path.is_file()
    except OSError as err:
        raise ParameterError(f"closed-chain file {shorten(str(path), 200)}: "
                             f"{os_reason(err, path)}") from None
    if not found:
        raise ParameterError(f"chain {shown(source)} is neither a preset ({', '.join(preset_names())}) "
                             f"nor a closed-chain file (.yaml); looked for {shorten(str(path), 200)}")
    return _read(*stamped(path))    # kept by modification time, a dependency


@register
class ClosedChain(Block):
    """A closed-chain mechanism as a plant: serial branches sharing the base, loops closed by
    constraints phi(q) = 0, the actuated joints driven by `tau`.

    Equation (docs/closed-chains.md): M(q) qdd + c(q, qd) + g(q) = B tau - D qd + Jc^T lambda with
    Jc qdd = -Jcdot qd (- 2 alpha Jc qd - beta^2 phi under Baumgarte), solved per member by the
    Schur complement Jc M^-1 Jc^T; M by the CRBA and c + g by the RNEA of each branch. States q,
    qd (all joints, the file's order: for the five-bar th1, ph1, th2, ph2), then the motor work
    W_motor = int tau . qd_act dt and the damper loss W_damper = int qd^T D qd dt (J), so that
    E - E0 = W_motor - W_damper holds along the run (output `balance`).
    Initial state: the actuated joints at q0 (rad) and qd0 (rad/s), the passive ones assembled
    by Newton from the file's guess (its branch) and their rates from Jc qd = 0; or, with tool0,
    every joint assembled to put the first loop's point there (q0 the actuated joints' start); a
    configuration that does not close is an error naming the loop; dependent constraint
    rows (a spatial loop over planar joints) are left out of the solve, their lambda 0.
    Drift control (`drift`): projection (default) of q onto phi = 0 and qd onto Jc qd = 0 at every
    major step (a reset of the continuous state at the step's updates, after its outputs and
    log; a move within the run's tolerance, atol + rtol |x| per state, or within
    `projection_tol` when given, is left undone, so an adaptive run is not restarted);
    baumgarte with gains alpha, beta (1/s); none.
    Singularities (`singular`): warn (default) or stop when the chain nears a singular
    configuration during the run: a located event where sigma_min / sigma_max of the passive
    joints' loop Jacobian, or lambda_min / lambda_max of Jc M^-1 Jc^T, falls below
    `singular_ratio` (the five-bar's distal links aligned); the warning, once per run, names the
    time; stop also ends the run there (the instant logged). none: no check (the compiled
    adaptive loop runs only without crossings).
    Outputs: q (rad), qd (rad/s), qdd (rad/s^2), lambda (N, world frame: the force on each loop's
    first branch's tip; x-y for a planar loop; a pose loop's rows 3-5 the moment, N m), phi_norm (m, |phi|), tool (m, the first loop's
    point, x y z), power (W: motor, damper), work (J: W_motor, W_damper), energy (J, T + V),
    balance (J, E - E0 - W_motor + W_damper). qdd, lambda and power read tau directly.
    Discrete state (projection only): the count of projections that moved the state.
    """

    type_name = "ClosedChain"
    summary = "closed-chain plant (five-bar): tau -> q, qd, qdd, lambda, |phi|, tool, energy"
    params = {
        "chain": Param(units="-", doc="preset name (five_bar) or closed-chain YAML file, relative "
                       "to the diagram", kind="str"),
        "q0": Param(units="rad", doc="initial angles of the actuated joints (the file's order); "
                    "the passive joints are assembled. With tool0: the actuated joints' starting "
                    "values for the assembly"),
        "tool0": Param(None, "m", "initial point of the first loop (x, y for a planar loop; x, y, "
                       "z): every joint assembled to put it there (default: from q0)"),
        "qd0": Param(0.0, "rad/s", "initial rates of the actuated joints"),
        "masses": Param(None, "kg", "link masses, one per joint in q order (mass and inertia scale "
                        "together, the com stays); per batch member. Default: the file's"),
        "damping": Param(None, "N m s/rad", "viscous damping per joint (default: the file's)"),
        "drift": Param("projection", "-", "drift control: projection | baumgarte | none",
                       kind="str", choices=DRIFT_CONTROLS),
        "alpha": Param(None, "1/s", "Baumgarte velocity gain (drift: baumgarte; default 10)"),
        "beta": Param(None, "1/s", "Baumgarte position gain (drift: baumgarte; default 10)"),
        "projection_tol": Param(None, "rad, rad/s", "override: a projection moving no state by "
                                "more than this is undone (no discontinuity at the major step). "
                                "Default: the run's tolerance, atol + rtol |x| per state under an "
                                "adaptive solver (every projection applies under a fixed step)"),
        "singular": Param("warn", "-", "near a singular configuration during the run: warn (once, "
                          "with the time), stop (warn and end the run there), none",
                          kind="str", choices=SINGULAR_CHOICES),
        "singular_ratio": Param(SINGULAR_RATIO, "-", "the threshold of near-singular: "
                                "sigma_min / sigma_max of the passive joints' loop Jacobian or "
                                "lambda_min / lambda_max of Jc M^-1 Jc^T below it; per batch "
                                "member"),
    }
    inputs = ("tau",)
    outputs = ("q", "qd", "qdd", "lambda", "phi_norm", "tool", "power", "work", "energy",
               "balance")
    port_units = {"lambda": "N", "phi_norm": "m", "tool": "m", "power": "W", "work": "J",
                  "energy": "J", "balance": "J"}
    sample = "continuous"

    def chain_of(self, v) -> cc.ClosedChain:
        try:
            return load_chain(v.chain, self.diagram_dir)
        except BlocksimError as err:
            raise err.located(block=self.name)

    def setup(self):
        self.mech = self.chain_of(self.p)
        self.n, self.m, self.na = self.mech.n, self.mech.m, len(self.mech.actuated)

    def check_values(self, v):
        mech = self.chain_of(v)
        if v.drift != "baumgarte" and (v.alpha is not None or v.beta is not None):
            raise ParameterError(f"alpha and beta are the Baumgarte gains; with drift: {v.drift} "
                                 "they have no effect", block=self.name)
        for key in ("alpha", "beta"):
            value = getattr(v, key)
            if value is not None and (value.ndim > 1 or np.any(value < 0)):
                raise ParameterError(f"'{key}' must be a scalar >= 0", block=self.name)
        if v.damping is not None and np.any(v.damping < 0):
            raise ParameterError("'damping' must be >= 0", block=self.name)
        if v.singular_ratio.ndim > 1 or np.any(v.singular_ratio <= 0) \
                or np.any(v.singular_ratio >= 1):
            raise ParameterError("'singular_ratio' must be a scalar in (0, 1)", block=self.name)
        if v.masses is not None and np.any(v.masses <= 0):
            raise ParameterError("'masses' must be > 0", block=self.name)
        if v.projection_tol is not None and (np.any(v.projection_tol < 0)
                                             or v.projection_tol.ndim > 1):
            raise ParameterError("'projection_tol' must be a scalar >= 0", block=self.name)
        for key, width in (("q0", len(mech.actuated)), ("qd0", len(mech.actuated)),
                           ("masses", mech.n), ("damping", mech.n),
                           ("tool0", min(3, mech.loops[0].rows))):
            value = getattr(v, key)
            if value is None:
                continue
            count = 1 if value.ndim == 1 else int(np.prod(value.shape[1:]))
            if value.ndim > 2 or count not in ((width,) if key == "tool0" else (1, width)):
                need = f"{width}" if key == "tool0" else f"1 or {width}"
                raise ParameterError(f"'{key}' needs {need} values, got {count}", block=self.name)

    def resolve_widths(self, in_widths):
        if in_widths.get("tau") not in (None, self.na):
            raise WidthError(f"input has width {in_widths['tau']}, chain '{self.mech.name}' has "
                             f"{self.na} actuated joints", block=self.name, port="tau")
        return {"q": self.n, "qd": self.n, "qdd": self.n, "lambda": self.m, "phi_norm": 1,
                "tool": 3, "power": 2, "work": 2, "energy": 1, "balance": 1}

    def feedthrough(self):
        return {("tau", "qdd"), ("tau", "lambda"), ("tau", "power")}

    def configure(self, in_widths, out_widths):
        self.n_xc = 2 * self.n + 2
        self.n_xd = 1 if self.p.drift == "projection" else 0
        self.n_zc = 0 if self.p.singular == "none" else 1
        self.zc_directions = -np.ones(self.n_zc, dtype=np.int64)      # falling: nearing

    def structure(self, v):
        return v.drift, v.singular == "none"

    def _rows(self, key, width, v, default):
        if getattr(v, key) is None:
            return np.ascontiguousarray(np.broadcast_to(default, (v.batch, width)))
        return np.ascontiguousarray(self.param_as_row(key, width, v))

    def masses_of(self, v):
        """(B, n) the members' link masses (kg), or None for the file's."""
        return None if v.masses is None else self._rows("masses", self.chain_of(v).n, v, 0.0)

    def initial_configuration(self, v):
        """(q0, qd0) (B, n): the actuated joints' values, the passive ones assembled."""
        mech = self.chain_of(v)
        chain = mech.chain()                      # the geometry: the same for every member
        qa = self._rows("q0", self.na, v, 0.0)
        qda = self._rows("qd0", self.na, v, 0.0)
        rows = min(3, mech.loops[0].rows)
        tool = None if v.tool0 is None else self._rows("tool0", rows, v, 0.0)
        q0, qd0 = np.zeros((v.batch, self.n)), np.zeros((v.batch, self.n))
        found = {}
        for b in range(v.batch):
            key = (qa[b].tobytes(), qda[b].tobytes(), None if tool is None else tool[b].tobytes())
            if key not in found:
                try:
                    q = mech.assemble(chain, qa[b]) if tool is None else \
                        mech.assemble_at_tool(chain, tool[b], qa[b])
                except BlocksimError as err:
                    raise err.located(block=self.name)
                found[key] = (q, mech.rates(chain, q, qda[b]))
            q0[b], qd0[b] = found[key]
        return q0, qd0

    def doubtful(self):
        """A start near a singular configuration (the passive joints' constraint Jacobian or
        Jc M^-1 Jc^T nearly rank-deficient)."""
        masses = self.masses_of(self.p)
        q0 = self.initial_configuration(self.p)[0][0]
        mech, _, dropped = self.independent(self.p, q0)
        passive, schur = mech.singularity_measures(
            mech.chain(None if masses is None else masses[:1]), q0)
        out = [("chain", f"loop '{lp.name}': {count} of its {lp.rows} constraint rows "
                         f"{'is' if count == 1 else 'are'} dependent on the others (no joint moves "
                         "the tips apart along them): the dynamics are solved on the independent "
                         "rows, and lambda is 0 on the dependent ones")
               for lp, count in dropped]
        threshold = float(np.min(self.p.singular_ratio))
        if passive < threshold or schur < threshold:
            out.append(("q0", f"chain '{mech.name}' starts near a singular configuration "
                              f"(sigma_min/sigma_max {passive:.3g} of the passive joints' loop "
                              f"Jacobian, {schur:.3g} of Jc M^-1 Jc^T): the constraint forces "
                              "and the passive rates grow without bound there"))
        return out

    def independent(self, v, q0):
        """`ClosedChain.independent_rows` of the values' chain at member 0's start q0 (n,): the
        geometry is every member's (masses do not move the rows)."""
        mech = self.chain_of(v)
        try:
            return mech.independent_rows(mech.chain(), q0)
        except BlocksimError as err:
            raise err.located(block=self.name)

    def record(self, v):
        q0, qd0 = self.initial_configuration(v)
        mech, kept, _ = self.independent(v, q0[0])
        try:
            chain = mech.chain(self.masses_of(v), v.batch)
        except BlocksimError as err:
            raise err.located(block=self.name)
        damping = self._rows("damping", mech.n, v, mech.viscous)
        if v.damping is None and v.batch > 1:
            damping = damping[:1].copy()
        e0 = np.zeros(v.batch)
        energy = python_twin(cc.energy)
        for b in range(v.batch):
            T, V = energy(chain, b, q0, qd0)
            e0[b] = T + V
        baumgarte = v.drift == "baumgarte"

        def per_member(value, default):
            return np.full(v.batch, default) if value is None else \
                np.ascontiguousarray(np.broadcast_to(value.reshape(v.batch), (v.batch,)))

        alpha = per_member(v.alpha, 10.0 if baumgarte else 0.0)
        beta = per_member(v.beta, 10.0 if baumgarte else 0.0)
        tol = per_member(v.projection_tol, -1.0)
        return kernel_params(ClosedChainParams, chain=chain, work=mech.scratch(),
                             act=mech.actuated.copy(), damping=damping, alpha=alpha, beta=beta,
                             tol=tol, run_tol=np.zeros(2), acc=np.zeros((v.batch, mech.n)),
                             lam=np.zeros((v.batch, mech.m)), lam_rows=kept,
                             memo=np.zeros((v.batch, 1 + 3 * mech.n + len(mech.actuated) + mech.m)),
                             saved=np.zeros(2 * mech.n),
                             q0=q0, qd0=qd0, e0=e0, passive=mech.passive.copy(),
                             singular=per_member(v.singular_ratio, SINGULAR_RATIO),
                             warned=np.zeros(v.batch))

    def take_run_settings(self, settings, p=None):
        """The run's (rtol, atol) into the record under an adaptive solver (a projection within
        them is no discontinuity), (0, 0) under a fixed step (every projection applies: a
        fixed-step solver has no step size to lose)."""
        p = self.own_record(p)
        adaptive = settings.step is None
        p.run_tol[0] = settings.rtol if adaptive else 0.0
        p.run_tol[1] = settings.atol if adaptive else 0.0

    def state_names(self):
        names = self.mech.joint_names
        xd = ["projections"] if self.n_xd else []
        return ([f"q[{j}]" for j in names] + [f"qd[{j}]" for j in names]
                + ["W_motor", "W_damper"], xd)

    def initial_state(self, xc, xd, p=None):
        """The assembled q0, qd0 of the run's record p (None: the block's own); no work done."""
        p = self.own_record(p)
        n = self.n
        xc[:, :n] = p.q0
        xc[:, n:2 * n] = p.qd0
        xc[:, 2 * n:] = 0.0
        xd[...] = 0.0
        p.warned[:] = 0.0

    def _ratios(self, p, xc, b):
        """(passive, schur) singularity ratios of member b at xc (Python, at an event)."""
        n = self.n
        q = np.ascontiguousarray(xc[:, :n])
        return python_twin(cc.singularity_ratios)(p.chain, p.work, b, q,
                                                  np.ascontiguousarray(xc[:, n:2 * n]), p.passive)

    def on_event(self, t, xc, xd, u, mask, p=None):
        """A member's singularity crossing: counted in its last discrete state; the run's first
        warns (BlocksimWarning, with the time and the ratios); stop ends the run."""
        p = self.own_record(p)
        first = not np.any(p.warned > 0)
        members = np.nonzero(mask[:, 0])[0]
        p.warned[members] += 1.0
        if first and len(members):
            b = int(members[0])
            passive, schur = self._ratios(p, xc, b)
            who = f" (member {b})" if xc.shape[0] > 1 else ""
            then = "; the run stops here" if self.p.singular == "stop" else ""
            warnings.warn(BlocksimWarning(
                f"block '{self.name}': chain '{self.mech.name}'{who} nears a singular "
                f"configuration at t = {t:.9g} s (sigma_min/sigma_max {passive:.3g} of the passive "
                f"joints' loop Jacobian, lambda_min/lambda_max {schur:.3g} of Jc M^-1 Jc^T, "
                f"threshold {float(p.singular[b]):.3g}): the constraint forces and the passive "
                f"rates grow without bound there{then}"), stacklevel=2)
        return self.p.singular == "stop" and len(members) > 0

    def stop_requested(self, t, xc, xd, u, p=None) -> bool:
        """singular: stop, and a member starts below its threshold (`blocksim check` warns of
        that start too)."""
        if self.p.singular != "stop":
            return False
        p = self.own_record(p)
        return any(min(self._ratios(p, xc, b)) < p.singular[b] for b in range(xc.shape[0]))

    def kernels(self):
        return Kernels(output=closed_chain_output, derivative=closed_chain_derivative,
                       update=closed_chain_update if self.p.drift == "projection" else None,
                       zero_crossings=closed_chain_zero_crossings if self.n_zc else None)
