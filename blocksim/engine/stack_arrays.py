"""Arrays of float64 on the stack of a compiled function, of shapes fixed when it is compiled.

A generated loop that runs one member (run_fixed_one, run_adaptive_one) or a chunk of a few
(run_fixed_chunk: source_text.stack_form) keeps its signals, states and stage rows in these
rather than in the arrays it was given. The compiler then knows them as the function's own
memory, shaped by constants (a chunk's member count is bounded by one): no store to them can
change a parameter it reads, their loops over members and channels have known lengths, and most
of their elements live in registers. Given arrays, by contrast, may alias one another for all it
knows, so every store would make it load the parameters again (W2 ran 1.6 times faster the first
way).

An array here lives until the function that made it returns; it has no owner to count
references for (numba's meminfo is NULL), and must not be returned or kept.
"""
from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.core.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array

STACK_LIMIT = 1 << 16
"""The most bytes a generated loop places on its stack this way (a thread's stack is a few MiB
at least; a diagram past this runs in the arrays it is given)."""


def _literal_dims(dims) -> list[int]:
    if not all(isinstance(d, types.IntegerLiteral) for d in dims):
        raise TypingError("the shape of a stack array is a constant of the source")
    return [d.literal_value for d in dims]


def _stack_array_codegen(dims: list[int]):
    """Code that reserves the array's bytes in the entry block of the compiled function (so the
    compiler may keep its elements in registers) and describes them as a C-ordered array."""
    arrty = types.Array(types.float64, len(dims), "C")

    def codegen(context, builder, signature, args):
        count = 1
        for d in dims:
            count *= d
        data = cgutils.alloca_once(builder, context.get_value_type(types.float64),
                                   size=max(count, 1))
        intp = context.get_value_type(types.intp)
        strides, step = [], 8
        for d in reversed(dims):
            strides.insert(0, intp(step))
            step *= d
        ary = make_array(arrty)(context, builder)
        populate_array(ary, data=data, shape=[intp(d) for d in dims], strides=strides,
                       itemsize=intp(8), meminfo=None)
        return ary._getvalue()
    return arrty, codegen


@intrinsic
def stack_matrix(typingctx, rows, cols):
    """A new (rows, cols) float64 array, C order, on the caller's stack; rows and cols are
    integer constants written in the source. Its elements start undefined."""
    dims = _literal_dims((rows, cols))
    arrty, codegen = _stack_array_codegen(dims)
    return arrty(rows, cols), codegen


@intrinsic
def stack_array3(typingctx, d0, d1, d2):
    """A new (d0, d1, d2) float64 array, C order, on the caller's stack (see stack_matrix)."""
    dims = _literal_dims((d0, d1, d2))
    arrty, codegen = _stack_array_codegen(dims)
    return arrty(d0, d1, d2), codegen

