"""The compiled stiff loop: a run under radau without zero crossings, as one numba function of the
generated module (run_stiff).

It is the scheduler's loop (engine/scheduler.py) driving solvers/stiff.Radau, rendered: the phases
of a major step in MAJOR_STEP's order at each major time (the next sample hit, a source's
breakpoint, the stop time), then Radau IIA of order 5 (solvers/radau_kernels.py, SciPy's method
and constants) stepped to the next one, the log grid filled from the collocation polynomial. The
rules the Python path follows are kept: a major step restarts the solver (the derivative, the
Jacobian and its step factors afresh, the step size kept) unless it was a quiet hit
(RunPlan.stage_held), which keeps the solver's history, Jacobian and LU factors; a step cut short
by a major time gives its proposed size back when the solver goes on (solvers/stiff.Radau). The
derivatives are the module's `derivatives` function, called at every stage, Jacobian column and
error refinement; Python is entered between chunks of steps only, for the progress bar and Ctrl-C.

The numbers are SciPy's up to rounding (the LU factors here are this module's, SciPy's LAPACK's or
SuperLU's there), so the two paths take the same steps as long as no accept/reject decision sits
on the rounding's edge; the tests hold both to the stiff references.

State carried between chunks: fstate = FSTATE's fields, istate = ISTATE's fields.
"""
from __future__ import annotations

import time as _time

import numpy as np

from ..errors import SolverError
from ..solvers import make_solver
from ..solvers.radau_kernels import newton_tolerance
from . import bdf_loop
from .major_step import phase_handlers
from .loops import held_buffer, loop_clock, next_chunk
from .progress import Progress
from .run_output import RunOutput
from .source_text import block, indent, unpacked

FSTATE = ("t", "t1", "h_abs", "t_old", "h_abs_old", "error_norm_old", "cut_from", "h_failed")
"""The float state of run_stiff: the time, the bound of the interval being integrated, the step
size to try next (NaN: choose one), the last step's start, the last step's proposed size and
error norm (NaN: unknown, the one-step controller), the step proposed before a cut at the bound
(NaN: no cut), the step size at a failure."""
ISTATE = ("n", "n_floor", "mode", "have_f", "log_pos", "nfev", "nsteps", "nrejected",
          "major_steps", "next_break", "tick_next", "floor_next", "have_dense", "have_lu",
          "current_jac", "njev", "nlu", "reason")
"""The integer state of run_stiff: as engine/adaptive_loop.ISTATE for the first twelve, then
whether the last step's collocation polynomial predicts the next (0 after a restart), whether
the LU factors are those of the current step size and Jacobian, whether the Jacobian is the
current state's, the Jacobian estimates and LU factorisations made, why the solver failed."""

DONE, FINISHED, NOT_FINITE, UNDERFLOW = 0, 1, 2, 3
"""run_stiff's status: the chunk's steps done, the stop time reached, a state became NaN/Inf,
the step size fell below the time's resolution."""

TOO_SMALL, NO_PROGRESS = 0, 1
"""Why an UNDERFLOW: the step size fell below ten spacings of t (SciPy's Radau gives up), or an
accepted step moved t by less than that (the solver contract's underflow)."""


def renderable(plan) -> bool:
    """Whether the plan's module holds run_stiff: continuous states and no zero crossings (a
    stiff run's events stay with the scheduler's loop)."""
    return plan.n_xc > 0 and not plan.crossings


LOOPS = {"radau": "run_stiff", "bdf": "run_bdf"}
"""The module's loop for each stiff solver it renders (engine/bdf_loop.py: run_bdf)."""


def loop_for(plan, solver) -> str | None:
    """The module's function that runs this plan under this solver: run_stiff (radau) or run_bdf
    (bdf) on a renderable plan; None otherwise."""
    return LOOPS.get(getattr(solver, "name", None)) if renderable(plan) else None


