"""Numba helpers shared by the block families: parameter records and the small row kernels.

A block's kernels take its parameters as one named record (a `collections.namedtuple` declared
next to the kernels that read it): numba passes a named tuple exactly as a plain tuple and compiles
`p.lower` to the same load as `p[0]`, so the names cost nothing at run time.
"""
from __future__ import annotations

import sys
import threading
import time
from collections import namedtuple
from contextlib import contextmanager

import numpy as np
from numba import njit

from ..twins import quiet_twin

COMPILE_NOTICE_AFTER = 2.0
"""Seconds a compilation may last before the user is told what is being compiled."""

NoParams = namedtuple("NoParams", ())
"""The record of kernels that read no parameters (Mux, UnitDelay, Clock, ...)."""

NO_PARAMS = NoParams()


def kernel_params(record: type, **fields):
    """A block's parameter record `record(**fields)`, arrays as writable C-contiguous copies (a
    read-only view, e.g. a broadcast parameter of a batch of one, is another numba type and would
    compile a second copy of the diagram's code), numbers as they are."""
    return record(**{key: np.require(v, requirements=("C", "W")) if isinstance(v, np.ndarray) else v
                     for key, v in fields.items()})


def entry_point(fn, args: tuple, wait: bool = True):
    """The compiled entry point of the numba function fn for calls fn(t, *args) with a float t and
    arguments of these types (compiled, or loaded from numba's cache, once). Calling it skips the
    dispatcher's typing of every argument at every call (a parameter record, a named tuple, costs
    about 2 us to type): for call sites whose arrays and records stay the same objects.

    wait=False: when this code is neither compiled in this process nor in numba's disk cache, fn's
    Python twin instead (blocksim/twins.py: the same arithmetic, uncompiled), and the
    signature is kept for a later compilation (take_deferred)."""
    signature = argument_types(fn, (0.0,) + tuple(args))
    compiled = fn.overloads.get(signature)
    if compiled is not None:          # already in this process: no compilation to announce
        return compiled.entry_point
    if not wait:
        cached = cached_entry_point(fn, signature)
        if cached is not None:
            return cached
        _deferred.append((fn, signature))
        return quiet_twin(fn)
    with compile_notice(fn):
        return fn.compile(signature)


def argument_types(fn, args: tuple) -> tuple:
    """The numba types of args as the dispatcher fn types them (Dispatcher.typeof_pyval), from a
    memo keyed by type_key: numba's typing walks every array of the parameter records at about
    40 us a record, a millisecond for a diagram's loop; the key is the same walk without
    building numba types, so a newly loaded diagram of a known structure binds its compiled loop
    in a fraction of that."""
    types = []
    for a in args:
        key = type_key(a)
        tp = None if key is None else _TYPES.get(key)
        if tp is None:
            tp = fn.typeof_pyval(a)
            if key is not None:
                _TYPES[key] = tp
        types.append(tp)
    return tuple(types)


_TYPES: dict = {}


def type_key(value):
    """A hashable key that determines numba's type of value as an argument, or None when there
    is none (the value is then typed by numba every time): an array's dtype, dimensions, layout
    (C, F or any: numpy_support.map_layout) and writability; a tuple's (or a named tuple's) class
    and its items' keys; an int's width (numba types it by its bit length); the class of a float,
    bool, numpy scalar or None."""
    kind = type(value)
    if kind is np.ndarray:
        flags = value.flags
        layout = "C" if flags.c_contiguous else "F" if flags.f_contiguous else "A"
        return kind, value.dtype, value.ndim, layout, flags.writeable
    if kind is float or kind is bool or value is None or isinstance(value, np.generic):
        return kind
    if kind is int:             # numba: intp, int64, uint64 (64 bits, >= 0), else no type
        bits = value.bit_length()
        return kind, 0 if bits < 32 else 1 if bits < 64 else 2 if bits == 64 and value >= 0 else 3
    if isinstance(value, tuple):
        items = tuple(type_key(v) for v in value)
        return None if None in items else (kind,) + items
    return None


_deferred: list = []


