"""Sample times: inherited rates resolved from their drivers, and the exact base tick of a run."""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from functools import cached_property
from fractions import Fraction
from math import gcd

from ..blocks.base import SampleTime, exact_time
from ..errors import BlocksimError, SampleTimeError


def resolve_sample_times(blocks: dict, wires: dict, order: list[str]) -> dict[str, SampleTime]:
    """Each block's sample time, inherited ones taken from the blocks that drive them.

    An inherited block runs at the common rate of its drivers: constant when every driver is
    constant (unless its outputs depend on the time itself or on a continuous state: then
    continuous, as a Function of t fed by a Constant), discrete when every non-constant driver has
    the same discrete rate, continuous otherwise (mixed or continuous drivers, or nothing to
    inherit from in a feedback cycle).
    """
    times = {}
    for name, blk in blocks.items():
        try:
            times[name] = blk.sample_time()
        except BlocksimError as err:          # a period of 0 s, an offset beyond the period
            raise err.located(block=name)
    drivers: dict[str, list[str]] = {name: [] for name in blocks}
    consumers: dict[str, list[str]] = {name: [] for name in blocks}
    for (dst, _), (src, _) in wires.items():
        drivers[dst].append(src)
        consumers[src].append(dst)
    # each inherited block waits for its inherited drivers; resolved in time linear in the wires
    waiting = {name: sum(times[s].kind == "inherited" for s in drivers[name])
               for name in order if times[name].kind == "inherited"}
    ready = deque(name for name, count in waiting.items() if count == 0)
    while ready:
        name = ready.popleft()
        del waiting[name]
        times[name] = _common_rate([times[s] for s in drivers[name]])
        blk = blocks[name]
        if times[name].kind == "constant" and (blk.time_varying or blk.n_xc > 0):
            times[name] = SampleTime.continuous()
        for consumer in consumers[name]:
            if consumer in waiting:
                waiting[consumer] -= 1
                if waiting[consumer] == 0:
                    ready.append(consumer)
    for name in waiting:                # in a cycle of inherited blocks, or fed by one
        times[name] = SampleTime.continuous()
    return times


def _common_rate(srcs: list[SampleTime]) -> SampleTime:
    varying = [s for s in srcs if s.kind != "constant"]
    if not varying:
        return SampleTime.constant()
    first = varying[0]
    if first.kind == "discrete" and all(s == first for s in varying):
        return first
    return SampleTime.continuous()


def fraction_gcd(values: list[Fraction]) -> Fraction:
    """The largest rational that divides every value exactly (0 values ignored)."""
    values = [v for v in values if v != 0]
    if not values:
        return Fraction(0)
    num = 0
    den = 1
    for v in values:
        den = den * v.denominator // gcd(den, v.denominator)
    for v in values:
        num = gcd(num, v.numerator * (den // v.denominator))
    return Fraction(num, den)


@dataclass(frozen=True)
class Rate:
    """A discrete rate in base ticks: hits at tick n with n >= offset and (n - offset) % period == 0."""

    period: int
    offset: int
    sample_time: SampleTime

    def hits(self, n: int) -> bool:
        return n >= self.offset and (n - self.offset) % self.period == 0

    def next_hit(self, n: int) -> int:
        """The first hit at a tick strictly after n."""
        if n < self.offset:
            return self.offset
        return self.offset + ((n - self.offset) // self.period + 1) * self.period


@dataclass(frozen=True)
class Timebase:
    """Exact time of a run: t = start + n * tick for integer n; rates as tick counts."""

    tick: Fraction
    start: Fraction
    rates: tuple[Rate, ...]

    @cached_property
    def integer_form(self) -> tuple[int, int, int]:
        """(num0, dnum, den) with t(n) = (num0 + n * dnum) / den exactly, all integers."""
        den = self.start.denominator * self.tick.denominator // gcd(self.start.denominator,
                                                                    self.tick.denominator)
        return (self.start.numerator * (den // self.start.denominator),
                self.tick.numerator * (den // self.tick.denominator), den)

    def time(self, n: int) -> float:
        """t = start + n tick (s), the correctly rounded float of the exact rational."""
        num0, dnum, den = self.integer_form
        return (num0 + n * dnum) / den   # int / int is correctly rounded in Python

    def tick_at_or_before(self, t: float) -> int:
        """The last tick n with start + n tick <= t, for a time t >= start off the tick grid (an
        event, a breakpoint), read exactly (exact_time)."""
        return int((exact_time(t) - self.start) / self.tick)

    def rate_index(self, st: SampleTime) -> int:
        for k, r in enumerate(self.rates):
            if r.sample_time == st:
                return k
        raise KeyError(st)


def make_timebase(sample_times: dict[str, SampleTime], start: Fraction,
                  fixed_step: Fraction | None, extra: list[Fraction] = ()) -> Timebase:
    """The base tick dividing every period, offset and the fixed step (exact rationals).

    With a fixed step, every period and offset must be a multiple of it (as in Simulink's
    fixed-step solvers); otherwise a SampleTimeError names the blocks that do not fit.
    """
    discrete = sorted({st for st in sample_times.values() if st.kind == "discrete"},
                      key=lambda s: (s.period, s.offset))
    if fixed_step is not None:
        bad = [name for name, st in sample_times.items() if st.kind == "discrete"
               and ((st.period / fixed_step).denominator != 1
                    or (st.offset / fixed_step).denominator != 1)]
        if bad:
            st = sample_times[bad[0]]
            raise SampleTimeError(
                f"the fixed step {fixed_step} s ({float(fixed_step)} s) does not divide the sample "
                f"time {st} of block(s) {', '.join(bad)}; choose a step that divides every period "
                "and offset", block=bad[0])
    values = [st.period for st in discrete] + [st.offset for st in discrete] + [start] + list(extra)
    if fixed_step is not None:
        values.append(fixed_step)
    tick = fraction_gcd(values) if values else Fraction(1)
    if tick == 0:
        tick = Fraction(1)
    # hits at absolute t = offset + k period; counted from the start time of the run
    rates = tuple(Rate(int(st.period / tick), int(((st.offset - start) % st.period) / tick), st)
                  for st in discrete)
    return Timebase(tick, start, rates)
