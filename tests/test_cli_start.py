"""A process's start stays light: `import blocksim` brings none of the heavy optional modules,
numba starts without SciPy's linear-algebra package yet its linear algebra works, the command
(installed or `python cli.py`) imports blocksim with the collector off and freezes what it made,
and a saved run's git revision is git's own, asked only inside a work tree."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from blocksim.engine.result import checkout_revision

ROOT = Path(__file__).resolve().parents[1]

HEAVY = ("matplotlib", "scipy.integrate", "scipy.linalg", "scipy.optimize", "scipy.interpolate",
         "pandas", "pyarrow", "dask", "distributed", "networkx", "plotly", "numpy.ma")


def child(code: str) -> dict:
    """The JSON that `code` prints, run in a fresh Python with this checkout first on its path."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_blocksim_brings_no_heavy_module():
    loaded = child("import json, sys, blocksim; "
                   f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    assert loaded == []


def test_the_installed_command_and_cli_py_start_through_the_launcher():
    """The console script (pyproject's project.scripts) and cli.py both run blocksim_launch.main,
    which imports blocksim before the command runs and freezes its objects out of the
    collector's passes; a library import of blocksim leaves the collector alone."""
    text = (ROOT / "pyproject.toml").read_text()
    assert 'blocksim = "blocksim_launch:main"' in text
    assert "from blocksim_launch import main" in (ROOT / "cli.py").read_text()
    seen = child("import gc, json, sys, blocksim_launch; sys.argv = ['blocksim']; "
                 "status = blocksim_launch.main(); "
                 "print(json.dumps([status, gc.get_freeze_count(), gc.isenabled()]))")
    status, frozen, enabled = seen
    assert status == 2 and enabled          # no command: the usage, exit status 2
    assert frozen > 10_000                  # blocksim's modules, numba's types, the kernels
    assert child("import gc, json, blocksim; print(json.dumps(gc.get_freeze_count()))") == 0


def test_numba_starts_without_scipy_linalg_and_its_linear_algebra_still_works():
    """The first compiled function initialises numba's CPU target, whose BLAS check would import
    scipy.linalg whole: after `import blocksim` it does not, a kernel solving a 3x3 system with
    np.linalg.solve (LAPACK) and a matrix product (BLAS) gives numpy's numbers, and a later
    `import scipy.linalg` finds the modules numba uses as its attributes."""
    result = child("""
import json, sys
import numpy as np
import blocksim
from numba import njit

@njit(cache=False)
def solve_and_multiply(a, b):
    return np.linalg.solve(a, b), a @ a

a = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, -1.0], [0.5, -1.0, 2.0]])
b = np.array([1.0, -2.0, 0.25])
x, aa = solve_and_multiply(a, b)
before = "scipy.linalg" in sys.modules
import scipy.linalg
print(json.dumps({"linalg_before": before, "x": x.tolist(), "aa": aa.tolist(),
                  "blas_attribute": scipy.linalg.cython_blas is sys.modules["scipy.linalg.cython_blas"],
                  "lapack_attribute": scipy.linalg.cython_lapack is sys.modules["scipy.linalg.cython_lapack"],
                  "scipy_solve": scipy.linalg.solve(a, b).tolist()}))
""")
    import numpy as np
    a = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, -1.0], [0.5, -1.0, 2.0]])
    b = np.array([1.0, -2.0, 0.25])
    assert result["linalg_before"] is False
    np.testing.assert_allclose(a @ np.array(result["x"]), b, rtol=0, atol=1e-14)
    np.testing.assert_allclose(result["x"], result["scipy_solve"], rtol=1e-14, atol=0)
    np.testing.assert_array_equal(np.array(result["aa"]), a @ a)
    assert result["blas_attribute"] and result["lapack_attribute"]


def _git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_the_revision_is_the_checked_out_commit_and_none_outside_a_work_tree(tmp_path):
    """A new repository (a loose branch ref), the same after `git pack-refs` (packed-refs),
    linked work trees (detached, and on a branch of their own), a detached HEAD: the commit
    checked out in each; outside a work tree, None (git not started)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git("init", "-q", "-b", "main", cwd=repo)
    (repo / "pkg").mkdir()
    (repo / "pkg" / "a.txt").write_text("one\n")
    _git("add", ".", cwd=repo)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one", cwd=repo)
    first = _git("rev-parse", "HEAD", cwd=repo)
    assert checkout_revision(repo / "pkg") == first
    _git("pack-refs", "--all", cwd=repo)
    assert not (repo / ".git" / "refs" / "heads" / "main").exists()
    assert checkout_revision(repo / "pkg") == first
    (repo / "pkg" / "a.txt").write_text("two\n")
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "two", cwd=repo)
    second = _git("rev-parse", "HEAD", cwd=repo)
    assert second != first and checkout_revision(repo / "pkg") == second
    _git("worktree", "add", "-q", "--detach", str(tmp_path / "linked"), first, cwd=repo)
    assert checkout_revision(tmp_path / "linked" / "pkg") == first
    _git("worktree", "add", "-q", "-b", "side", str(tmp_path / "branch"), first, cwd=repo)
    assert checkout_revision(tmp_path / "branch" / "pkg") == first    # ref in the common dir
    _git("checkout", "-q", "--detach", first, cwd=repo)
    assert checkout_revision(repo / "pkg") == first
    assert checkout_revision(tmp_path) is None          # no work tree above it
