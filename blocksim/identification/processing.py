"""From a logged run to regressor data: measurement corruption for simulated runs (encoder
quantisation, current noise, torque-constant error), then the off-line processing: averaging over
periods, a zero-phase low-pass of q and central differences for qd and qdd, and the parallel
filtering and decimation of the measured torque and of the regressor (Gautier, "Dynamic
identification of robots with power model", ICRA 1997; Gautier & Poignet, Control Engineering
Practice 9, 2001): one zero-phase low-pass for both, so what the filter does to the torque (a
Coulomb step smeared over its impulse response) it does to the model too."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.signal

from ..errors import ParameterError
from .datalog import read_log


@dataclass(frozen=True)
class Measurement:
    """A joint log on a uniform time grid: t (N,) s, q (N, n) rad, tau (N, n) N m."""

    t: np.ndarray
    q: np.ndarray
    tau: np.ndarray

    @property
    def dt(self) -> float:
        return float(self.t[1] - self.t[0])

    @classmethod
    def load(cls, path, joints: int | None = None, display: str | None = None) -> "Measurement":
        """A log of a real arm: NPZ with keys t (N,), q (N, n), tau (N, n) (read without pickles);
        or CSV with a header row t, then q columns (names starting with q), then tau columns
        (names starting with tau). Checked by `datalog.read_log` (finite numbers, `joints`
        columns when given, uniform time steps, enough samples): a DataLogError names the file
        and the key, or the line and column."""
        t, q, tau = read_log(path, joints, display)
        return cls(t, q, tau)


class ProcessingError(ParameterError):
    """A processing option that does not fit the log (a period that is no whole number of samples,
    a log shorter than the periods asked for, a cutoff above Nyquist, a trim longer than the log);
    `key` names the option (period, skip_periods, cutoff, trim, order)."""

    def __init__(self, message: str, *, key: str, **kw):
        self.key = key
        super().__init__(message, **kw)


def corrupt(m: Measurement, *, encoder_counts=None, kt=1.0, kt_error=0.0, current_noise=0.0,
            seed=0) -> Measurement:
    """What a drive reports of a simulated run (done here, on the logged exact signals, with a seeded
    numpy Generator, so the plant simulation itself stays deterministic and compiled):

    - q: rounded to whole encoder counts, resolution 2 pi / encoder_counts (counts per joint
      revolution after gearing and quadrature; None: exact);
    - tau: the drive reads the motor current i = tau / kt (A; kt the true torque constant, N m/A
      referred to the joint) plus white noise of std `current_noise` (A) and converts it back with
      the datasheet constant kt (1 + kt_error): tau_meas = (tau + kt n)(1 + kt_error).
    All per-joint arguments are scalars or (n,) vectors.
    """
    rng = np.random.default_rng(seed)
    n = m.q.shape[1]
    q = m.q
    if encoder_counts is not None:
        res = 2 * np.pi / np.broadcast_to(np.asarray(encoder_counts, float), (n,))
        q = np.floor(q / res + 0.5) * res
    kt = np.broadcast_to(np.asarray(kt, float), (n,))
    current = m.tau / kt + np.broadcast_to(np.asarray(current_noise, float), (n,)) * \
        rng.standard_normal(m.tau.shape)
    tau = current * kt * (1.0 + np.broadcast_to(np.asarray(kt_error, float), (n,)))
    return Measurement(m.t.copy(), q, tau)


@dataclass(frozen=True)
class ProcessedData:
    """A processed log, ready for the regressor (Gautier's parallel filtering).

    At the kept (decimated) samples: t (N,) s; q, qd, qdd (N, n) rad, rad/s, rad/s^2, the
    states; tau (N, n) N m, the measured torque through the parallel filter. q_resolution (n,) rad is
    the encoder's step found in the raw q (`encoder_resolution`; None when q is on no grid).
    tau_std (n,) N m is
    the standard deviation of one averaged, unfiltered torque sample from the spread between
    periods (None without period averaging); periods the number averaged.

    The regressor is not built from the kept states alone: `parallel(x)` takes any quantity
    computed sample by sample on the full-rate `states` (the regressor Y(q, qd, qdd), a predicted
    torque Y theta) through the very filter and decimation the measured torque went through, so
    measured and modelled torque are compared like with like.
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray
    tau_std: np.ndarray | None
    periods: int
    states: tuple = field(repr=False, default=())
    keep: np.ndarray | None = field(repr=False, default=None)
    dt: float = 0.0
    cutoff: float | None = None
    order: int = 4
    periodic: bool = False
    state_cutoff: float | None = None
    q_resolution: np.ndarray | None = None

    def states_of(self, dq) -> tuple:
        """The states (q, qd, qdd) a position error dq (N_full, n) rad on the averaged record adds
        to `states`: through the same low-pass and differences (all linear)."""
        return _states(np.asarray(dq, float), self.dt, self.state_cutoff, self.order, self.periodic)

    def parallel(self, x) -> np.ndarray:
        """x (N_full, ...) sample by sample on `states`, low-pass filtered as the measured torque
        (zero phase, `cutoff` Hz, `order`) and decimated to the kept samples: (N, ...)."""
        x = np.asarray(x, dtype=float)
        flat = x.reshape(x.shape[0], -1)
        out = np.empty((len(self.keep), flat.shape[1]))
        for k in range(0, flat.shape[1], _CHUNK):       # bounded memory for a long log's regressor
            out[:, k:k + _CHUNK] = _lowpass(flat[:, k:k + _CHUNK], self.dt, self.cutoff, self.order,
                                            self.periodic)[self.keep]
        return out.reshape((len(self.keep),) + x.shape[1:])

    def noise_gain(self) -> float:
        """The factor by which the parallel filter scales the standard deviation of white noise on
        one full-rate sample (sqrt of the sum of its squared impulse response; 1 without filter)."""
        if self.cutoff is None:
            return 1.0
        N = self.states[0].shape[0]
        impulse = np.zeros((N, 1))
        impulse[N // 2] = 1.0
        return float(np.sqrt(np.sum(_lowpass(impulse, self.dt, self.cutoff, self.order,
                                             self.periodic) ** 2)))

    def noise_correlation(self) -> float:
        """The factor by which white full-rate noise, once through the parallel filter and the
        decimation, inflates the variance of a least-squares estimate over what the same number
        of independent samples would give: sum over lags k of rho(k d), rho the filtered noise's
        autocorrelation (the impulse response correlated with itself) and d the decimation step.
        1 without filter; about the kept rate over twice the cutoff when the filter is narrow.
        Exact for a regressor that changes slowly over the filter's memory."""
        if self.cutoff is None:
            return 1.0
        N = self.states[0].shape[0]
        impulse = np.zeros((N, 1))
        impulse[N // 2] = 1.0
        h = _lowpass(impulse, self.dt, self.cutoff, self.order, self.periodic)[:, 0]
        r = scipy.signal.fftconvolve(h, h[::-1])            # r[N - 1] is lag 0
        d = int(self.keep[1] - self.keep[0]) if len(self.keep) > 1 else 1
        lags = np.arange(-((N - 1) // d), (N - 1) // d + 1) * d
        return float(max(1.0, np.sum(r[N - 1 + lags]) / r[N - 1]))


_CHUNK = 64
STATE_CUTOFF = 10.0
"""The default cutoff of q's low-pass before the differences, as a multiple of the parallel
filter's cutoff. On the independent simulator's two-link log (1 kHz, 2^18 counts) the true
model's validation error at a 5 Hz cutoff was 2.6, 1.1, 1.0 and 1.5 x the noise floor on joint
2 for 20, 40, 80 and 400 Hz: too low a cutoff smooths the arm's turns out of the states, too
high lets the encoder steps into qdd."""


def _lowpass(x, dt, cutoff, order, periodic, key="cutoff"):
    """Zero-phase Butterworth low-pass (filtfilt) along axis 0; a periodic signal is filtered as
    three copies back to back and the middle one kept, so the ends see no start-up transient."""
    if cutoff is None:
        return x
    wn = cutoff * 2 * dt
    if not 0 < wn < 1:
        raise ProcessingError(f"filter cutoff {cutoff} Hz must lie below the Nyquist frequency "
                              f"{0.5 / dt:g} Hz of the log", key=key)
    b, a = scipy.signal.butter(order, wn)
    pad = 3 * max(len(a), len(b))
    if x.shape[0] * (3 if periodic else 1) <= pad:
        raise ProcessingError(f"{x.shape[0]} samples to filter; the order-{order} zero-phase filter "
                              f"needs more than {pad}", key="order")
    if periodic:
        N = x.shape[0]
        return scipy.signal.filtfilt(b, a, np.concatenate([x, x, x]), axis=0)[N:2 * N]
    return scipy.signal.filtfilt(b, a, x, axis=0)


def _central(x, dt, periodic):
    """Central difference along axis 0 (wrapping round for a periodic signal, one-sided at the
    ends otherwise)."""
    if periodic:
        return (np.roll(x, -1, axis=0) - np.roll(x, 1, axis=0)) / (2 * dt)
    return np.gradient(x, dt, axis=0)


def encoder_resolution(q) -> np.ndarray | None:
    """Per joint, the encoder step (rad) of a logged q (N, n): the smallest non-zero change between
    samples, when every change is a whole number of it (a quantised encoder); None when some
    joint's q is on no such grid (exact, already filtered, or printed with too few digits). A
    joint that never moves by a single count reads as its smallest move (an upper bound of the
    step); one that stays still reads 0 (its quantisation puts no error into qd, qdd)."""
    steps = []
    for d in np.abs(np.diff(np.asarray(q, float), axis=0)).T:
        d = d[d > 0]
        if d.size == 0:
            steps.append(0.0)
            continue
        r = d.min()
        if np.max(np.abs(d / r - np.round(d / r))) > 1e-3:
            return None
        steps.append(r)
    return np.array(steps)


def _states(q, dt, state_cutoff, order, periodic):
    """q through the state low-pass, its central differences qd and qdd: (q, qd, qdd) full rate."""
    qf = _lowpass(q, dt, state_cutoff, order, periodic, key="state_cutoff")
    qd = _central(qf, dt, periodic)
    qdd = _central(qd, dt, periodic) if periodic else np.gradient(qd, dt, axis=0)
    return qf, qd, qdd


def process(m: Measurement, *, period: float | None = None, skip_periods: int = 1,
            cutoff: float | None = 10.0, order: int = 4, decimate: int = 1,
            trim: float = 0.0, state_cutoff: float | None = None) -> ProcessedData:
    """Off-line processing of an excitation log (Gautier's parallel filtering and decimation).

    period (s): when given, the first `skip_periods` periods (transients of the tracking loop) are
    dropped, the rest cut into whole periods and averaged sample by sample (noise falls as
    1/sqrt(periods)); the spread between periods gives tau_std per joint. The states: q through a
    zero-phase Butterworth low-pass of `order` at `state_cutoff` Hz (default STATE_CUTOFF x
    cutoff, at most 0.8 x Nyquist, never below the cutoff: well above the arm's motion, so the
    states keep the quick turns the torque also shows, low enough that the differences do not
    amplify the encoder steps), qd and
    qdd its central differences, all at the full rate. The torque is not filtered with them:
    the measured torque and, through `ProcessedData.parallel`, every column of the regressor built
    on the full-rate states go through the same zero-phase low-pass at `cutoff` Hz, then every
    `decimate`-th sample is kept (the low-pass is the anti-alias filter). Filtering the regressor,
    not only q, is what keeps a Coulomb step smeared by the filter in the torque matched by the
    same smeared step in its column, whatever the cutoff. A log without a period is filtered as
    one record and `trim` s are dropped at both ends, where filtfilt and the differences are least
    accurate.
    """
    dt = m.dt
    q, tau = m.q, m.tau
    tau_std = None
    periods = 0
    t0 = m.t[0]
    if period is not None:
        per = period / dt
        N = int(round(per))
        if abs(per - N) > 1e-6 * max(1.0, per) or N < 2:
            raise ProcessingError(f"the period {period} s is not a whole number of samples "
                                  f"({dt:g} s) of at least 2", key="period")
        start = skip_periods * N
        periods = (q.shape[0] - start) // N
        if periods < 1:
            raise ProcessingError(f"the log holds {q.shape[0] * dt:g} s, fewer than {skip_periods} + 1 "
                                  f"periods of {period} s",
                                  key="skip_periods" if q.shape[0] >= N else "period")
        qp = q[start:start + periods * N].reshape(periods, N, -1)
        tp = tau[start:start + periods * N].reshape(periods, N, -1)
        q, tau = qp.mean(axis=0), tp.mean(axis=0)
        if periods > 1:
            tau_std = np.sqrt(np.mean(tp.var(axis=0, ddof=1), axis=0) / periods)
        t0 = m.t[start]
    periodic = period is not None
    if state_cutoff is None and cutoff is not None:
        state_cutoff = max(cutoff, min(STATE_CUTOFF * cutoff, 0.8 * 0.5 / dt))
    tf = _lowpass(tau, dt, cutoff, order, periodic)
    qf, qd, qdd = _states(q, dt, state_cutoff, order, periodic)
    t = t0 + dt * np.arange(qf.shape[0])
    keep = np.ones(qf.shape[0], dtype=bool)
    if not periodic and trim > 0:
        k = int(round(trim / dt))
        if 2 * k >= qf.shape[0]:
            raise ProcessingError(f"trim {trim} s at both ends leaves nothing of the "
                                  f"{qf.shape[0] * dt:g} s log", key="trim")
        if k > 0:                     # keep[-0:] would be the whole record
            keep[:k] = keep[-k:] = False
    idx = np.nonzero(keep)[0][::max(1, int(decimate))]
    return ProcessedData(t[idx], qf[idx], qd[idx], qdd[idx], tf[idx], tau_std, periods,
                         states=(qf, qd, qdd), keep=idx, dt=dt, cutoff=cutoff, order=order,
                         periodic=periodic, state_cutoff=state_cutoff,
                         q_resolution=encoder_resolution(m.q))
