"""The compiled BDF loop: a run under bdf without zero crossings, as one numba function of the
generated module (run_bdf), beside run_stiff (engine/stiff_loop.py), whose frame it shares.

It is the scheduler's loop driving solvers/stiff.BDF, rendered: the phases of a major step at
each major time, then the variable-order BDF of solvers/bdf_kernels.py (SciPy's method, constants
and rules, step for step as scipy.integrate.BDF takes them) stepped to the next one, the log grid
filled from the differences' interpolating polynomial. A major step rebuilds the solver (order 1,
the derivative, the step size kept, the Jacobian afresh: a new SciPy BDF in the Python path)
unless it was a quiet hit (RunPlan.stage_held), which keeps its differences, order, Jacobian and
LU factors. The derivatives are the module's `derivatives`, called at every Newton iteration and
Jacobian column; Python is entered between chunks of steps only, for the progress bar and
Ctrl-C.

The numbers are SciPy's up to rounding (the LU factors, the differences' products and the norms
are summed here in their own order), so the two paths take the same steps as long as no
accept/reject or order decision sits on the rounding's edge; the tests hold both to the stiff
references.

State carried between chunks: fstate = FSTATE's fields, istate = ISTATE's fields.
"""
from __future__ import annotations

import numpy as np

from ..solvers.bdf_kernels import MAX_ORDER

FSTATE = ("t", "t1", "h_abs", "t_old", "h_failed")
"""The float state of run_bdf: the time, the bound of the interval being integrated, the step
size (NaN: choose one), the last step's start, the step size at a failure."""
ISTATE = ("n", "n_floor", "mode", "have_f", "log_pos", "nfev", "nsteps", "nrejected",
          "major_steps", "next_break", "tick_next", "floor_next", "order", "n_equal", "have_lu",
          "njev", "nlu", "reason")
"""The integer state of run_bdf: as engine/stiff_loop.ISTATE for the first twelve, then the
formula's order, the steps taken at the current step size, whether the LU factors are those of
the current step size and Jacobian, the Jacobian estimates and LU factorisations made, why the
solver failed."""

IMPORTS = ("from blocksim.solvers import bdf_kernels as bdf")
"""The generated module's import of the BDF kernels."""


def arrays(B: int, n_x: int) -> list[np.ndarray]:
    """run_bdf's work arrays for B members of n_x states, in its argument order (after newton_tol
    and before the Jacobian's arrays)."""
    states = [np.zeros((B, n_x)) for _ in range(9)]  # xsol, x_old, f0, f_tmp, scale, x_predict, psi, d, dy
    D = np.zeros((MAX_ORDER + 3, B, n_x))
    scratch = [np.zeros((MAX_ORDER + 1, MAX_ORDER + 1)) for _ in range(3)] + [np.zeros(MAX_ORDER + 1)]
    return [*states, D, *scratch, np.zeros((B, n_x, n_x)), np.zeros((B, n_x, n_x)),
            np.zeros((B, n_x), dtype=np.int64)]