def render(gen) -> str:
    """run_stiff's and run_bdf's source for Generator `gen`: STIFF_LOOP and BDF_LOOP with the
    major step's phases (MAJOR_STEP, in order) and the log copies filled in; the outputs, updates
    and derivatives are the module's own functions, called."""
    renders = {"outputs": lambda: [], "advance": lambda: [],
               "events_at_t": gen._render_events_at_t,
               "log": lambda: ["if log_pos < n_log and log_times[log_pos] == t:"]
               + indent(gen.record_body(), 4) + ["    log_pos += 1"],
               "updates": lambda: ["updates(t, hits, xc, xd, s, p)"],
               "finite_check": lambda: ["if not (all_finite(xc) and all_finite(xd)):",
                                        "    status = 2", "    break"],
               "stop": lambda: ["major_steps += 1", "if not t < t_stop:",
                                "    status = 1", "    break"]}
    phases = phase_handlers("compiled stiff loop", renders.get)
    if phases[0][0] != "outputs" or phases[-1][0] != "advance":
        raise NotImplementedError("the stiff loop's frame puts outputs first and the advance "
                                  "last")
    major = []
    for name, rendering in phases[1:-1]:
        major += [f"# {name}"] + rendering()
    plan = gen.plan
    reads = [f"s[{i}]" for i in plan.stage_held] + [f"xd[:, {a}:{b}]" for a, b in plan.stage_xd]
    parts = dict(
        unpack=gen.entry_locals(memo=False),
        stash=unpacked(block(["at = 0"] + [f"at = stash(held, at, {r})" for r in reads], 12)),
        major_mode=MAJOR_MODE.format(
            major=unpacked(block(major, 12)),
            unchanged=unpacked(block(["at = 0"] + [f"at = unchanged(held, at, {r})" for r in reads]
                                     + ["if at < 0:", "    have_f = 0"], 12))),
        record=unpacked(block(gen.record_body(), 16)))

    def pieces(error_order, h_failed, dense):
        return dict(first_step=FIRST_STEP.format(error_order=error_order),
                    step_end=STEP_END.format(h_failed=h_failed),
                    log_samples=LOG_SAMPLES.format(dense=dense, record=parts["record"],
                                                   stash=parts["stash"]))
    radau = pieces(3, FSTATE.index("h_failed"), "dense_at(te, t_old, t - t_old, x_old, Q, xc)")
    bdf = pieces(1, bdf_loop.FSTATE.index("h_failed"), "bdf.dense_at(te, t, h_abs, order, D, xc)")
    parts.update(load_state=LOAD_STATE, save_state=SAVE_STATE)
    return STIFF_LOOP.format(**parts, **radau) + bdf_loop.BDF_LOOP.format(**parts, **bdf)


MAJOR_MODE = """            # ---- a major step at t ----
            if n >= 0:
                rate_hits(n, per, off, hits)
            else:
                for q in range(hits.shape[0]):
                    hits[q] = False
            # outputs
            outputs(t, hits, True, xc, xd, s, p)
{major}
            # advance: the next major time (the next sample hit, the stop time, or a breakpoint
            # before them)
            t1, tick_next, floor_next, next_break = next_major_time(
                n, n_floor, t, per, off, stop_ceil, stop_tick, t_stop, num0, dnum, den, breaks,
                break_ticks, next_break)
            copy1d(xsol.reshape(-1), xc.reshape(-1))
            # a quiet hit (RunPlan.stage_held) keeps the solver: its history, Jacobian and LU
{unchanged}"""
"""The major step of run_stiff and run_bdf (mode 0), at 12 spaces: the phases of MAJOR_STEP at t,
the next major time, and the quiet-hit test, which sets have_f = 0 (the solver restarts) when
what the stages read changed."""


LOAD_STATE = """    n_log = log_times.shape[0]
    n_x = xsol.shape[1]
    t, t1, h_abs, t_old = fstate[0], fstate[1], fstate[2], fstate[3]
    n, n_floor, mode, have_f, log_pos = istate[0], istate[1], istate[2], istate[3], istate[4]
    nfev, nsteps, nrejected, major_steps = istate[5], istate[6], istate[7], istate[8]
    next_break, tick_next, floor_next = istate[9], istate[10], istate[11]"""
