"""Typed simulation and log settings: read once, exact, located errors; keyword settings without a
re-read of the file; the one function that chooses the execution mode, with its reason."""
import dataclasses
from fractions import Fraction

import numpy as np
import pytest

import blocksim
from blocksim.diagram.settings import LogSettings, SimulationSettings
from blocksim.engine.mode import AUTO_COMPILE_AFTER, choose_mode
from blocksim.engine.simulate import remembered
from blocksim.errors import SampleTimeError, SolverError
from test_engine import MSD, msd_exact, write


def test_settings_are_typed_exact_and_frozen(tmp_path):
    d = blocksim.load(write(tmp_path, MSD), set={"simulation.step": 0.1, "log.every": 0.3})
    s = d.settings
    assert isinstance(s, SimulationSettings) and isinstance(d.log_settings, LogSettings)
    assert (s.start, s.stop, s.solver, s.step) == (0, 10, "dop853", Fraction(1, 10))
    assert (s.rtol, s.atol, s.max_step, s.threads, s.seed) == (1e-10, 1e-12, np.inf, None, None)
    assert d.log_settings.signals == ("x.out", "v.out")
    assert d.log_settings.every == Fraction(3, 10)       # 0.3 read through its decimal text
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.stop = Fraction(1)
    assert d.settings is s                               # read once


@pytest.mark.parametrize("key, value, message", [
    ("rtol", "fast", "simulation.rtol must be a positive number, got 'fast'"),
    ("atol", -1.0, "simulation.atol must be a number >= 0"),
    ("max_step", 0.0, "simulation.max_step must be a positive number (or .inf)"),
    ("zero_crossing_tol", ".inf", "simulation.zero_crossing_tol must be a positive number"),
    ("progress", "yes", "simulation.progress must be true or false"),
    ("seed", 1.5, "simulation.seed must be an integer"),
    ("mode", "compild", "did you mean 'compiled'"),
    ("solver", "dopri", "did you mean 'dopri5'"),
    ("threads", 0, "simulation.threads must be a positive integer or 'auto'"),
])
def test_bad_settings_name_the_line_of_the_key(tmp_path, key, value, message):
    table = {"stop_time": 1, "solver": "rk4", "step": 0.01, key: value}
    section = "simulation:\n" + "".join(f"  {k}: {v!r}\n" for k, v in table.items())
    path = write(tmp_path, MSD.replace(MSD[MSD.index("simulation:"):MSD.index("log:")], section))
    line = next(n for n, row in enumerate(path.read_text().splitlines(), 1) if f"{key}:" in row)
    with pytest.raises((SolverError, SampleTimeError)) as info:
        blocksim.simulate(blocksim.load(path))
    assert message in str(info.value)
    assert str(info.value).startswith(f"{path}:{line}: ")


def test_keyword_settings_are_checked_and_need_no_reread(tmp_path):
    path = write(tmp_path, MSD)
    d = blocksim.load(path)
    path.write_text("this is no longer a diagram")       # the run uses what was loaded
    r = blocksim.simulate(d, stop_time=2, solver="rk4", step=0.001)
    assert r.t[-1] == 2.0 and r.metadata["solver"] == "rk4"
    assert r.metadata["overrides"]["simulation.stop_time"] == "2"
    assert "stop_time: 2" in r.diagram
    assert np.max(np.abs(r["x.out"][:, 0] - msd_exact(r.t))) < 1e-9
    with pytest.raises(SolverError, match=r"keyword stop_tim: no simulation setting 'stop_tim' "
                                          r"\(did you mean 'stop_time'\?\)"):
        blocksim.simulate(d, stop_tim=2)
    with pytest.raises(SampleTimeError, match="keyword stop_time: stop_time .* must be after"):
        blocksim.simulate(d, stop_time=-1)


def test_fast_restart_is_kept_by_the_engine_per_batch_and_settings(tmp_path):
    d = blocksim.load(write(tmp_path, MSD))
    assert remembered(d) is None
    blocksim.simulate(d, stop_time=1)
    first = remembered(d)
    blocksim.simulate(d, stop_time=1)
    assert remembered(d) is first
    blocksim.simulate(d, stop_time=2)
    assert remembered(d) is not first and remembered(d).settings.stop == 2
    assert not any(name.startswith("_") and "restart" in name for name in vars(d))


SETTINGS = SimulationSettings()


def never():
    raise AssertionError("not to be asked")


@pytest.mark.parametrize("mode, missing, cached, estimate, cost, chosen, tell, reason", [
    ("interpreted", ["b (T): no compiled output"], never, never, never, "interpreted", False,
     "simulation.mode is interpreted"),
    ("auto", ["b (T): no compiled output", "c (T): no compiled output"], never, never, never,
     "interpreted", True, "runs interpreted: b (T): no compiled output (and 1 more)"),
    ("compiled", [], never, never, never, "compiled", False, "simulation.mode is compiled"),
    ("auto", [], lambda: True, never, never, "compiled", False, "its compiled code is cached"),
    # kernels still to compile on this machine (cost None): the run must outweigh a minute's
    # kernel compile, AUTO_COMPILE_AFTER
    ("auto", [], lambda: False, lambda: AUTO_COMPILE_AFTER + 5, lambda: None, "compiled", True,
     "is compiled first (an interpreted run would take about 25 s)"),
    ("auto", [], lambda: False, lambda: 8.0, lambda: None, "interpreted", True,
     "runs interpreted: its compiled code is not cached yet and the run is short (about 8 s; "),
    # every kernel compiled: the run against its module's compile
    ("auto", [], lambda: False, lambda: 8.0, lambda: 3.0, "compiled", True,
     "is compiled first (an interpreted run would take about 8 s, compiling it about 3 s)"),
    ("auto", [], lambda: False, lambda: 1.0, lambda: 3.0, "interpreted", True,
     "runs interpreted: its compiled code is not cached yet and the run is short (about 1 s, "
     "compiling it about 3 s"),
])
def test_one_function_chooses_the_mode_and_says_why(mode, missing, cached, estimate, cost, chosen,
                                                    tell, reason):
    choice = choose_mode(dataclasses.replace(SETTINGS, mode=mode), missing, cached, estimate, cost)
    assert (choice.mode, choice.tell) == (chosen, tell)
    assert choice.reason.startswith(reason)


def test_compiled_mode_with_a_python_only_block_is_an_error_naming_it():
    with pytest.raises(SolverError, match="compiled mode needs kernels for every block; b \\(T\\)"):
        choose_mode(dataclasses.replace(SETTINGS, mode="compiled"), ["b (T): no compiled output"],
                    never, never)


def test_keyword_settings_keep_the_other_times_exact(tmp_path):
    """A keyword setting leaves the file's exact times as they were: a step of 1/3 ms stays 1/3."""
    d = blocksim.load(write(tmp_path, MSD), set={"simulation.step": "1/3000",
                                                 "simulation.solver": "rk4"})
    changed = d.settings.changed({"stop_time": 1})
    assert changed.step == Fraction(1, 3000) and changed.stop == 1
    assert changed == dataclasses.replace(d.settings, stop=Fraction(1))
