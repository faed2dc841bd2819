"""Hand-written reference loops for blocksim's reference workloads W1, W2, W3 (benchmarks/README.md).

The same equations a blocksim diagram states, written by hand as an engineer would: in plain
Python floats, and with numba. benchmarks/run.py times blocksim against them in the same run and
checks that the numbers agree. Nothing here imports blocksim's engine; W3 uses blocksim's
rigid-body kernels only for the Puma 560 dynamics, as a hand-written loop would call Pinocchio.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from blocksim.models.rigid_body_kernels import aba_into, rnea_into

# ---- plant P2 and the W1/W2 settings ------------------------------------------------------
M1, M2, L1, L2 = 3.0, 2.0, 1.0, 0.8
C1, C2 = L1 / 2, L2 / 2
I1, I2 = M1 * L1 ** 2 / 12, M2 * L2 ** 2 / 12
G = 9.81
FV = (0.5, 0.3)
FC = (1.0, 0.5)
EPS = 1e-3
A = (0.5, 0.3)
KP, KI, KD = (400.0, 200.0), (100.0, 50.0), (40.0, 20.0)
N_GEAR, KT, KE, R_M, L_M, JM = 100.0, 0.1, 0.1, 0.5, 0.5e-3, 1e-5
KP_I, KI_I, V_MAX = 3.14, 3142.0, 48.0


def reference_python(t: float):
    """q_d, qd_d, qdd_d = A (1 - cos(pi t)) and its derivatives (rad, rad/s, rad/s^2)."""
    s, c = math.sin(math.pi * t), math.cos(math.pi * t)
    return ([A[0] * (1 - c), A[1] * (1 - c)], [A[0] * math.pi * s, A[1] * math.pi * s],
            [A[0] * math.pi ** 2 * c, A[1] * math.pi ** 2 * c])


def dynamics_python(q1, q2, qd1, qd2, m2=M2, i2=I2):
    """M (3 entries), c (2), G (2) of plant P2."""
    cos2 = math.cos(q2)
    m11 = I1 + i2 + M1 * C1 ** 2 + m2 * (L1 ** 2 + C2 ** 2 + 2 * L1 * C2 * cos2)
    m12 = i2 + m2 * (C2 ** 2 + L1 * C2 * cos2)
    m22 = i2 + m2 * C2 ** 2
    b = m2 * L1 * C2 * math.sin(q2)
    c1, c2 = -b * (2 * qd1 * qd2 + qd2 ** 2), b * qd1 ** 2
    g12 = m2 * C2 * G * math.cos(q1 + q2)
    return m11, m12, m22, c1, c2, (M1 * C1 + m2 * L1) * G * math.cos(q1) + g12, g12


def w1_python(feedforward: bool = True, stop: float = 2.0, h: float = 1e-3):
    """W1 with plain Python floats, RK4 at h: returns max |e| per joint over the 1 ms log grid."""
    x = [0.0] * 6            # q1 q2 qd1 qd2 z1 z2

    def f(t, x):
        q_d, qd_d, qdd_d = reference_python(t)
        e = [q_d[0] - x[0], q_d[1] - x[1]]
        ed = [qd_d[0] - x[2], qd_d[1] - x[3]]
        tau = [KP[i] * e[i] + KI[i] * x[4 + i] + KD[i] * ed[i] for i in range(2)]
        if feedforward:
            m11, m12, m22, c1, c2, g1, g2 = dynamics_python(q_d[0], q_d[1], qd_d[0], qd_d[1])
            tau[0] += m11 * qdd_d[0] + m12 * qdd_d[1] + c1 + g1
            tau[1] += m12 * qdd_d[0] + m22 * qdd_d[1] + c2 + g2
        m11, m12, m22, c1, c2, g1, g2 = dynamics_python(x[0], x[1], x[2], x[3])
        r1 = tau[0] - c1 - g1 - FV[0] * x[2] - FC[0] * math.tanh(x[2] / EPS)
        r2 = tau[1] - c2 - g2 - FV[1] * x[3] - FC[1] * math.tanh(x[3] / EPS)
        det = m11 * m22 - m12 * m12
        return [x[2], x[3], (m22 * r1 - m12 * r2) / det, (m11 * r2 - m12 * r1) / det, e[0], e[1]]

    steps = int(round(stop / h))
    max_e = [0.0, 0.0]
    for k in range(steps + 1):
        t = k * h
        q_d = reference_python(t)[0]
        max_e = [max(max_e[i], abs(q_d[i] - x[i])) for i in range(2)]
        if k == steps:
            break
        k1 = f(t, x)
        k2 = f(t + h / 2, [x[i] + h / 2 * k1[i] for i in range(6)])
        k3 = f(t + h / 2, [x[i] + h / 2 * k2[i] for i in range(6)])
        k4 = f(t + h, [x[i] + h * k3[i] for i in range(6)])
        x = [x[i] + h / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]) for i in range(6)]
    return max_e


@njit(cache=True)
def _p2(q1, q2, qd1, qd2):
    cos2 = math.cos(q2)
    m11 = I1 + I2 + M1 * C1 ** 2 + M2 * (L1 ** 2 + C2 ** 2 + 2 * L1 * C2 * cos2)
    m12 = I2 + M2 * (C2 ** 2 + L1 * C2 * cos2)
    m22 = I2 + M2 * C2 ** 2
    b = M2 * L1 * C2 * math.sin(q2)
    g12 = M2 * C2 * G * math.cos(q1 + q2)
    return (m11, m12, m22, -b * (2 * qd1 * qd2 + qd2 ** 2), b * qd1 ** 2,
            (M1 * C1 + M2 * L1) * G * math.cos(q1) + g12, g12)


@njit(cache=True)
def _w1_rhs(t, x, ff, out):
    s, c = math.sin(math.pi * t), math.cos(math.pi * t)
    pi2 = math.pi ** 2
    qd0, qd1_ = A[0] * (1 - c), A[1] * (1 - c)
    vd0, vd1 = A[0] * math.pi * s, A[1] * math.pi * s
    ad0, ad1 = A[0] * pi2 * c, A[1] * pi2 * c
    e0, e1 = qd0 - x[0], qd1_ - x[1]
    t0 = KP[0] * e0 + KI[0] * x[4] + KD[0] * (vd0 - x[2])
    t1 = KP[1] * e1 + KI[1] * x[5] + KD[1] * (vd1 - x[3])
    if ff:
        m11, m12, m22, c1, c2, g1, g2 = _p2(qd0, qd1_, vd0, vd1)
        t0 += m11 * ad0 + m12 * ad1 + c1 + g1
        t1 += m12 * ad0 + m22 * ad1 + c2 + g2
    m11, m12, m22, c1, c2, g1, g2 = _p2(x[0], x[1], x[2], x[3])
    r1 = t0 - c1 - g1 - FV[0] * x[2] - FC[0] * math.tanh(x[2] / EPS)
    r2 = t1 - c2 - g2 - FV[1] * x[3] - FC[1] * math.tanh(x[3] / EPS)
    det = m11 * m22 - m12 * m12
    out[0], out[1] = x[2], x[3]
    out[2], out[3] = (m22 * r1 - m12 * r2) / det, (m11 * r2 - m12 * r1) / det
    out[4], out[5] = e0, e1


@njit(cache=True)
def w1_numba(ff=True, stop=2.0, h=1e-3):
    """W1 in numba, RK4 at h: max |e| per joint over the 1 ms grid (array of 2)."""
    x = np.zeros(6)
    k1, k2, k3, k4, xs = np.zeros(6), np.zeros(6), np.zeros(6), np.zeros(6), np.zeros(6)
    steps = int(round(stop / h))
    max_e = np.zeros(2)
    for k in range(steps + 1):
        t = k * h
        c = math.cos(math.pi * t)
        for i in range(2):
            max_e[i] = max(max_e[i], abs(A[i] * (1 - c) - x[i]))
        if k == steps:
            break
        _w1_rhs(t, x, ff, k1)
        for i in range(6):
            xs[i] = x[i] + h / 2 * k1[i]
        _w1_rhs(t + h / 2, xs, ff, k2)
        for i in range(6):
            xs[i] = x[i] + h / 2 * k2[i]
        _w1_rhs(t + h / 2, xs, ff, k3)
        for i in range(6):
            xs[i] = x[i] + h * k3[i]
        _w1_rhs(t + h, xs, ff, k4)
        for i in range(6):
            x[i] += h / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i])
    return max_e


# Dormand-Prince 5(4) (Hairer, Norsett & Wanner, Solving ODEs I, II.5) with Shampine's dense output,
# coefficients as in SciPy's RK45; error control as SciPy's: RMS of err / (atol + rtol max(|x|, |x_new|)).
_DP_C = np.array([0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0])
_DP_A = np.array([[0.0, 0, 0, 0, 0],
                  [1 / 5, 0, 0, 0, 0],
                  [3 / 40, 9 / 40, 0, 0, 0],
                  [44 / 45, -56 / 15, 32 / 9, 0, 0],
                  [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0],
                  [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656]])
_DP_B = np.array([35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84])
_DP_E = np.array([-71 / 57600, 0, 71 / 16695, -71 / 1920, 17253 / 339200, -22 / 525, 1 / 40])
_DP_P = np.array([
    [1, -8048581381 / 2820520608, 8663915743 / 2820520608, -12715105075 / 11282082432],
    [0, 0, 0, 0],
    [0, 131558114200 / 32700410799, -68118460800 / 10900136933, 87487479700 / 32700410799],
    [0, -1754552775 / 470086768, 14199869525 / 1410260304, -10690763975 / 1880347072],
    [0, 127303824393 / 49829197408, -318862633887 / 49829197408, 701980252875 / 199316789632],
    [0, -282668133 / 205662961, 2019193451 / 616988883, -1453857185 / 822651844],
    [0, 40617522 / 29380423, -110615467 / 29380423, 69997945 / 29380423]])


@njit(cache=True)
def _w1_log_error(t, x, max_e):
    c = math.cos(math.pi * t)
    for i in range(2):
        max_e[i] = max(max_e[i], abs(A[i] * (1 - c) - x[i]))


@njit(cache=True)
def w1_dopri5_numba(ff=True, stop=2.0, rtol=1e-6, atol=1e-8, log_h=1e-3):
    """W1 in numba under Dormand-Prince 5(4) with SciPy's step-size control (Hairer's first
    step, safety 0.9, factors 0.2..10, no growth right after a rejection), the 1 ms log grid
    filled from the dense output: (max |e| per joint, steps, evaluations)."""
    n = 6
    x, x_new, xs, f1 = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n)
    K = np.zeros((7, n))
    Q = np.zeros((n, 4))
    max_e = np.zeros(2)
    t, nfev, nsteps = 0.0, 0, 0
    _w1_rhs(t, x, ff, K[0])
    nfev += 1
    # the first step (Hairer's rule, RMS norms)
    d0, d1 = 0.0, 0.0
    for i in range(n):
        sc = atol + rtol * abs(x[i])
        d0 += (x[i] / sc) ** 2
        d1 += (K[0, i] / sc) ** 2
    d0, d1 = math.sqrt(d0 / n), math.sqrt(d1 / n)
    h0 = 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
    for i in range(n):
        xs[i] = x[i] + h0 * K[0, i]
    _w1_rhs(t + h0, xs, ff, f1)
    nfev += 1
    d2 = 0.0
    for i in range(n):
        d2 += ((f1[i] - K[0, i]) / (atol + rtol * abs(x[i]))) ** 2
    d2 = math.sqrt(d2 / n) / h0
    if d1 <= 1e-15 and d2 <= 1e-15:
        h1 = max(1e-6, h0 * 1e-3)
    else:
        h1 = (0.01 / max(d1, d2)) ** (1 / 5)
    h = min(100 * h0, h1, stop)
    n_log = int(round(stop / log_h)) + 1
    k_log = 0
    _w1_log_error(0.0, x, max_e)
    k_log = 1
    while t < stop:
        rejected = False
        while True:
            t_new = min(t + h, stop)
            hh = t_new - t
            for s in range(1, 6):
                for i in range(n):
                    acc = 0.0
                    for j in range(s):
                        acc += _DP_A[s, j] * K[j, i]
                    xs[i] = x[i] + hh * acc
                _w1_rhs(t + _DP_C[s] * hh, xs, ff, K[s])
            for i in range(n):
                acc = 0.0
                for j in range(6):
                    acc += _DP_B[j] * K[j, i]
                x_new[i] = x[i] + hh * acc
            _w1_rhs(t_new, x_new, ff, K[6])
            nfev += 6
            err = 0.0
            for i in range(n):
                acc = 0.0
                for j in range(7):
                    acc += _DP_E[j] * K[j, i]
                err += (hh * acc / (atol + rtol * max(abs(x[i]), abs(x_new[i])))) ** 2
            err = math.sqrt(err / n)
            if err < 1.0:
                factor = 10.0 if err == 0.0 else min(10.0, 0.9 * err ** -0.2)
                if rejected:
                    factor = min(1.0, factor)
                h = hh * factor
                break
            h = hh * max(0.2, 0.9 * err ** -0.2)
            rejected = True
        # the log samples inside the step, from the dense output
        while k_log < n_log and k_log * log_h <= t_new:
            tl = k_log * log_h
            theta = (tl - t) / hh
            for i in range(n):
                for j in range(4):
                    acc = 0.0
                    for r in range(7):
                        acc += K[r, i] * _DP_P[r, j]
                    Q[i, j] = acc
                xs[i] = x[i] + hh * (Q[i, 0] * theta + Q[i, 1] * theta ** 2
                                     + Q[i, 2] * theta ** 3 + Q[i, 3] * theta ** 4)
            _w1_log_error(tl, xs, max_e)
            k_log += 1
        t = t_new
        for i in range(n):
            x[i] = x_new[i]
            K[0, i] = K[6, i]
        nsteps += 1
    return max_e, nsteps, nfev


@njit(cache=True)
def _w1_exact_rhs(t, x, modes, out):
    """W1's rates (pid_ff) with the plant's Coulomb friction exact: Fc sign(qd) + Fv qd, the sign
    held at each joint's mode (+-1) between events; a joint with mode 0 slips with the live
    sign of qd, and at rest (qd = 0 exactly) sticks while the torque that holds it (the other
    joint moving) is within Fc, else breaks away with Fc opposing that torque."""
    s, c = math.sin(math.pi * t), math.cos(math.pi * t)
    pi2 = math.pi ** 2
    qd0, qd1_ = A[0] * (1 - c), A[1] * (1 - c)
    vd0, vd1 = A[0] * math.pi * s, A[1] * math.pi * s
    ad0, ad1 = A[0] * pi2 * c, A[1] * pi2 * c
    e0, e1 = qd0 - x[0], qd1_ - x[1]
    t0 = KP[0] * e0 + KI[0] * x[4] + KD[0] * (vd0 - x[2])
    t1 = KP[1] * e1 + KI[1] * x[5] + KD[1] * (vd1 - x[3])
    m11, m12, m22, c1, c2, g1, g2 = _p2(qd0, qd1_, vd0, vd1)
    t0 += m11 * ad0 + m12 * ad1 + c1 + g1
    t1 += m12 * ad0 + m22 * ad1 + c2 + g2
    m11, m12, m22, c1, c2, g1, g2 = _p2(x[0], x[1], x[2], x[3])
    r1 = t0 - c1 - g1 - FV[0] * x[2]          # the torques before Coulomb friction
    r2 = t1 - c2 - g2 - FV[1] * x[3]
    stuck1 = modes[0] == 0.0 and x[2] == 0.0
    stuck2 = modes[1] == 0.0 and x[3] == 0.0
    f1 = FC[0] * (modes[0] if modes[0] != 0.0 else (1.0 if x[2] > 0 else -1.0))
    f2 = FC[1] * (modes[1] if modes[1] != 0.0 else (1.0 if x[3] > 0 else -1.0))
    a1 = a2 = 0.0
    if stuck1 and stuck2:                      # both held: each breaks away on its own torque
        stuck1, stuck2 = abs(r1) <= FC[0], abs(r2) <= FC[1]
        f1 = FC[0] * (1.0 if r1 > 0 else -1.0)
        f2 = FC[1] * (1.0 if r2 > 0 else -1.0)
    if stuck1 and not stuck2:                  # joint 1 held, joint 2 moving
        a2 = (r2 - f2) / m22
        hold = r1 - m12 * a2
        if abs(hold) <= FC[0]:
            a1 = 0.0
        else:
            stuck1 = False
            f1 = FC[0] * (1.0 if hold > 0 else -1.0)
    elif stuck2 and not stuck1:
        a1 = (r1 - f1) / m11
        hold = r2 - m12 * a1
        if abs(hold) <= FC[1]:
            a2 = 0.0
        else:
            stuck2 = False
            f2 = FC[1] * (1.0 if hold > 0 else -1.0)
    if not stuck1 and not stuck2:
        det = m11 * m22 - m12 * m12
        a1 = (m22 * (r1 - f1) - m12 * (r2 - f2)) / det
        a2 = (m11 * (r2 - f2) - m12 * (r1 - f1)) / det
    out[0], out[1] = x[2], x[3]
    out[2], out[3] = a1, a2
    out[4], out[5] = e0, e1


@njit(cache=True)
def _dp_dense(x, K, hh, theta, Q, out):
    """Shampine's dense output of a Dormand-Prince step at theta in [0, 1] (Q: its (n, 4)
    coefficients from the step's stages, computed once per step)."""
    for i in range(x.shape[0]):
        out[i] = x[i] + hh * theta * (Q[i, 0] + theta * (Q[i, 1] + theta * (Q[i, 2]
                                                                          + theta * Q[i, 3])))


