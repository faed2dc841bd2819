"""An independent reference for the five-bar linkage of examples/five_bar.yaml: the mechanism in
minimal coordinates z = (th1, th2), written from scratch with numpy (no blocksim code): the
passive joints from the closure in closed form (the tool at the lower intersection of the two
distal links' circles), qd = R(q) zd with R the null-space basis of Jc, the reduced dynamics
R^T M R zdd = R^T (B tau - h - M s), and lambda from the full equation Jc^T lambda = M qdd + h
- B tau. Integrated by scipy's DOP853. Conventions as the preset: base pivots A1 = (0, 0),
A2 = (0.2, 0) m, q = (th1, ph1, th2, ph2), th absolute, ph relative, gravity -y."""
from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp

L1, L2, M1, M2 = 0.20, 0.25, 0.50, 0.40
G = 9.81
DAMPING = 0.02
BASES = (np.array([0.0, 0.0]), np.array([0.2, 0.0]))


def torque(t):
    """(tau1, tau2) N m of the reference scenario."""
    return np.array([0.2 * np.sin(2 * np.pi * t), -0.15 * np.sin(3 * np.pi * t)])


def branch_terms(th, ph, thd, phd, m1=M1, m2=M2):
    """M (2, 2) and c + g (2,) of one branch: two uniform rods, joint angles th (absolute), ph
    (relative), the classic planar 2R expressions."""
    lc1, lc2 = L1 / 2, L2 / 2
    I1, I2 = m1 * L1 ** 2 / 12, m2 * L2 ** 2 / 12
    c2 = np.cos(ph)
    s2 = np.sin(ph)
    M = np.array([[I1 + m1 * lc1 ** 2 + I2 + m2 * (L1 ** 2 + lc2 ** 2 + 2 * L1 * lc2 * c2),
                   I2 + m2 * (lc2 ** 2 + L1 * lc2 * c2)],
                  [I2 + m2 * (lc2 ** 2 + L1 * lc2 * c2), I2 + m2 * lc2 ** 2]])
    h = m2 * L1 * lc2 * s2
    cor = np.array([-h * (2 * thd * phd + phd ** 2), h * thd ** 2])
    grav = np.array([(m1 * lc1 + m2 * L1) * G * np.cos(th) + m2 * lc2 * G * np.cos(th + ph),
                     m2 * lc2 * G * np.cos(th + ph)])
    return M, cor + grav


def passive(th1, th2):
    """(ph1, ph2): the tool at the lower intersection of the circles of radius L2 about the
    elbows (elbows out, the tool below the base)."""
    e1 = BASES[0] + L1 * np.array([np.cos(th1), np.sin(th1)])
    e2 = BASES[1] + L1 * np.array([np.cos(th2), np.sin(th2)])
    d = e2 - e1
    dist = np.linalg.norm(d)
    mid = e1 + d / 2
    off = np.sqrt(L2 ** 2 - (dist / 2) ** 2)
    normal = np.array([d[1], -d[0]]) / dist          # to the right of e1 -> e2: downwards here
    p = mid + off * normal
    ph1 = np.arctan2(p[1] - e1[1], p[0] - e1[0]) - th1
    ph2 = np.arctan2(p[1] - e2[1], p[0] - e2[0]) - th2
    return np.angle(np.exp(1j * ph1)), np.angle(np.exp(1j * ph2))


def _jac(th, ph):
    s1, c1, s12, c12 = np.sin(th), np.cos(th), np.sin(th + ph), np.cos(th + ph)
    return np.array([[-L1 * s1 - L2 * s12, -L2 * s12], [L1 * c1 + L2 * c12, L2 * c12]])


def _jdot_qd(th, ph, thd, phd):
    w = thd + phd
    return np.array([-L1 * np.cos(th) * thd ** 2 - L2 * np.cos(th + ph) * w ** 2,
                     -L1 * np.sin(th) * thd ** 2 - L2 * np.sin(th + ph) * w ** 2])


def full_state(z, zd):
    """q, qd (4,) in the order th1, ph1, th2, ph2 from z = (th1, th2) and zd."""
    ph1, ph2 = passive(*z)
    q = np.array([z[0], ph1, z[1], ph2])
    Jc = np.hstack([_jac(q[0], q[1]), -_jac(q[2], q[3])])
    act, pas = [0, 2], [1, 3]
    qd = np.zeros(4)
    qd[act] = zd
    qd[pas] = np.linalg.solve(Jc[:, pas], -Jc[:, act] @ zd)
    return q, qd, Jc


def dynamics(t, z, zd, masses=(M1, M2, M1, M2)):
    """(zdd, q, qd, qdd, lambda) at time t."""
    q, qd, Jc = full_state(z, zd)
    act, pas = [0, 2], [1, 3]
    Ma, ha = branch_terms(q[0], q[1], qd[0], qd[1], masses[0], masses[1])
    Mb, hb = branch_terms(q[2], q[3], qd[2], qd[3], masses[2], masses[3])
    M = np.zeros((4, 4))
    M[:2, :2], M[2:, 2:] = Ma, Mb
    h = np.concatenate([ha, hb]) + DAMPING * qd
    Btau = np.zeros(4)
    Btau[act] = torque(t)
    gam = _jdot_qd(q[0], q[1], qd[0], qd[1]) - _jdot_qd(q[2], q[3], qd[2], qd[3])
    R = np.zeros((4, 2))
    R[act, :] = np.eye(2)
    R[pas, :] = -np.linalg.solve(Jc[:, pas], Jc[:, act])
    s = np.zeros(4)
    s[pas] = -np.linalg.solve(Jc[:, pas], gam)
    zdd = np.linalg.solve(R.T @ M @ R, R.T @ (Btau - h - M @ s))
    qdd = R @ zdd + s
    lam = np.linalg.lstsq(Jc.T, M @ qdd + h - Btau, rcond=None)[0]
    return zdd, q, qd, qdd, lam


def simulate(times, q0=(np.radians(-95.0), np.radians(-85.0)), masses=(M1, M2, M1, M2),
             tol=1e-13):
    """q (len(times), 4) and lambda (len(times), 2) from rest at th = q0, DOP853 at rtol = atol
    = tol."""
    def rhs(t, x):
        return np.concatenate([x[2:], dynamics(t, x[:2], x[2:], masses)[0]])

    sol = solve_ivp(rhs, (times[0], times[-1]), np.array([*q0, 0.0, 0.0]), method="DOP853",
                    rtol=tol, atol=tol, t_eval=times)
    out_q, out_lam = [], []
    for k, t in enumerate(sol.t):
        _, q, _, _, lam = dynamics(t, sol.y[:2, k], sol.y[2:, k], masses)
        out_q.append(q)
        out_lam.append(lam)
    return np.array(out_q), np.array(out_lam)
