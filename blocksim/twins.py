"""Python twins of numba functions: a first run that does not wait for compilation.

Every kernel is a numba function (`@njit`) whose source is plain Python and numpy. Its twin is
that same source run by CPython, with each numba function it calls replaced by that function's
twin (module globals, closure cells, and attributes of blocksim modules it reaches through, such
as `md.inverse_dynamics`): the same arithmetic, in the same order, without compiling anything. A
twin is slower than the compiled kernel (about 5-20 times for a robot's dynamics), so it serves
runs that are short next to compiling the kernels (tens of seconds for a robot on a first run),
while the kernels are compiled for later runs (engine/background_compile.py), and set-up code
that calls a numba function once (building a robot's Model) and should not compile it for that.

A bottom layer like errors: it imports nothing of blocksim, and every layer may use it.
"""
from __future__ import annotations

import types

import numpy as np
from numba.core.dispatcher import Dispatcher

_twins: dict[int, types.FunctionType] = {}
_globals: dict[int, dict] = {}


def python_twin(fn):
    """fn's twin: the Python function of a numba function, calling twins; anything else as is."""
    if not isinstance(fn, Dispatcher):
        return fn
    twin = _twins.get(id(fn))
    if twin is None:
        py = fn.py_func
        closure = None
        if py.__closure__:
            closure = tuple(types.CellType(_twin_of(cell.cell_contents))
                            for cell in py.__closure__)
        twin = types.FunctionType(py.__code__, _twin_globals(py.__globals__), py.__name__,
                                  py.__defaults__, closure)
        twin.__kwdefaults__ = py.__kwdefaults__
        twin.__qualname__ = py.__qualname__
        twin.__module__ = py.__module__
        twin.__doc__ = py.__doc__
        twin.__wrapped_numba__ = fn
        _twins[id(fn)] = twin
    return twin


def quiet_twin(fn):
    """fn's twin for the engine to call in place of the compiled kernel, with the kernel's
    floating-point behaviour: an overflow, a division by zero or an invalid operation on numpy
    numbers gives inf or NaN without a numpy warning, as numba's error_model="numpy" does (the
    engine's finite checks then name the block whose state or output became NaN/Inf)."""
    twin = python_twin(fn)
    if twin is fn:
        return fn

    def quiet(*args):
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            return twin(*args)
    quiet.__wrapped__ = twin
    return quiet


def own_twin(fn, twin) -> None:
    """Make `twin` the Python twin of numba function `fn`, for a kernel whose source runs
    differently under CPython: wrapping 64-bit integer arithmetic, which numba does silently and
    numpy scalars do with an overflow warning."""
    _twins[id(fn)] = twin


def _twin_of(value):
    """The twin of a value a kernel reads: numba functions and blocksim modules are twinned."""
    if isinstance(value, Dispatcher):
        return python_twin(value)
    if isinstance(value, types.ModuleType) and value.__name__.startswith("blocksim."):
        return _TwinModule(value)
    return value


def _twin_globals(module_globals: dict) -> dict:
    """A module's globals as its twins see them: a copy, numba functions and blocksim modules
    replaced by their twins (one copy per module, shared by its twins)."""
    twin = _globals.get(id(module_globals))
    if twin is None:
        twin = _globals[id(module_globals)] = dict(module_globals)
        for key, value in module_globals.items():
            if isinstance(value, (Dispatcher, types.ModuleType)):
                twin[key] = _twin_of(value)     # the memo above ends cycles between modules
    return twin


class _TwinModule:
    """A blocksim module as twins see it: its numba functions read as their twins."""

    def __init__(self, module: types.ModuleType):
        self.__dict__["_module"] = module

    def __getattr__(self, name: str):
        value = _twin_of(getattr(self._module, name))
        self.__dict__[name] = value
        return value