@njit(cache=True)
def w1_coulomb_dopri5_numba(stop=2.0, rtol=1e-6, atol=1e-8, log_h=1e-3, max_step=0.04,
                            xtol=1e-12):
    """W1 (pid_ff) with exact Coulomb friction in numba under Dormand-Prince 5(4) with SciPy's
    step-size control and steps of at most max_step (s): each joint speed's zero crossing located
    on the step's dense output by the Illinois method to xtol (s, relative to max(1, t)); at the
    event qd = 0 and the joint's held sign is dropped (mode 0: it sticks or breaks away), then set
    to the sign it leaves with; the solver restarts there (f evaluated anew, the step size
    kept). The 1 ms log grid is filled from the dense output. Returns (max |e| per joint,
    steps, evaluations, events, the first event's time)."""
    n = 6
    x, x_new, xs, f1 = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n)
    K = np.zeros((7, n))
    Q = np.zeros((n, 4))
    modes = np.zeros(2)
    max_e = np.zeros(2)
    t, nfev, nsteps, events, first_event = 0.0, 0, 0, 0, -1.0
    _w1_exact_rhs(t, x, modes, K[0])
    nfev += 1
    for i in range(2):                         # the sign each joint leaves rest with
        modes[i] = 1.0 if K[0, 2 + i] > 0 else (-1.0 if K[0, 2 + i] < 0 else 0.0)
    _w1_exact_rhs(t, x, modes, K[0])
    nfev += 1
    d0, d1 = 0.0, 0.0
    for i in range(n):
        sc = atol + rtol * abs(x[i])
        d0 += (x[i] / sc) ** 2
        d1 += (K[0, i] / sc) ** 2
    d0, d1 = math.sqrt(d0 / n), math.sqrt(d1 / n)
    h0 = 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
    for i in range(n):
        xs[i] = x[i] + h0 * K[0, i]
    _w1_exact_rhs(t + h0, xs, modes, f1)
    nfev += 1
    d2 = 0.0
    for i in range(n):
        d2 += ((f1[i] - K[0, i]) / (atol + rtol * abs(x[i]))) ** 2
    d2 = math.sqrt(d2 / n) / h0
    if d1 <= 1e-15 and d2 <= 1e-15:
        h1 = max(1e-6, h0 * 1e-3)
    else:
        h1 = (0.01 / max(d1, d2)) ** (1 / 5)
    h = min(100 * h0, h1, stop, max_step)
    n_log = int(round(stop / log_h)) + 1
    _w1_log_error(0.0, x, max_e)
    k_log = 1
    while t < stop:
        rejected = False
        while True:
            t_new = min(t + min(h, max_step), stop)
            hh = t_new - t
            for s in range(1, 6):
                for i in range(n):
                    acc = 0.0
                    for j in range(s):
                        acc += _DP_A[s, j] * K[j, i]
                    xs[i] = x[i] + hh * acc
                _w1_exact_rhs(t + _DP_C[s] * hh, xs, modes, K[s])
            for i in range(n):
                acc = 0.0
                for j in range(6):
                    acc += _DP_B[j] * K[j, i]
                x_new[i] = x[i] + hh * acc
            _w1_exact_rhs(t_new, x_new, modes, K[6])
            nfev += 6
            err = 0.0
            for i in range(n):
                acc = 0.0
                for j in range(7):
                    acc += _DP_E[j] * K[j, i]
                err += (hh * acc / (atol + rtol * max(abs(x[i]), abs(x_new[i])))) ** 2
            err = math.sqrt(err / n)
            if err < 1.0:
                factor = 10.0 if err == 0.0 else min(10.0, 0.9 * err ** -0.2)
                if rejected:
                    factor = min(1.0, factor)
                h = hh * factor
                break
            h = hh * max(0.2, 0.9 * err ** -0.2)
            rejected = True
        for i in range(n):
            for j in range(4):
                acc = 0.0
                for r in range(7):
                    acc += K[r, i] * _DP_P[r, j]
                Q[i, j] = acc
        # a joint speed through zero against its held sign: the earliest, located
        t_end, joint = t_new, -1
        for i in range(2):
            g0, g1 = x[2 + i] * modes[i], x_new[2 + i] * modes[i]
            if not (g0 > 0 and g1 <= 0):
                continue
            lo, hi, f_lo, f_hi, side = 0.0, 1.0, g0, g1, 0
            tol = xtol * max(1.0, t_new) / hh
            while hi - lo > tol:
                theta = hi - f_hi * (hi - lo) / (f_hi - f_lo)
                theta = min(max(theta, lo + 0.25 * tol), hi - 0.25 * tol)
                _dp_dense(x, K, hh, theta, Q, xs)
                gm = xs[2 + i] * modes[i]
                if gm <= 0:
                    hi, f_hi = theta, gm
                    if side == 1:
                        f_lo *= 0.5
                    side = 1
                else:
                    lo, f_lo = theta, gm
                    if side == -1:
                        f_hi *= 0.5
                    side = -1
            if t + hi * hh < t_end:
                t_end, joint = t + hi * hh, i
        while k_log < n_log and (k_log * log_h < t_end or (joint < 0 and k_log * log_h == t_end)):
            tl = k_log * log_h
            _dp_dense(x, K, hh, (tl - t) / hh, Q, xs)
            _w1_log_error(tl, xs, max_e)
            k_log += 1
        nsteps += 1
        if joint < 0:
            t = t_new
            for i in range(n):
                x[i] = x_new[i]
                K[0, i] = K[6, i]
            continue
        # the event: qd = 0, the joint at rest (mode 0) decides, then holds the sign it leaves with
        _dp_dense(x, K, hh, (t_end - t) / hh, Q, xs)
        t = t_end
        for i in range(n):
            x[i] = xs[i]
        x[2 + joint] = 0.0
        modes[joint] = 0.0
        _w1_exact_rhs(t, x, modes, f1)
        modes[joint] = 1.0 if f1[2 + joint] > 0 else (-1.0 if f1[2 + joint] < 0 else 0.0)
        _w1_exact_rhs(t, x, modes, K[0])
        nfev += 2
        events += 1
        if first_event < 0:
            first_event = t
    return max_e, nsteps, nfev, events, first_event


