"""numba's start-up without SciPy's linear-algebra package: about 0.3 s off every compiled run's
process (a warm `python cli.py simulate` spends most of its time starting numba).

The first time numba loads or compiles a function in a process it initialises its CPU target,
and one step of that (`numba.np.arraymath`, when it is imported) checks that BLAS is available by
importing `scipy.linalg.cython_blas`. Python imports a module's parents first, so that check
imports the whole `scipy.linalg` package, whose start (SciPy's array-API layer, the decompositions,
the special matrices) is about 0.25-0.35 s of a 2-core machine; the compiled code needs none of it.
What compiled code does need of SciPy are the two Cython modules `scipy.linalg.cython_blas` and
`scipy.linalg.cython_lapack` (numba's linear algebra, `np.linalg.solve` and `@` in a kernel, takes
the BLAS and LAPACK function pointers from their `__pyx_capi__` when first called).

`load_blas_modules` loads those two extension modules from SciPy's folder under their own full
names, as the normal import would, without running `scipy/linalg/__init__.py`: numba's check and
its later look-ups then find them in `sys.modules`. A later `import scipy.linalg` (linearize, a
stiff solver) runs the package as usual and finds the same two module objects, so nothing is
loaded twice. When SciPy is missing, `scipy.linalg` is already imported, or the files are not
where SciPy keeps them, it does nothing (numba's own import then runs, as it always did).
A normal import would also have set the two modules as attributes of the package: a one-shot
finder (`_BindWhenImported`) sets them when `scipy.linalg` is imported, so
`scipy.linalg.cython_blas` reads as it would have.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from pathlib import Path

BLAS_MODULES = ("scipy.linalg.cython_blas", "scipy.linalg.cython_lapack")


def load_blas_modules() -> bool:
    """Load SciPy's Cython BLAS and LAPACK modules without the scipy.linalg package (see the
    module's docstring); True when they are in sys.modules afterwards."""
    if "scipy.linalg" in sys.modules or all(name in sys.modules for name in BLAS_MODULES):
        return all(name in sys.modules for name in BLAS_MODULES)
    spec = importlib.util.find_spec("scipy")
    if spec is None or not spec.submodule_search_locations:
        return False
    folder = Path(next(iter(spec.submodule_search_locations))) / "linalg"
    found = {}
    for name in BLAS_MODULES:
        leaf = name.rpartition(".")[2]
        path = next((folder / (leaf + suffix) for suffix in importlib.machinery.EXTENSION_SUFFIXES
                     if (folder / (leaf + suffix)).is_file()), None)
        if path is None:
            return False
        found[name] = path
    import scipy        # the parent must exist: the top package only (NumPy and a few ms more)
    sys.meta_path.insert(0, _BindWhenImported())
    for name, path in found.items():
        if name in sys.modules:
            continue
        module_spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        try:
            module_spec.loader.exec_module(module)
        except Exception:
            del sys.modules[name]    # numba's own import will say what is wrong, as before
            return False
    del scipy
    return True


class _BindWhenImported(importlib.abc.MetaPathFinder):
    """When scipy.linalg is imported (the usual way, by the finders after this one), set the
    BLAS modules loaded before it (those in sys.modules then) as its attributes, as their own
    import would have; then leave sys.meta_path."""

    def find_spec(self, name, path=None, target=None):
        if name != "scipy.linalg":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            for full in BLAS_MODULES:
                if full in sys.modules:
                    setattr(module, full.rpartition(".")[2], sys.modules[full])
        spec.loader.exec_module = exec_module
        return spec