"""The loop state both stiff loops share, read from fstate and istate at entry (ISTATE's and
engine/bdf_loop.ISTATE's first twelve fields, FSTATE's first four), at 4 spaces."""

SAVE_STATE = """    fstate[0], fstate[1], fstate[2], fstate[3] = t, t1, h_abs, t_old
    istate[0], istate[1], istate[2], istate[3], istate[4] = n, n_floor, mode, have_f, log_pos
    istate[5], istate[6], istate[7], istate[8] = nfev, nsteps, nrejected, major_steps
    istate[9], istate[10], istate[11] = next_break, tick_next, floor_next"""
"""The same state written back at the end of a chunk."""

FIRST_STEP = """            # a (re)start at (t, xsol): f, the first step size, the Jacobian's factors afresh
            copy1d(xc.reshape(-1), xsol.reshape(-1))
            derivatives(t, xc, xd, f0, s, p)
            nfev += 1
            if math.isnan(h_abs):
                h0, d1 = initial_step_probe(xsol.reshape(-1), f0.reshape(-1), rtol, atol,
                                            t1 - t, xc.reshape(-1))
                derivatives(t + h0, xc, xd, f_tmp, s, p)
                nfev += 1
                h_abs = initial_step_choice(xsol.reshape(-1), f0.reshape(-1),
                                            f_tmp.reshape(-1), rtol, atol, t1 - t, max_step,
                                            h0, d1, {error_order})
            else:
                h_abs = min(h_abs, max_step, t1 - t)
            for q in range(jac_factor.shape[0]):
                for k in range(n_x):
                    jac_factor[q, k] = np.nan"""
"""A stiff solver's (re)start at (t, xsol) with the step size kept (NaN: SciPy's first-step rule
for the solver's error order, error_order), at 12 spaces: f0 = f(t, xsol)."""

STEP_END = """        finished = t_new >= t1
        if finished:
            t_new = t1
        if t_new - t_old < 10 * (np.nextafter(t_old, np.inf) - t_old) and not finished:
            status = 3
            reason = 1
            fstate[{h_failed}] = t_new - t_old
            t = t_old
            copy1d(xsol.reshape(-1), x_old.reshape(-1))
            break
        t = t_new
        nsteps += 1
        done += 1"""
"""An accepted step from (t_old, x_old) to (t_new, xsol), at 8 spaces: the solver contract's
underflow (a step that moved t by less than ten of its spacings), else t = t_new."""

LOG_SAMPLES = """        # the log samples inside the step, from its dense output
        if log_pos < n_log and (log_times[log_pos] < min(t, t1)
                                or (log_times[log_pos] == t and t < t1)):
            while log_pos < n_log and (log_times[log_pos] < min(t, t1)
                                       or (log_times[log_pos] == t and t < t1)):
                te = log_times[log_pos]
                if te == t:
                    copy1d(xc.reshape(-1), xsol.reshape(-1))
                elif te == t_old:
                    copy1d(xc.reshape(-1), x_old.reshape(-1))
                else:
                    {dense}
                outputs(te, hits, False, xc, xd, s, p)
{record}
                log_pos += 1
        copy1d(xc.reshape(-1), xsol.reshape(-1))
        if not (all_finite(xc) and all_finite(xd)):
            status = 2
            break
        if t >= t1:
            t = t1
            n = tick_next
            n_floor = floor_next
            mode = 0
            # what the stages read, to tell a quiet hit at the major step
{stash}"""
"""After an accepted step, at 8 spaces: the log samples inside it (the state at its ends, the
solver's dense output `dense` between them), the finite check, and the major step at t1."""