@njit(cache=True)
def _w2_rhs(x, v, out):
    """States q1 q2 qd1 qd2 iq1 iq2; v the held motor voltages (V)."""
    m11, m12, m22, c1, c2, g1, g2 = _p2(x[0], x[1], x[2], x[3])
    rot = N_GEAR ** 2 * JM
    m11 += rot
    m22 += rot
    r1 = N_GEAR * KT * x[4] - c1 - g1 - FV[0] * x[2] - FC[0] * math.tanh(x[2] / EPS)
    r2 = N_GEAR * KT * x[5] - c2 - g2 - FV[1] * x[3] - FC[1] * math.tanh(x[3] / EPS)
    det = m11 * m22 - m12 * m12
    out[0], out[1] = x[2], x[3]
    out[2], out[3] = (m22 * r1 - m12 * r2) / det, (m11 * r2 - m12 * r1) / det
    out[4] = (v[0] - R_M * x[4] - KE * N_GEAR * x[2]) / L_M
    out[5] = (v[1] - R_M * x[5] - KE * N_GEAR * x[3]) / L_M


@njit(cache=True)
def w2_numba(stop=2.0, h=1e-4):
    """W2 in numba (1 kHz PID + feedforward, 10 kHz current PI, RK4 at 0.1 ms): max |e| per joint
    over the 1 ms grid, in the W2 diagram's order: controller at its 1 kHz hit, current PI,
    log sample, RK4 step."""
    x = np.zeros(6)
    z = np.zeros(2)
    zi = np.zeros(2)
    iq_ref = np.zeros(2)
    v = np.zeros(2)
    k1, k2, k3, k4, xs = np.zeros(6), np.zeros(6), np.zeros(6), np.zeros(6), np.zeros(6)
    steps = int(round(stop / h))
    ts = 10 * h
    max_e = np.zeros(2)
    pi2 = math.pi ** 2
    for k in range(steps + 1):
        t = k * h
        s, c = math.sin(math.pi * t), math.cos(math.pi * t)
        if k % 10 == 0:
            qd0, qd1_ = A[0] * (1 - c), A[1] * (1 - c)
            vd0, vd1 = A[0] * math.pi * s, A[1] * math.pi * s
            ad0, ad1 = A[0] * pi2 * c, A[1] * pi2 * c
            e0, e1 = qd0 - x[0], qd1_ - x[1]
            m11, m12, m22, c1, c2, g1, g2 = _p2(qd0, qd1_, vd0, vd1)
            tau0 = KP[0] * e0 + KI[0] * z[0] + KD[0] * (vd0 - x[2]) + m11 * ad0 + m12 * ad1 + c1 + g1
            tau1 = KP[1] * e1 + KI[1] * z[1] + KD[1] * (vd1 - x[3]) + m12 * ad0 + m22 * ad1 + c2 + g2
            z[0] += ts * e0
            z[1] += ts * e1
            iq_ref[0] = tau0 / (N_GEAR * KT)
            iq_ref[1] = tau1 / (N_GEAR * KT)
        for j in range(2):
            ei = iq_ref[j] - x[4 + j]
            u = KP_I * ei + KI_I * zi[j]
            v[j] = min(max(u, -V_MAX), V_MAX)
            if abs(u) <= V_MAX:
                zi[j] += h * ei
        if k % 10 == 0:
            for i in range(2):
                max_e[i] = max(max_e[i], abs(A[i] * (1 - c) - x[i]))
        if k == steps:
            break
        _w2_rhs(x, v, k1)
        for i in range(6):
            xs[i] = x[i] + h / 2 * k1[i]
        _w2_rhs(xs, v, k2)
        for i in range(6):
            xs[i] = x[i] + h / 2 * k2[i]
        _w2_rhs(xs, v, k3)
        for i in range(6):
            xs[i] = x[i] + h * k3[i]
        _w2_rhs(xs, v, k4)
        for i in range(6):
            x[i] += h / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i])
    return max_e


