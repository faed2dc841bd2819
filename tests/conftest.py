"""Test-suite settings: diagrams run interpreted unless a test asks for compiled mode.

Compiling every test diagram's step function would cost several seconds each on a fresh CI
machine; compiled mode is tested where it is the subject (tests/test_compiled.py and the blocks'
compiled-equals-interpreted checks), with its own cache folder.
"""
import os

os.environ.setdefault("BLOCKSIM_MODE", "interpreted")