def cached_entry_point(fn, signature: tuple):
    """fn's entry point for this signature when numba's disk cache holds it (loaded now, as
    Dispatcher.compile would load it), else None: nothing is compiled. An unreadable cache entry
    counts as absent."""
    from numba.core.compiler_lock import global_compiler_lock
    try:
        with global_compiler_lock:
            compiled = fn.overloads.get(signature)
            if compiled is not None:
                return compiled.entry_point
            cres = fn._cache.load_overload(signature, fn.targetctx)
            if cres is None:
                return None
            if not cres.objectmode:
                fn.targetctx.insert_user_function(cres.entry_point, cres.fndesc, [cres.library])
            fn.add_overload(cres)
            return cres.entry_point
    except Exception:                 # a damaged entry or another numba: compile it later
        return None


def take_deferred() -> list[tuple[str, str, tuple]]:
    """The kernels that ran as Python twins since the last call, as (module, qualified name,
    numba signature) for a compilation elsewhere (engine/background_compile.py); cleared."""
    taken = [(fn.py_func.__module__, fn.py_func.__qualname__, signature)
             for fn, signature in _deferred]
    _deferred.clear()
    return taken


_compile_notices = {"told": False, "since": None}


@contextmanager
def compile_notice(fn):
    """Around a compilation: when it lasts COMPILE_NOTICE_AFTER seconds, say on stderr what is
    being compiled (the first time in a session, also why and roughly how long a first run takes:
    a first run on a machine compiles the library's kernels, and numba caches them on disk for
    every later run); compile_notice_done then says how long it took."""
    started = time.perf_counter()

    def tell():
        if _compile_notices["since"] is not None:     # already told, not yet done
            return
        _compile_notices["since"] = started
        name = f"{fn.py_func.__module__}.{fn.py_func.__qualname__}"
        if _compile_notices["told"]:
            text = f"note: compiling {name} (its first use on this machine; cached afterwards)"
        else:
            text = (f"note: compiling {name} and the kernels it calls: a first run on this "
                    "machine compiles the blocks' kernels once (the robot dynamics take about a "
                    "minute on 2 cores, other blocks a few seconds) and caches them on disk for "
                    "later runs")
        _compile_notices["told"] = True
        print(text, file=sys.stderr, flush=True)
    timer = threading.Timer(COMPILE_NOTICE_AFTER, tell)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def compile_notice_done() -> None:
    """The kernels a run needs are ready: when compile_notice spoke, say how long it took."""
    since = _compile_notices["since"]
    if since is not None:
        _compile_notices["since"] = None
        print(f"note: kernels compiled and cached in {time.perf_counter() - since:.0f} s",
              file=sys.stderr, flush=True)


def packed(*rows) -> np.ndarray:
    """Parameter rows (B, n) packed into one (B, n, K) array, column k = rows[k], for kernels: one
    array argument instead of K (each array passed to compiled code costs a few ns)."""
    return np.ascontiguousarray(np.stack([np.asarray(r, dtype=float) for r in rows], axis=2))


@njit(cache=True, forceinline=True, _nrt=False)
def fill_rows(src, y):
    """y = src for (B, w) arrays; a (B, 1) src is repeated over the row."""
    ws = src.shape[1]
    for b in range(y.shape[0]):
        for i in range(y.shape[1]):
            y[b, i] = src[b, i if ws > 1 else 0]


@njit(cache=True, forceinline=True, _nrt=False)
def scale_rows(u, k, y):
    """y[b, i] = k[b, i] * u[b, i or 0] (u may be a scalar signal broadcast over the row)."""
    wu = u.shape[1]
    for b in range(y.shape[0]):
        for i in range(y.shape[1]):
            y[b, i] = k[b, i] * u[b, i if wu > 1 else 0]


@njit(cache=True, forceinline=True, _nrt=False)
def clamp_rows(x, lower, upper, y):
    """y = min(max(x, lower), upper), elementwise (x (B, w) or (B, 1) broadcast)."""
    for b in range(y.shape[0]):
        for i in range(y.shape[1]):
            y[b, i] = clamp_at(x, lower, upper, b, i)


@njit(cache=True, forceinline=True, _nrt=False)
def clamp_at(x, lower, upper, b, i):
    """Element (b, i) of clamp_rows(x, lower, upper, .): x[b, i] (x[b, 0] for a (B, 1) x) within
    [lower[b, i], upper[b, i]]."""
    v = x[b, i if x.shape[1] > 1 else 0]
    return lower[b, i] if v < lower[b, i] else (upper[b, i] if v > upper[b, i] else v)


@njit(cache=True, forceinline=True, _nrt=False)
def no_update(t, xc, xd, u, p):
    """The update of a discrete block without state (compiled mode calls one at every hit)."""