def w2_python(stop: float = 2.0, h: float = 1e-4):
    """W2 with plain Python floats (same order as w2_numba): max |e| per joint."""
    x = [0.0] * 6
    z, zi, iq_ref, v = [0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]
    rot = N_GEAR ** 2 * JM

    def f(x):
        m11, m12, m22, c1, c2, g1, g2 = dynamics_python(x[0], x[1], x[2], x[3])
        m11, m22 = m11 + rot, m22 + rot
        r1 = N_GEAR * KT * x[4] - c1 - g1 - FV[0] * x[2] - FC[0] * math.tanh(x[2] / EPS)
        r2 = N_GEAR * KT * x[5] - c2 - g2 - FV[1] * x[3] - FC[1] * math.tanh(x[3] / EPS)
        det = m11 * m22 - m12 * m12
        return [x[2], x[3], (m22 * r1 - m12 * r2) / det, (m11 * r2 - m12 * r1) / det,
                (v[0] - R_M * x[4] - KE * N_GEAR * x[2]) / L_M,
                (v[1] - R_M * x[5] - KE * N_GEAR * x[3]) / L_M]

    steps = int(round(stop / h))
    max_e = [0.0, 0.0]
    for k in range(steps + 1):
        t = k * h
        q_d, qd_d, qdd_d = reference_python(t)
        if k % 10 == 0:
            e = [q_d[i] - x[i] for i in range(2)]
            m11, m12, m22, c1, c2, g1, g2 = dynamics_python(q_d[0], q_d[1], qd_d[0], qd_d[1])
            ff = [m11 * qdd_d[0] + m12 * qdd_d[1] + c1 + g1, m12 * qdd_d[0] + m22 * qdd_d[1] + c2 + g2]
            for i in range(2):
                tau = KP[i] * e[i] + KI[i] * z[i] + KD[i] * (qd_d[i] - x[2 + i]) + ff[i]
                z[i] += 10 * h * e[i]
                iq_ref[i] = tau / (N_GEAR * KT)
        for j in range(2):
            ei = iq_ref[j] - x[4 + j]
            u = KP_I * ei + KI_I * zi[j]
            v[j] = min(max(u, -V_MAX), V_MAX)
            if abs(u) <= V_MAX:
                zi[j] += h * ei
        if k % 10 == 0:
            max_e = [max(max_e[i], abs(q_d[i] - x[i])) for i in range(2)]
        if k == steps:
            break
        k1 = f(x)
        k2 = f([x[i] + h / 2 * k1[i] for i in range(6)])
        k3 = f([x[i] + h / 2 * k2[i] for i in range(6)])
        k4 = f([x[i] + h * k3[i] for i in range(6)])
        x = [x[i] + h / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]) for i in range(6)]
    return max_e