STIFF_LOOP = """

@njit(cache=True, error_model='numpy', nogil=True, no_cfunc_wrapper=True, _nrt=False)
def stiff_jacobian(t, xsol, f0, atol, xc, xd, f_tmp, s, p, J, jac_factor, y_scale, jac_step,
                   jac_retry, max_diff, f_scale):
    \"\"\"J = the finite-difference Jacobian of the derivatives at (t, xsol), f0 = f(t, xsol), as
    SciPy's num_jac makes it (its column steps, then a retry of the columns whose differences were
    too small against f); xc is left perturbed. Returns the evaluations made. One function for
    the three places run_stiff estimates J (numba compiles the derivatives' call sites once).\"\"\"
    n_x = xsol.shape[1]
    nfev = 0
    jacobian_steps(xsol, f0, atol, jac_factor, y_scale, jac_step)
    for j in range(n_x):
        perturbed(xsol, j, jac_step, xc)
        derivatives(t, xc, xd, f_tmp, s, p)
        nfev += 1
        jacobian_column(J, j, f_tmp, f0, max_diff, f_scale)
    for j in range(n_x):
        if jacobian_retry_steps(xsol, j, max_diff, f_scale, jac_factor, y_scale, jac_retry):
            perturbed(xsol, j, jac_retry, xc)
            derivatives(t, xc, xd, f_tmp, s, p)
            nfev += 1
            jacobian_retry_column(J, j, f_tmp, f0, max_diff, f_scale, jac_factor, jac_step,
                                  jac_retry)
    jacobian_finish(J, jac_step, jac_factor, max_diff, f_scale)
    return nfev


@njit(cache=True, error_model='numpy', nogil=True, no_cfunc_wrapper=True, _nrt=False)
def run_stiff(budget, fstate, istate, per, off, hits, num0, dnum, den, stop_ceil, stop_tick,
              t_stop, breaks, break_ticks, log_times, xc, xd, s, p, logs, rtol, atol, max_step,
              newton_tol, xsol, x_old, f0, f_tmp, scale, ZE, err, x_new, F, Z, W, dW, Q, J,
              LU_real, LU_complex, piv_real, piv_complex, f_real, f_complex, jac_factor,
              y_scale, jac_step, jac_retry, max_diff, f_scale, held):
    \"\"\"At most `budget` Radau steps of the run (engine/stiff_loop.py); returns the status.

    mode 0: a major step at t (the outputs, the phases after them, the next major time, the
    solver's restart unless the hit was quiet); mode 1: Radau steps toward t1, the log samples
    inside each step from its collocation polynomial. xc holds the state being evaluated; the
    solver's state is xsol, f(t, xsol) is f0. held: what the stages read at the end of the last
    interval (RunPlan.stage_held).\"\"\"
{unpack}
{load_state}
    h_abs_old, error_norm_old, cut_from = fstate[4], fstate[5], fstate[6]
    have_dense, have_lu, current_jac, njev, nlu = (istate[12], istate[13], istate[14],
                                                   istate[15], istate[16])
    reason = istate[17]
    status = 0
    done = 0
    at = 0
    while True:
        if mode == 0:
{major_mode}
            if have_f == 1 and not math.isnan(cut_from) and h_abs < cut_from:
                # the step cut short by this bound gives its proposed size back (stiff.Radau)
                h_abs = cut_from
                h_abs_old = np.nan
                error_norm_old = np.nan
                have_lu = 0
            cut_from = np.nan
            mode = 1
            continue
        # ---- the solver ----
        if done >= budget:
            break
        if have_f == 0:
{first_step}
            h_abs_old = np.nan
            error_norm_old = np.nan
            have_dense = 0
            have_lu = 0
            current_jac = 2                  # 2: to be estimated now
            have_f = 1
        if current_jac == 2:
            nfev += stiff_jacobian(t, xsol, f0, atol, xc, xd, f_tmp, s, p, J, jac_factor,
                                   y_scale, jac_step, jac_retry, max_diff, f_scale)
            njev += 1
            current_jac = 1
        # ---- one Radau step from (t, xsol) (scipy.integrate.Radau._step_impl) ----
        min_step = 10 * (np.nextafter(t, np.inf) - t)
        h_abs_entry = h_abs
        if h_abs > max_step:
            ha = max_step
            ha_old = np.nan
            en_old = np.nan
        elif h_abs < min_step:
            ha = min_step
            ha_old = np.nan
            en_old = np.nan
        else:
            ha = h_abs
            ha_old = h_abs_old
            en_old = error_norm_old
        rejected = False
        accepted = False
        n_iter = 0
        rate = np.nan
        error_norm = 0.0
        safety = 0.0
        t_new = t
        hs = 0.0
        while not accepted:
            if ha < min_step:
                status = 3
                reason = 0
                fstate[7] = ha
                break
            t_new = t + ha
            if t_new > t1:
                t_new = t1
            hs = t_new - t
            ha = abs(hs)
            if have_dense == 1:
                predicted_stages(t, hs, xsol, t_old, t - t_old, x_old, Q, Z)
            else:
                Z[:] = 0.0
            tolerance_scale(xsol, rtol, atol, scale)
            converged = False
            while not converged:
                if have_lu == 0:
                    iteration_matrices(J, hs, LU_real, piv_real, LU_complex, piv_complex)
                    nlu += 2
                    have_lu = 1
                # the simplified Newton iterations from the guess Z (solve_collocation_system)
                transform(TI, Z, W)
                dW_norm_old = np.nan
                rate = np.nan
                k = 0
                while k < NEWTON_MAXITER:
                    finite = True
                    for i in range(3):
                        stage_state(xsol, Z, i, xc)
                        derivatives(t + hs * C[i], xc, xd, F[i], s, p)
                        nfev += 1
                        finite = finite and all_finite(F[i])
                    if not finite:
                        break
                    dW_norm = newton_increment(F, W, hs, LU_real, piv_real, LU_complex,
                                               piv_complex, scale, dW, f_real, f_complex)
                    if not math.isnan(dW_norm_old):
                        rate = dW_norm / dW_norm_old
                    if not math.isnan(rate) and (
                            rate >= 1 or rate ** (NEWTON_MAXITER - k) / (1 - rate) * dW_norm
                            > newton_tol):
                        break
                    add_increment(W, dW, Z)
                    if dW_norm == 0 or (not math.isnan(rate)
                                        and rate / (1 - rate) * dW_norm < newton_tol):
                        converged = True
                        break
                    dW_norm_old = dW_norm
                    k += 1
                n_iter = min(k, NEWTON_MAXITER - 1) + 1
                if not converged:
                    if current_jac == 1:
                        break
                    # the Jacobian at the step's start, then the iterations again
                    nfev += stiff_jacobian(t, xsol, f0, atol, xc, xd, f_tmp, s, p, J, jac_factor,
                                           y_scale, jac_step, jac_retry, max_diff, f_scale)
                    njev += 1
                    current_jac = 1
                    have_lu = 0
                    if have_dense == 1:
                        predicted_stages(t, hs, xsol, t_old, t - t_old, x_old, Q, Z)
                    else:
                        Z[:] = 0.0
            if not converged:
                ha *= 0.5
                have_lu = 0
                continue
            for q in range(xsol.shape[0]):
                for j in range(n_x):
                    x_new[q, j] = xsol[q, j] + Z[2, q, j]
            error_estimate(f0, Z, hs, LU_real, piv_real, ZE, err)
            error_scale(xsol, x_new, rtol, atol, scale)
            error_norm = rms_scaled(err, scale)
            safety = safety_factor(n_iter)
            if rejected and error_norm > 1:
                for q in range(xsol.shape[0]):
                    for j in range(n_x):
                        xc[q, j] = xsol[q, j] + err[q, j]
                derivatives(t, xc, xd, f_tmp, s, p)
                nfev += 1
                refine_error(f_tmp, ZE, LU_real, piv_real, err)
                error_norm = rms_scaled(err, scale)
            if error_norm > 1:
                factor = predict_factor(ha, ha_old, error_norm, en_old)
                ha *= max(MIN_FACTOR, safety * factor)
                have_lu = 0
                rejected = True
                nrejected += 1
            else:
                accepted = True
        if status == 3:
            break
        recompute_jac = n_iter > 2 and rate > JAC_RECOMPUTE_RATE
        factor = predict_factor(ha, ha_old, error_norm, en_old)
        factor = min(MAX_FACTOR, safety * factor)
        if not recompute_jac and factor < STEP_KEEP_FACTOR:
            factor = 1.0
        else:
            have_lu = 0
        copy1d(xc.reshape(-1), x_new.reshape(-1))
        derivatives(t_new, xc, xd, f0, s, p)
        nfev += 1
        if recompute_jac:
            current_jac = 2
        else:
            current_jac = 0
        h_abs_old = h_abs_entry
        error_norm_old = error_norm
        h_abs = ha * factor
        t_old = t
        copy1d(x_old.reshape(-1), xsol.reshape(-1))
        copy1d(xsol.reshape(-1), x_new.reshape(-1))
        dense_coefficients(Z, Q)
        have_dense = 1
{step_end}
        cut_from = h_abs_entry if finished and t - t_old < h_abs_entry else np.nan
        if current_jac == 2:
            # the Jacobian at the step's end (slow convergence)
            nfev += stiff_jacobian(t, xsol, f0, atol, xc, xd, f_tmp, s, p, J, jac_factor,
                                   y_scale, jac_step, jac_retry, max_diff, f_scale)
            njev += 1
            current_jac = 1
{log_samples}
{save_state}
    fstate[4], fstate[5], fstate[6] = h_abs_old, error_norm_old, cut_from
    istate[12], istate[13], istate[14], istate[15], istate[16] = (have_dense, have_lu,
                                                                  current_jac, njev, nlu)
    istate[17] = reason
    return status
"""

