"""Sensor blocks: an encoder's angle quantisation, seeded measurement noise and an N-sample delay, the
imperfections between a joint and the controller that reads it."""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba import njit

from ..errors import ParameterError
from ._bases import OFFSET, PERIOD, JointBlock
from ._kernels import fill_rows, kernel_params, no_update, packed
from .base import Kernels, Param, register
from .sources import gaussian


@njit(cache=True)
def encoder_kernel(q, resolution, nearest, q_out, count):
    """count = floor(q / resolution) (or the nearest integer), q_out = count * resolution (rad)."""
    wq = q.shape[1]
    for b in range(q_out.shape[0]):
        for j in range(q_out.shape[1]):
            r = q[b, j if wq > 1 else 0] / resolution[b, j]
            n = math.floor(r + 0.5) if nearest else math.floor(r)
            count[b, j] = n
            q_out[b, j] = n * resolution[b, j]


EncoderParams = namedtuple("EncoderParams", "resolution nearest")
"""Encoder kernel's record: the resolution (B, n) rad per count; round to nearest (else floor)."""


@njit(cache=True, forceinline=True, _nrt=False)
def encoder_output(t, xc, xd, u, y, p):
    encoder_kernel(u[0], p.resolution, p.nearest, y[0], y[1])


@register
class Encoder(JointBlock):
    """Incremental encoder: the joint angle q (rad) quantised to whole counts.

    One joint revolution gives counts * gear counts (an encoder with `counts` lines per revolution,
    after quadrature decoding, on a motor shaft turning `gear` times faster than the joint), so the
    resolution is 2 pi / (counts gear) rad. `rounding: floor` is what a counter reads (a bias of half
    a count); `nearest` rounds to the closest count (halves up). Outputs q (rad) and count.
    The staircase declares no zero crossings: read it from a discrete controller.
    """

    type_name = "Encoder"
    summary = "angle quantised to counts per revolution (optionally on the motor side of a gear)"
    params = {
        "counts": Param(units="1/rev", doc="counts per revolution of the encoder's shaft (> 0)"),
        "gear": Param(1.0, "-", "revolutions of the encoder's shaft per joint revolution (> 0)"),
        "rounding": Param("floor", "-", "floor (a counter) or nearest", kind="str",
                          choices=("floor", "nearest")),
    }
    inputs = ("q",)
    outputs = ("q", "count")
    port_units = {"q": "rad", "count": "counts"}
    width_params = ("counts", "gear")

    def check_values(self, v):
        self.positive("counts", "gear", v=v)

    def configure(self, in_widths, out_widths):
        super().configure(in_widths, out_widths)
        self._nearest = self.p.rounding == "nearest"

    def record(self, v):
        rows = self.rows_of(v)
        resolution = 2.0 * math.pi / (rows["counts"] * rows["gear"])
        return kernel_params(EncoderParams, resolution=resolution, nearest=self._nearest)

    def kernels(self):
        return Kernels(output=encoder_output, update=no_update)


# MeasurementNoise's packed parameter columns
MN_MEAN, MN_STD = range(2)


@njit(cache=True)
def noisy_sample_kernel(seed, first, hit, u, P, y):
    """y[b, i] = u[b, i] + mean + std N(seed, first + b, i, k), k = hit[b, 0] (the WhiteNoise
    generator; first is the batch index of row 0); P (B, n, 2) holds the columns MN_MEAN, MN_STD."""
    wu = u.shape[1]
    for b in range(y.shape[0]):
        k = np.uint64(hit[b, 0])
        for i in range(y.shape[1]):
            y[b, i] = (u[b, i if wu > 1 else 0] + P[b, i, MN_MEAN]
                       + P[b, i, MN_STD] * gaussian(seed, first + b, i, k))


MeasurementNoiseParams = namedtuple("MeasurementNoiseParams", "packed seed first")
"""MeasurementNoise kernels' record: mean and std packed (B, n, 2) (columns MN_*), the seed
(uint64), the batch index of row 0 (Block.first_member)."""


@njit(cache=True, forceinline=True, _nrt=False)
def noise_output(t, xc, xd, u, y, p):
    noisy_sample_kernel(p.seed, p.first, xd, u[0], p.packed, y[0])