# ---- W3: Puma 560 under computed torque (blocksim's rigid-body kernels, as one would call Pinocchio)
W3_AMPLITUDE = np.array([0.5, 0.4, -0.3, 0.6, 0.4, 0.5])   # rad: q_d = A (1 - cos(pi t))
W3_KP, W3_KD = 100.0, 20.0                                  # 1/s^2, 1/s


@njit(cache=True)
def _w3_rhs(t, x, arrays, ws, gravity, nofext, q, qd, qdd, tau, out, n):
    jt, xt, inertia, arm, tool = arrays
    s, c = math.sin(math.pi * t), math.cos(math.pi * t)
    for i in range(n):
        q[0, i] = x[i]
        qd[0, i] = x[n + i]
        a = W3_AMPLITUDE[i]
        qdd[0, i] = (a * math.pi ** 2 * c + W3_KD * (a * math.pi * s - x[n + i])
                     + W3_KP * (a * (1 - c) - x[i]))
    rnea_into(jt, xt, inertia, arm, tool, q, qd, qdd, gravity, nofext, tau, ws)
    aba_into(jt, xt, inertia, arm, tool, q, qd, tau, gravity, nofext, qdd, ws)
    for i in range(n):
        out[i] = x[n + i]
        out[n + i] = qdd[0, i]