IMPORTS = ("from blocksim.solvers.radau_kernels import (C, JAC_RECOMPUTE_RATE, MAX_FACTOR, "
           "MIN_FACTOR, NEWTON_MAXITER, STEP_KEEP_FACTOR, TI, add_increment, dense_at, "
           "dense_coefficients, error_estimate, error_scale, iteration_matrices, jacobian_column, "
           "jacobian_finish, jacobian_retry_column, jacobian_retry_steps, jacobian_steps, "
           "newton_increment, perturbed, predict_factor, predicted_stages, refine_error, "
           "rms_scaled, safety_factor, stage_state, tolerance_scale, transform)\n"
           + bdf_loop.IMPORTS)
"""The generated module's import of the Radau and BDF kernels (numba_backend writes it)."""


def run(backend, sim) -> RunOutput | None:
    """The run of Simulation sim (started: initial states and constant outputs set) in the
    module's run_stiff (radau) or run_bdf (bdf), chunk by chunk; None when its ticks are beyond
    exact float integers (the scheduler's loop then runs it). Failures raise the errors the
    scheduler's loop raises."""
    s, plan, ctx = sim.settings, backend.plan, backend.context
    clock = loop_clock(sim, plan)
    if clock is None:
        return None
    num0, dnum, den, stop_ceil, int_stop, breaks, break_ticks, per, off, hits = clock
    B, n_x = ctx.xc.shape
    if backend.loop == "run_bdf":
        fnames, inames, work = bdf_loop.FSTATE, bdf_loop.ISTATE, bdf_loop.arrays(B, n_x)
    else:
        fnames, inames, work = FSTATE, ISTATE, radau_arrays(B, n_x)
    f_at = {name: k for k, name in enumerate(fnames)}
    jacobian = [np.full((B, n_x), np.nan)] + [np.zeros((B, n_x)) for _ in range(5)]
    held = held_buffer(backend.module_plan, B)      # what the module's quiet-hit test reads
    logs = tuple(sim.recorder.data[name] for name, _ in sim.recorder.sources)
    fstate = np.full(len(fnames), np.nan)
    fstate[f_at["t"]] = fstate[f_at["t1"]] = float(s.start)
    if s.step is not None:
        fstate[f_at["h_abs"]] = float(s.step)
    istate = np.zeros(len(inames), dtype=np.int64)
    istate[inames.index("tick_next")] = istate[inames.index("floor_next")] = -1

    def args(budget):
        return (budget, fstate, istate, per, off, hits, num0, dnum, den, stop_ceil, int_stop,
                float(s.stop), breaks, break_ticks, plan.log_grid, ctx.xc, ctx.xd, backend.s,
                backend.p, logs, float(s.rtol), float(s.atol), float(s.max_step),
                newton_tolerance(float(s.rtol)), *work, *jacobian, held)

    progress = Progress(s.start, s.stop, s.progress)
    status, interrupted, budget = DONE, False, 4
    try:
        loop = backend.loop_entry(backend.loop, args(0))
        while status == DONE:
            if sim.stop_requested:
                interrupted = True
                break
            started = _time.perf_counter()
            status = loop(*args(budget))
            elapsed = _time.perf_counter() - started
            budget = next_chunk(budget, elapsed, 4)
            progress.update(float(fstate[f_at["t"]]), force=True)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        progress.close()
    counters = dict(zip(inames, istate.tolist()))
    sim.recorder.count = counters["log_pos"]
    t = float(fstate[f_at["t"]])
    xsol = work[0]
    if interrupted:
        sim.log_final_state(t, xsol)
    elif status == NOT_FINITE:
        sim.check_finite(t)
    elif status == UNDERFLOW:
        _fail(sim, counters["reason"], t, float(fstate[f_at["h_failed"]]), xsol)
    t_log, data = sim.recorder.finished()
    stats = {"major_steps": counters["major_steps"], "nfev": counters["nfev"],
             "nsteps": counters["nsteps"], "nrejected": counters["nrejected"], "events": 0,
             "njev": counters["njev"], "nlu": counters["nlu"], "mode": "compiled"}
    return RunOutput(t_log, data, [], stats, interrupted, None)