@njit(cache=True, forceinline=True, _nrt=False)
def noise_update(t, xc, xd, u, p):
    """The sample index k advances by one at every hit."""
    for b in range(xd.shape[0]):
        for i in range(xd.shape[1]):
            xd[b, i] += 1.0


@register
class MeasurementNoise(JointBlock):
    """A sampled measurement: y = u + mean + std n, n standard normal, held between hits.

    Sample k of channel i in batch member b is a pure function of (seed, b, i, k), drawn by the same
    counter-based generator as the WhiteNoise source, with k the block's discrete state: reruns and
    batch members are reproducible and independent.
    """

    type_name = "MeasurementNoise"
    summary = "sampled signal plus seeded Gaussian noise"
    preserves_units = True
    params = {"period": PERIOD, "offset": OFFSET,
              "variance": Param(1.0, "(units of u)^2", "noise variance (>= 0)"),
              "mean": Param(0.0, "units of u", "noise mean (a sensor bias)"),
              "seed": Param(0, "-", "seed of the generator", kind="int")}
    sample = "discrete"
    width_params = ("variance", "mean")

    def check_values(self, v):
        self.positive("variance", allow_zero=True, v=v)

    def check(self):
        self._seed = np.uint64(self.p.seed % 2 ** 64)    # an int parameter: structure

    def configure(self, in_widths, out_widths):
        super().configure(in_widths, out_widths)
        self.n_xd = 1

    def record(self, v):
        # the noise of member b is keyed by its index in the whole batch, v.first_member + b
        rows = self.rows_of(v)
        return MeasurementNoiseParams(packed(rows["mean"], np.sqrt(rows["variance"])), self._seed,
                                      v.first_member)

    def state_names(self):
        return [], ["sample index k"]

    def kernels(self):
        return Kernels(output=noise_output, update=noise_update)


@njit(cache=True, forceinline=True, _nrt=False)
def shift_in_kernel(buffer, u, width):
    """Drop the oldest sample (the first `width` columns), append u at the end."""
    n = buffer.shape[1]
    wu = u.shape[1]
    for b in range(buffer.shape[0]):
        for i in range(n - width):
            buffer[b, i] = buffer[b, i + width]
        for i in range(width):
            buffer[b, n - width + i] = u[b, i if wu > 1 else 0]


SampleDelayParams = namedtuple("SampleDelayParams", "width x0")
"""SampleDelay kernels' record: the signal width (xd holds `delay` samples of it, oldest first)
and the output x0 (B, width) of the first N samples (read by initial_state, not by the kernels)."""


@njit(cache=True, forceinline=True, _nrt=False)
def sample_delay_output(t, xc, xd, u, y, p):
    """y = the oldest stored sample, the first p.width columns of xd."""
    fill_rows(xd, y[0])


@njit(cache=True, forceinline=True, _nrt=False)
def sample_delay_update(t, xc, xd, u, p):
    shift_in_kernel(xd, u[0], p.width)


@register
class SampleDelay(JointBlock):
    """N-sample discrete delay: y[k] = u[k - N] at the block's hits, x0 for the first N samples.

    Models a sensor's or a bus's transport delay of N periods; N = 1 is a UnitDelay.
    """

    type_name = "SampleDelay"
    summary = "delay of N sample periods"
    preserves_units = True
    params = {"period": PERIOD, "offset": OFFSET,
              "delay": Param(1, "samples", "N, the delay in periods (>= 1)", kind="int"),
              "x0": Param(0.0, "units of u", "output during the first N samples")}
    sample = "discrete"
    direct_feedthrough = False
    width_params = ("x0",)

    def check(self):
        if self.p.delay < 1:
            raise ParameterError(f"delay must be >= 1 sample, got {self.p.delay}", block=self.name)

    def configure(self, in_widths, out_widths):
        super().configure(in_widths, out_widths)
        self.n_xd = self.p.delay * self.width

    def record(self, v):
        return kernel_params(SampleDelayParams, width=self.width, x0=self.rows_of(v)["x0"])

    def state_names(self):
        w = self.width
        return [], [f"u[k-{self.p.delay - s}][{i}]" for s in range(self.p.delay) for i in range(w)]

    def initial_state(self, xc, xd, p=None):
        """The N stored samples all x0, of the run's record p (None: the block's own)."""
        p = self.own_record(p)
        xd[...] = np.tile(p.x0, self.p.delay)

    def kernels(self):
        return Kernels(output=sample_delay_output, update=sample_delay_update)