@njit(cache=True)
def w3_numba(arrays, ws, gravity, nofext, stop=2.0, h=1e-3):
    """W3: computed torque (exact model: tau = rnea(q, qd, qdd_d + Kd ed + Kp e)) on the Puma 560
    plant by ABA, RK4 at h; max |e| per joint over the 1 ms grid."""
    n = 6
    x = np.zeros(2 * n)
    k1, k2, k3, k4, xs = (np.zeros(2 * n), np.zeros(2 * n), np.zeros(2 * n), np.zeros(2 * n),
                          np.zeros(2 * n))
    q, qd, qdd, tau = np.zeros((1, n)), np.zeros((1, n)), np.zeros((1, n)), np.zeros((1, n))
    steps = int(round(stop / h))
    max_e = np.zeros(n)
    for k in range(steps + 1):
        t = k * h
        c = math.cos(math.pi * t)
        for i in range(n):
            max_e[i] = max(max_e[i], abs(W3_AMPLITUDE[i] * (1 - c) - x[i]))
        if k == steps:
            break
        _w3_rhs(t, x, arrays, ws, gravity, nofext, q, qd, qdd, tau, k1, n)
        for i in range(2 * n):
            xs[i] = x[i] + h / 2 * k1[i]
        _w3_rhs(t + h / 2, xs, arrays, ws, gravity, nofext, q, qd, qdd, tau, k2, n)
        for i in range(2 * n):
            xs[i] = x[i] + h / 2 * k2[i]
        _w3_rhs(t + h / 2, xs, arrays, ws, gravity, nofext, q, qd, qdd, tau, k3, n)
        for i in range(2 * n):
            xs[i] = x[i] + h * k3[i]
        _w3_rhs(t + h, xs, arrays, ws, gravity, nofext, q, qd, qdd, tau, k4, n)
        for i in range(2 * n):
            x[i] += h / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i])
    return max_e


def w3_reference():
    """Run w3_numba on the shipped puma560 preset."""
    from blocksim.models import RobotModel
    from blocksim.models.rigid_body_kernels import NO_FEXT
    model = RobotModel.preset("puma560")
    return w3_numba(tuple(model.arrays), model.workspace(), np.asarray(model.gravity, float),
                    NO_FEXT)


if __name__ == "__main__":
    print("W1 python pid   ", w1_python(False))
    print("W1 python pid_ff", w1_python(True))
    print("W1 numba  pid   ", w1_numba(False))
    print("W1 numba  pid_ff", w1_numba(True))
    print("W1 numba  pid_ff dopri5 (max |e|, steps, evaluations)", w1_dopri5_numba(True))
    print("W1 numba  pid_ff dopri5, exact Coulomb friction (max |e|, steps, evaluations, events, "
          "first event)", w1_coulomb_dopri5_numba())
    print("W2 numba        ", w2_numba())
    print("W2 python       ", w2_python())
    print("W3 numba        ", w3_reference())
