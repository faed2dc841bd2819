"""blocksim: a Simulink-style block-diagram simulator for robot-arm dynamics and control.

    import blocksim
    d = blocksim.load("examples/two_link_pid_vs_ff.yaml", variant="pid_ff")
    r = blocksim.simulate(d)
    r.t, r["plant.q"]

    sim = blocksim.Simulator(d)        # compiled once, run many times
    r1, r2 = sim.run(), sim.run()
"""
from .engine.numba_start import load_blas_modules

load_blas_modules()      # numba's start without scipy.linalg's (engine/numba_start.py): ~0.3 s

from .diagram.diagram import Diagram, load  # noqa: E402
from .engine.result import Result  # noqa: E402
from .engine.simulate import Simulator, simulate  # noqa: E402
from .version import __version__  # noqa: E402

_ANALYSIS = ("frequency_response", "linearize", "trim")


def __getattr__(name: str):
    """linearize, trim and frequency_response, imported when first used: blocksim.analysis
    brings SciPy's linalg and optimize (about 0.5 s), which a run does not need; likewise
    blocksim.study (studies: sweeps, Monte Carlo; docs/studies.md)."""
    if name in _ANALYSIS:
        from . import analysis
        return getattr(analysis, name)
    if name == "study":               # studies (and Dask, when a study asks for it)
        import importlib
        return importlib.import_module(f"{__name__}.study")
    raise AttributeError(f"module 'blocksim' has no attribute '{name}'")


__all__ = ["Diagram", "Result", "Simulator", "frequency_response", "linearize", "load", "simulate",
           "study", "trim", "__version__"]