BDF_LOOP = """

@njit(cache=True, error_model='numpy', nogil=True, no_cfunc_wrapper=True, _nrt=False)
def run_bdf(budget, fstate, istate, per, off, hits, num0, dnum, den, stop_ceil, stop_tick,
            t_stop, breaks, break_ticks, log_times, xc, xd, s, p, logs, rtol, atol, max_step,
            newton_tol, xsol, x_old, f0, f_tmp, scale, x_predict, psi, d, dy, D, R, U, RU, rows,
            J, LU, piv, jac_factor, y_scale, jac_step, jac_retry, max_diff, f_scale, held):
    \"\"\"At most `budget` BDF steps of the run (engine/bdf_loop.py); returns the status.

    mode 0: a major step at t (the outputs, the phases after them, the next major time, the
    solver's rebuild unless the hit was quiet); mode 1: BDF steps toward t1 (SciPy's
    BDF._step_impl), the log samples inside each step from the differences' polynomial. xc holds
    the state being evaluated; the solver's state is xsol, its differences D. held: what the
    stages read at the end of the last interval (RunPlan.stage_held).\"\"\"
{unpack}
{load_state}
    order, n_equal, have_lu, njev, nlu = (istate[12], istate[13], istate[14], istate[15],
                                          istate[16])
    reason = istate[17]
    status = 0
    done = 0
    at = 0
    while True:
        if mode == 0:
{major_mode}
            mode = 1
            continue
        # ---- the solver ----
        if done >= budget:
            break
        if have_f == 0:
            # SciPy's BDF built at (t, xsol) (solvers/stiff.BDF)
{first_step}
            # the Jacobian as SciPy's BDF estimates it: f at the point afresh, then the columns
            copy1d(xc.reshape(-1), xsol.reshape(-1))
            derivatives(t, xc, xd, f_tmp, s, p)
            nfev += 1
            nfev += stiff_jacobian(t, xsol, f_tmp, atol, xc, xd, dy, s, p, J, jac_factor,
                                   y_scale, jac_step, jac_retry, max_diff, f_scale)
            njev += 1
            bdf.start_differences(D, xsol, f0, h_abs)
            order = 1
            n_equal = 0
            have_lu = 0
            have_f = 1
        # ---- one BDF step from (t, xsol) (scipy.integrate.BDF._step_impl) ----
        min_step = 10 * (np.nextafter(t, np.inf) - t)
        if h_abs > max_step:
            bdf.change_differences(D, order, max_step / h_abs, R, U, RU, rows)
            h_abs = max_step
            n_equal = 0
        elif h_abs < min_step:
            bdf.change_differences(D, order, min_step / h_abs, R, U, RU, rows)
            h_abs = min_step
            n_equal = 0
        ha = h_abs
        current_jac = False
        accepted = False
        n_iter = 0
        error_norm = 0.0
        t_new = t
        while not accepted:
            if ha < min_step:
                status = 3
                reason = 0
                fstate[4] = ha
                break
            t_new = t + ha
            if t_new > t1:
                t_new = t1
                bdf.change_differences(D, order, abs(t_new - t) / ha, R, U, RU, rows)
                n_equal = 0
                have_lu = 0
            hs = t_new - t
            ha = abs(hs)
            bdf.predict(D, order, x_predict, psi)
            tolerance_scale(x_predict, rtol, atol, scale)
            c = hs / bdf.ALPHA[order]
            converged = False
            while not converged:
                if have_lu == 0:
                    bdf.iteration_matrix(J, c, LU, piv)
                    nlu += 1
                    have_lu = 1
                # the simplified Newton iterations from the predictor (solve_bdf_system)
                copy1d(xc.reshape(-1), x_predict.reshape(-1))
                d[:] = 0.0
                dy_norm_old = np.nan
                k = 0
                while k < bdf.NEWTON_MAXITER:
                    derivatives(t_new, xc, xd, f_tmp, s, p)
                    nfev += 1
                    if not all_finite(f_tmp):
                        break
                    bdf.newton_increment(f_tmp, c, psi, d, LU, piv, dy)
                    dy_norm = rms_scaled(dy, scale)
                    rate = np.nan if math.isnan(dy_norm_old) else dy_norm / dy_norm_old
                    if not math.isnan(rate) and (
                            rate >= 1 or rate ** (bdf.NEWTON_MAXITER - k) / (1 - rate) * dy_norm
                            > newton_tol):
                        break
                    bdf.add_increment(dy, xc, d)
                    if dy_norm == 0 or (not math.isnan(rate)
                                        and rate / (1 - rate) * dy_norm < newton_tol):
                        converged = True
                        break
                    dy_norm_old = dy_norm
                    k += 1
                n_iter = min(k, bdf.NEWTON_MAXITER - 1) + 1
                if not converged:
                    if current_jac:
                        break
                    # the Jacobian at (t_new, the predictor), then the iterations again
                    copy1d(xc.reshape(-1), x_predict.reshape(-1))
                    derivatives(t_new, xc, xd, f_tmp, s, p)
                    nfev += 1
                    nfev += stiff_jacobian(t_new, x_predict, f_tmp, atol, xc, xd, dy, s, p, J,
                                           jac_factor, y_scale, jac_step, jac_retry, max_diff,
                                           f_scale)
                    njev += 1
                    have_lu = 0
                    current_jac = True
            if not converged:
                ha *= 0.5
                bdf.change_differences(D, order, 0.5, R, U, RU, rows)
                n_equal = 0
                have_lu = 0
                continue
            safety = bdf.safety_factor(n_iter)
            tolerance_scale(xc, rtol, atol, scale)
            bdf.scaled_times(d, bdf.ERROR_CONST[order], dy)
            error_norm = rms_scaled(dy, scale)
            if error_norm > 1:
                factor = max(bdf.MIN_FACTOR, safety * error_norm ** (-1 / (order + 1)))
                ha *= factor
                bdf.change_differences(D, order, factor, R, U, RU, rows)
                n_equal = 0
                nrejected += 1
            else:
                accepted = True
        if status == 3:
            break
        n_equal += 1
        t_old = t
        copy1d(x_old.reshape(-1), xsol.reshape(-1))
        copy1d(xsol.reshape(-1), xc.reshape(-1))
        h_abs = ha
        bdf.update_differences(D, d, order)
        if n_equal >= order + 1:
            # the orders below and above weighed: the next order and step size
            if order > 1:
                bdf.scaled_times(D[order], bdf.ERROR_CONST[order - 1], dy)
                error_m_norm = rms_scaled(dy, scale)
            else:
                error_m_norm = np.inf
            if order < bdf.MAX_ORDER:
                bdf.scaled_times(D[order + 2], bdf.ERROR_CONST[order + 1], dy)
                error_p_norm = rms_scaled(dy, scale)
            else:
                error_p_norm = np.inf
            order, factor = bdf.order_choice(order, error_m_norm, error_norm, error_p_norm,
                                             safety)
            h_abs *= factor
            bdf.change_differences(D, order, factor, R, U, RU, rows)
            n_equal = 0
            have_lu = 0
{step_end}
{log_samples}
{save_state}
    istate[12], istate[13], istate[14], istate[15], istate[16] = (order, n_equal, have_lu, njev,
                                                                  nlu)
    istate[17] = reason
    return status
"""
