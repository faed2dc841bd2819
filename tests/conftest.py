"""Test-suite settings: diagrams run interpreted unless a test asks for compiled mode.

Compiling every test diagram's step function would cost several seconds each on a fresh CI
machine; compiled mode is tested where it is the subject (tests/test_compiled.py and the blocks'
compiled-equals-interpreted checks), with its own cache folder. Kernels not compiled yet are
compiled before a run (a user's short first run runs their Python twins instead and compiles
them in the background: that path is tested in tests/test_first_run.py).
"""
import os

import pytest

os.environ.setdefault("BLOCKSIM_MODE", "interpreted")
os.environ.setdefault("BLOCKSIM_FIRST_RUN", "compile")   # Python twins: tests/test_first_run.py


@pytest.fixture
def compiled_cache(tmp_path_factory, monkeypatch):
    """A cache folder of this test session for compiled code (BLOCKSIM_CACHE_DIR)."""
    monkeypatch.setenv("BLOCKSIM_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