def radau_arrays(B: int, n_x: int) -> list[np.ndarray]:
    """run_stiff's work arrays for B members of n_x states, in its argument order (after
    newton_tol and before the Jacobian's arrays)."""
    states = [np.zeros((B, n_x)) for _ in range(7)]   # xsol, x_old, f0, f_tmp, scale, ZE, err
    stages = [np.zeros((3, B, n_x)) for _ in range(5)]          # F, Z, W, dW, Q
    return [*states, np.zeros((B, n_x)), *stages, np.zeros((B, n_x, n_x)),
            np.zeros((B, n_x, n_x)), np.zeros((B, n_x, n_x), dtype=complex),
            np.zeros((B, n_x), dtype=np.int64), np.zeros((B, n_x), dtype=np.int64),
            np.zeros((B, n_x)), np.zeros((B, n_x), dtype=complex)]


def _fail(sim, reason: int, t: float, h: float, x: np.ndarray) -> None:
    """Raise the scheduler's error for a Radau run that cannot continue at (t, x): the solver's
    message, the block blamed as the scheduler's loop blames it."""
    s = sim.settings
    solver = make_solver(s.solver, sim.backend.rhs, t, x.copy(), float(s.stop),
                         rtol=s.rtol, atol=s.atol, max_step=s.max_step)
    try:
        why = "the step size fell below the resolution of t" if reason == TOO_SMALL else \
            "the tolerance cannot be met"
        solver._fail(f"step size underflow, {why}", h)
    except SolverError as err:
        sim.blame_non_finite(solver, err)
        raise err.located(where=sim.cd.spec.where.get("simulation.solver"))


__all__ = ["renderable", "loop_for", "render", "run", "STIFF_LOOP", "ISTATE", "FSTATE"]
