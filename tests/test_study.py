"""Studies (blocksim.study, `python cli.py sweep`): factors and their designs, members' values
from (seed, index), located errors of study files, the summary's rows, replay bit for bit,
resume after a crash, and the executors (threads, processes, Dask)."""
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from blocksim.errors import BlocksimError
from blocksim.study import StudyFileError, load_study, member_seed, member_values, replay, run_study
from blocksim.study.sampling import member_count
from blocksim.study.store import StudyFolder

ROOT = Path(__file__).resolve().parents[1]

DIAGRAM = """\
blocksim: 1
name: pushed mass-spring-damper
parameters:
  k: 4.0          # N/m
blocks:
  v:      {type: Integrator, x0: 0.0}
  x:      {type: Integrator, x0: 1.0}
  spring: {type: Gain, gain: "${-k}"}
  damper: {type: Gain, gain: -0.4}
  push:   {type: WhiteNoise, variance: 0.01, period: 0.01, seed: 3}
  force:  {type: Sum, signs: "+++"}
connections:
  - v -> x
  - x -> spring
  - v -> damper
  - spring -> force.in1
  - damper -> force.in2
  - push -> force.in3
  - force -> v
simulation: {stop_time: 1, solver: rk4, step: 0.01}
log: {signals: [x.out, v.out], every: 0.01}
metrics:
  - {name: peak_x, kind: peak, signal: x.out}
  - {name: rms_v, kind: rms, signal: v.out}
"""

STUDY = """\
study: 1
diagram: msd.yaml
seed: 7
samples: 4
unit_size: 3
factors:
  x.x0: [0.5, 1.0]
  parameters.k: {uniform: [2.0, 6.0]}
  damper.gain: {normal: [-0.4, 0.05]}
"""

KEPT = ("wall_s", "host")


def write(tmp_path, study=STUDY, diagram=DIAGRAM, name="study.yaml") -> Path:
    (tmp_path / "msd.yaml").write_text(diagram)
    path = tmp_path / name
    path.write_text(study)
    return path


def same_rows(a, b):
    """Rows equal bit for bit in every column but the timing and host ones."""
    assert [r["member"] for r in a] == [r["member"] for r in b]
    for ra, rb in zip(a, b):
        ka = {k: v for k, v in ra.items() if k not in KEPT}
        kb = {k: v for k, v in rb.items() if k not in KEPT}
        assert ka.keys() == kb.keys()
        for k in ka:
            assert repr(ka[k]) == repr(kb[k]), (ra["member"], k, ka[k], kb[k])


# ----------------------------------------------------------------------------- factors, designs

def test_grid_factors_are_a_full_factorial_first_factor_slowest(tmp_path):
    path = write(tmp_path, "diagram: msd.yaml\nfactors:\n  x.x0: [0.5, 1.0, 2.0]\n"
                           "  parameters.k: {linspace: [1.0, 3.0, 5]}\n")
    study = load_study(path)
    assert member_count(study.factors, study.samples) == 15
    values = member_values(study.factors, 1, "random", 0, range(15))
    assert values["x.x0"] == [0.5] * 5 + [1.0] * 5 + [2.0] * 5
    assert values["parameters.k"] == [1.0, 1.5, 2.0, 2.5, 3.0] * 3


def test_grids_times_draws_and_each_member_from_its_seed_and_index_alone(tmp_path):
    study = load_study(write(tmp_path))
    assert member_count(study.factors, study.samples) == 8
    whole = member_values(study.factors, 4, "random", 7, range(8))
    for m in range(8):
        alone = member_values(study.factors, 4, "random", 7, range(m, m + 1))
        assert {k: v[0] for k, v in alone.items()} == {k: v[m] for k, v in whole.items()}
    assert whole["x.x0"] == [0.5] * 4 + [1.0] * 4
    k = np.array(whole["parameters.k"])
    assert ((k >= 2.0) & (k <= 6.0)).all() and len(set(k)) == 8
    # more draws leave the first members as they were (random sampling)
    more = member_values(study.factors, 4, "random", 7, range(4))
    assert more["parameters.k"] == whole["parameters.k"][:4]
    assert member_seed(7, 3) == int(np.random.SeedSequence([7, 3]).generate_state(1, np.uint64)[0])
    assert member_seed(7, 3) != member_seed(8, 3)


def test_latin_hypercube_puts_one_point_in_every_stratum_and_sobol_is_balanced(tmp_path):
    text = ("diagram: msd.yaml\nsamples: 16\nsampling: {s}\nseed: 3\nfactors:\n"
            "  x.x0: {{uniform: [0.0, 1.0]}}\n  parameters.k: {{loguniform: [1.0, 100.0]}}\n")
    lhs = load_study(write(tmp_path, text.format(s="lhs")))
    v = member_values(lhs.factors, 16, "lhs", 3, range(16))
    assert sorted(np.floor(np.array(v["x.x0"]) * 16).astype(int)) == list(range(16))
    logs = (np.log10(v["parameters.k"]) / 2 * 16)
    assert sorted(np.floor(logs).astype(int)) == list(range(16))
    sobol = load_study(write(tmp_path, text.format(s="sobol")))
    s = np.array(member_values(sobol.factors, 16, "sobol", 3, range(16))["x.x0"])
    assert [int(((s >= a / 4) & (s < (a + 1) / 4)).sum()) for a in range(4)] == [4, 4, 4, 4]


# ----------------------------------------------------------------------------- study files

@pytest.mark.parametrize("text, line, message", [
    ("diagram: msd.yaml\nfactor:\n  x.x0: [1]\n", 2,
     "unknown key 'factor' in the study file; did you mean 'factors'?"),
    ("diagram: msd.yaml\nfactors:\n  x.x0: {uniform: [2.0, 1.0]}\n", 3,
     "factors: 'x.x0': uniform needs low < high, got [2, 1]"),
    ("diagram: msd.yaml\nfactors:\n  x.x0: {gauss: [0, 1]}\n", 3,
     "factors: 'x.x0' must be a list of values or one of values: [...], linspace: [...], "
     "uniform: [...], normal: [...], loguniform: [...], got a mapping with keys gauss"),
    ("diagram: msd.yaml\nfactors:\n  x0: [1, 2]\n", 3, "factors: 'x0' is not a parameter path"),
    ("diagram: msd.yaml\nsamples: 6\nsampling: sobol\nfactors:\n  x.x0: {uniform: [0, 1]}\n", 2,
     "sampling: sobol needs samples a power of 2"),
    ("diagram: msd.yaml\nseed: -1\nfactors:\n  x.x0: [1]\n", 2, "seed must be >= 0, got -1"),
    ("diagram: nothere.yaml\nfactors:\n  x.x0: [1]\n", 1, "diagram: no such file"),
    ("diagram: msd.yaml\nexecutor: mpi\nfactors:\n  x.x0: [1]\n", 2,
     "executor must be one of threads, processes, dask, got 'mpi'"),
])
def test_a_bad_study_file_is_an_error_at_its_line(tmp_path, text, line, message):
    path = write(tmp_path, text)
    with pytest.raises(StudyFileError) as err:
        load_study(path)
    assert str(err.value).startswith(f"{path}:{line}: ")
    assert message in str(err.value)


def test_a_factor_the_diagram_does_not_have_is_an_error_at_the_factors_line(tmp_path):
    path = write(tmp_path, "diagram: msd.yaml\nfactors:\n  x.x0: [1]\n  damper.gian: [1, 2]\n")
    with pytest.raises(StudyFileError) as err:
        run_study(path, tmp_path / "out", progress=False)
    assert str(err.value).startswith(f"{path}:4: factors: 'damper.gian': ")
    assert "Gain has no parameter 'gian' (did you mean 'gain'?)" in str(err.value)
    assert not (tmp_path / "out").exists()


def test_the_cli_says_file_and_line_and_exits_1_without_a_traceback(tmp_path):
    path = write(tmp_path, "diagram: msd.yaml\nfactors:\n  x.x0: {normal: [0, -1]}\n")
    done = subprocess.run([sys.executable, str(ROOT / "cli.py"), "sweep", str(path), "--out",
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)
    assert done.returncode == 1
    assert done.stderr.strip() == f"error: {path}:3: factors: 'x.x0': normal needs std > 0, got -1"


# ----------------------------------------------------------------------------- rows, replay

def test_one_row_per_member_with_the_issues_columns(tmp_path):
    run = run_study(write(tmp_path), tmp_path / "out", progress=False)
    assert [r["member"] for r in run.rows] == list(range(8))
    assert list(run.rows[0]) == ["member", "x.x0", "parameters.k", "damper.gain", "seed",
                                 "status", "message", "wall_s", "host", "peak_x[0]", "rms_v[0]"]
    assert {r["status"] for r in run.rows} == {"ok"}
    assert run.rows[5]["seed"] == member_seed(7, 5)
    assert (run.units, run.ran) == (3, 3)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["members"] == 8 and set(manifest["hashes"]) >= {"diagram", "factors", "seed"}


def test_a_replayed_member_gives_its_row_bit_for_bit_noise_and_all(tmp_path):
    path = write(tmp_path)
    run = run_study(path, tmp_path / "out", progress=False)
    for member in (0, 4, 7):          # first, middle and last of their units
        found = replay(path, tmp_path / "out", member)
        assert found.identical, found.text()
        assert found.promise == "bit for bit"
        assert found.row["rms_v[0]"] == run.rows[member]["rms_v[0]"]
    # the noise matters: another study seed gives other metrics for the same factor values
    other = write(tmp_path, STUDY.replace("seed: 7", "seed: 8"), name="other.yaml")
    moved = run_study(other, tmp_path / "out8", progress=False)
    assert moved.rows[0]["rms_v[0]"] != run.rows[0]["rms_v[0]"]


def test_a_member_that_diverges_is_a_row_with_its_status_not_a_failed_study(tmp_path):
    path = write(tmp_path, "diagram: msd.yaml\nunit_size: 3\nfactors:\n"
                           "  spring.gain: [-4.0, 1.0e8, -9.0]\n")
    run = run_study(path, tmp_path / "out", progress=False)
    assert [r["status"] for r in run.rows] == ["ok", "diverged", "ok"]
    assert run.rows[1]["message"].endswith("cannot continue at t = 0.45 s with step size 0.01 s: "
                                           "the state became non-finite (NaN or Inf)")
    assert math.isnan(run.rows[1].get("peak_x[0]", math.nan))
    from blocksim.study.report import summary_text
    table = summary_text(run.rows, run.metrics, "s.yaml", "out").splitlines()
    assert table[0] == "3 members: 1 diverged, 2 ok"
    assert table[-2:] == ["members that did not run:", "  member 1 diverged: "
                          + run.rows[1]["message"] + "   replay: python cli.py sweep s.yaml "
                          "--out out --replay 1"]
    # the others ran alone, with the numbers they have in a batch that does not fail
    tame = run_study(write(tmp_path, "diagram: msd.yaml\nunit_size: 3\nfactors:\n"
                                     "  spring.gain: [-4.0, -5.0, -9.0]\n", name="tame.yaml"),
                     tmp_path / "tame", progress=False)
    same_rows([run.rows[0], run.rows[2]], [tame.rows[0], tame.rows[2]])


# ----------------------------------------------------------------------------- the store

def test_the_rows_on_disk_are_parquet_parts_and_a_summary_equal_bit_for_bit(tmp_path):
    import pyarrow.parquet as pq

    from blocksim.study import read_study
    from blocksim.study.store import from_csv
    path = write(tmp_path, STUDY.replace("damper.gain: {normal: [-0.4, 0.05]}",
                                         "spring.gain: [-4.0, 1.0e8]"))
    run = run_study(path, tmp_path / "out", progress=False)
    out = tmp_path / "out"
    parts = sorted((out / "parts").iterdir())
    assert [p.name for p in parts] == [f"unit-{k:06d}.parquet" for k in range(6)]
    summary = pq.read_table(out / "summary.parquet")
    types = {f.name: str(f.type) for f in summary.schema}
    assert (types["member"], types["seed"], types["status"], types["peak_x[0]"]) == \
        ("int64", "uint64", "string", "double")
    assert summary.column("member").to_pylist() == list(range(16))
    assert summary.column("seed").to_pylist() == [member_seed(7, m) for m in range(16)]
    # a diverged member's metrics are null in Parquet, NaN in the rows read back
    diverged = [r["member"] for r in run.rows if r["status"] == "diverged"]
    assert diverged == [m for m in range(16) if m // 4 % 2 == 1]
    assert summary.column("peak_x[0]").null_count == len(diverged)
    stored = read_study(out)
    assert stored.complete and stored.manifest["members"] == 16
    assert stored.columns == list(run.rows[0])
    same_rows(stored.rows, run.rows)
    from blocksim.study.store import rows_of_parts
    same_rows(rows_of_parts(out / "parts"), run.rows)
    same_rows(from_csv((out / "summary.csv").read_text()), run.rows)
    assert math.isnan(stored.rows[diverged[0]]["peak_x[0]"])


def test_without_pyarrow_a_study_says_what_to_install_and_writes_nothing(tmp_path, monkeypatch):
    from blocksim.errors import MissingExtraError
    path = write(tmp_path)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(MissingExtraError) as err:
        run_study(path, tmp_path / "out", progress=False)
    assert str(err.value) == ("a study's rows (Parquet parts and summary.parquet) needs pyarrow, "
                              "which is not installed: pip install -e '.[data]' (or pip install "
                              "pyarrow)")
    assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------------------- resume

def test_resume_after_a_crash_runs_only_the_missing_units(tmp_path, monkeypatch):
    path = write(tmp_path)
    whole = run_study(path, tmp_path / "whole", progress=False)
    written = []
    real = StudyFolder.write_part

    def crash_at_the_third(self, unit, rows):
        if len(written) == 2:
            raise KeyboardInterrupt          # the driver dies with unit 2 in flight
        written.append(unit)
        real(self, unit, rows)
    monkeypatch.setattr(StudyFolder, "write_part", crash_at_the_third)
    with pytest.raises(KeyboardInterrupt):
        run_study(path, tmp_path / "out", progress=False)
    monkeypatch.setattr(StudyFolder, "write_part", real)
    assert not (tmp_path / "out" / "summary.parquet").exists()
    from blocksim.study import read_study
    unfinished = read_study(tmp_path / "out")
    assert not unfinished.complete and [r["member"] for r in unfinished.rows] == list(range(6))
    with pytest.raises(BlocksimError, match="is not empty; nothing was written"):
        run_study(path, tmp_path / "out", progress=False)
    resumed = run_study(path, tmp_path / "out", resume=True, progress=False)
    assert (resumed.ran, resumed.units) == (1, 3)
    same_rows(resumed.rows, whole.rows)
    again = run_study(path, tmp_path / "out", resume=True, progress=False)
    assert again.ran == 0


def test_resume_refuses_a_changed_study_naming_what_changed(tmp_path):
    path = write(tmp_path)
    run_study(path, tmp_path / "out", progress=False)
    path.write_text(STUDY.replace("seed: 7", "seed: 9"))
    with pytest.raises(BlocksimError) as err:
        run_study(path, tmp_path / "out", resume=True, progress=False)
    assert str(err.value) == (f"--resume: {tmp_path / 'out'} holds another study: seed changed "
                              "since it was started; nothing was run (run the changed study in "
                              "a new folder)")


# ----------------------------------------------------------------------------- executors

def test_the_processes_executor_gives_the_rows_of_the_threads_one(tmp_path):
    path = write(tmp_path)
    threads = run_study(path, tmp_path / "threads", progress=False)
    procs = run_study(path, tmp_path / "procs", executor="processes", workers=2, progress=False)
    assert procs.where == "processes: 2 worker processes"
    same_rows(procs.rows, threads.rows)


@pytest.mark.dask
def test_the_dask_executor_on_a_local_cluster_gives_the_rows_of_the_threads_one(tmp_path):
    pytest.importorskip("distributed", reason="the dask executor needs pip install -e .[dask]")
    path = write(tmp_path)
    threads = run_study(path, tmp_path / "threads", progress=False)
    dask = run_study(path, tmp_path / "dask", executor="dask", workers=2, progress=False,
                     processes=False)
    assert dask.where.startswith("dask: a LocalCluster of 2 threads on loopback (2 workers")
    same_rows(dask.rows, threads.rows)


# ----------------------------------------------------------------------------- resilience

SLOW = STUDY.replace("unit_size: 3", "unit_size: 1").replace(
    "seed: 7", "seed: 7\nset: {simulation.stop_time: 6}")


def kill_a_worker_at_half_way(out: Path, units: int, workers) -> list:
    """Wait until half the units have parts in `out`, then kill -9 one of the processes that
    `workers()` lists; returns the parts there were when it killed (empty: none was found)."""
    import os
    import signal
    import time
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        parts = sorted((out / "parts").glob("unit-*.parquet")) if (out / "parts").is_dir() else []
        if len(parts) >= units // 2:
            pids = workers()
            if pids:
                os.kill(pids[0], signal.SIGKILL)
                return parts
        time.sleep(0.02)
    return []


def run_with_a_kill(path, out, executor, workers, **kw):
    import threading
    result, killed = {}, {}

    def study():
        result["run"] = run_study(path, out, executor=executor, workers=2, progress=False, **kw)
    thread = threading.Thread(target=study)
    thread.start()
    killed["parts"] = kill_a_worker_at_half_way(out, 8, workers)
    thread.join(timeout=300)
    assert not thread.is_alive()
    return result["run"], killed["parts"]


def _workers():
    """This process's children that run spawned Python (not a resource tracker): the pool's
    workers, or a LocalCluster's (whose nannies run in this process)."""
    def find():
        import os

        import psutil
        found = []
        for proc in psutil.Process().children(recursive=True):
            try:
                line = " ".join(proc.cmdline())
                if proc.ppid() == os.getpid() and "spawn_main" in line \
                        and "resource_tracker" not in line:
                    found.append(proc.pid)
            except psutil.Error:
                continue
        return found
    return find


def test_a_worker_process_killed_half_way_loses_only_its_unit(tmp_path):
    pytest.importorskip("psutil")
    path = write(tmp_path, SLOW)
    whole = run_study(path, tmp_path / "whole", progress=False)
    run, parts = run_with_a_kill(path, tmp_path / "out", "processes", _workers())
    assert 4 <= len(parts) < 8, "the kill did not come half-way"
    assert "made again 1 time(s) after a worker died" in run.where
    same_rows(run.rows, whole.rows)


@pytest.mark.dask
def test_a_dask_worker_killed_half_way_on_a_loopback_cluster_loses_nothing(tmp_path):
    pytest.importorskip("distributed", reason="the dask executor needs pip install -e .[dask]")
    path = write(tmp_path, SLOW)
    whole = run_study(path, tmp_path / "whole", progress=False)
    run, parts = run_with_a_kill(path, tmp_path / "out", "dask", _workers())
    assert 4 <= len(parts) < 8, "the kill did not come half-way"
    assert run.where.startswith("dask: a LocalCluster of 2 processes on loopback")
    same_rows(run.rows, whole.rows)


@pytest.mark.parametrize("name", ["w1_monte_carlo", "w1_sobol", "w1_tune"])
def test_the_w1_example_studies_load_and_fit_their_diagram(name):
    from blocksim.study.units import UnitRunner
    study = load_study(ROOT / "examples" / "sweeps" / f"{name}.yaml")
    UnitRunner(study).check()
    assert (study.members, study.optimize is not None) == {
        "w1_monte_carlo": (10000, False), "w1_sobol": (1280, False), "w1_tune": (1, True)}[name]


def test_the_figures_of_a_grid_study_and_of_a_saltelli_one(tmp_path):
    path = write(tmp_path, "diagram: msd.yaml\nsamples: 2\nfactors:\n  x.x0: [0.5, 1.0, 1.5]\n"
                           "  parameters.k: [2.0, 4.0]\n  damper.gain: {uniform: [-0.5, -0.3]}\n")
    run_study(path, tmp_path / "grid", progress=False, figures=True)
    assert sorted(p.name for p in (tmp_path / "grid" / "figures").iterdir()) == [
        "distributions.png", "distributions.svg", "heat_map.png", "heat_map.svg"]
    pytest.importorskip("SALib")
    path = write(tmp_path, "diagram: msd.yaml\nsampling: saltelli\nsamples: 4\nfactors:\n"
                           "  x.x0: {uniform: [0.5, 1.5]}\n  parameters.k: {uniform: [2.0, 6.0]}\n",
                 name="salt.yaml")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_study(path, tmp_path / "salt", progress=False, figures=True)
    assert sorted(p.name for p in (tmp_path / "salt" / "figures").iterdir()) == [
        "distributions.png", "distributions.svg", "sobol_indices.png", "sobol_indices.svg"]


def test_the_sweep_command_runs_prints_its_table_and_replays_a_member(tmp_path):
    path = write(tmp_path)

    def sweep(*extra):
        return subprocess.run([sys.executable, str(ROOT / "cli.py"), "sweep", str(path), "--out",
                               str(tmp_path / "out"), *extra], capture_output=True, text=True,
                              timeout=300, cwd=ROOT)
    done = sweep("--no-figures")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("3 of 3 units run now (threads: in this process); ")
    assert lines[1].startswith("compiled: one node type, ") and \
        lines[1].endswith(": compiled once, on the driver")
    assert lines[2] == "8 members: 8 ok"
    assert lines[3].split() == ["metric", "min", "median", "p99", "max"]
    assert lines[-1] == f"wrote {tmp_path / 'out' / 'summary.parquet'}"
    again = sweep("--replay", "6")
    assert again.returncode == 0, again.stderr
    assert again.stdout == ("member 6: its row again, bit for bit (every factor, seed, status and "
                            "metric column; this study promises bit for bit)\n")


def test_the_study_files_of_docs_studies_md_fit_their_diagrams(tmp_path):
    """Each ```yaml block of docs/studies.md, put in a folder beside examples/'s files as the
    docs' relative paths expect, loads and fits its diagram."""
    import re

    from blocksim.study.units import UnitRunner
    text = (ROOT / "docs" / "studies.md").read_text()
    blocks = re.findall(r"^```yaml\n(.*?)^```", text, re.S | re.M)
    assert len(blocks) == 2
    for name in ("model_error_sweep.yaml", "sweeps"):
        (tmp_path / name).symlink_to(ROOT / "examples" / name)
    (tmp_path / "studies").mkdir()
    for k, block in enumerate(blocks):
        path = tmp_path / "studies" / f"doc{k}.yaml"
        path.write_text(block)
        UnitRunner(load_study(path)).check()


def test_kill_9_of_the_driver_then_resume_runs_only_the_missing_units(tmp_path):
    import os
    import signal
    import time
    path = write(tmp_path, SLOW)
    out = tmp_path / "out"
    driver = subprocess.Popen([sys.executable, str(ROOT / "cli.py"), "sweep", str(path), "--out",
                               str(out), "--no-figures"], cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and driver.poll() is None:
        if (out / "parts").is_dir() and len(list((out / "parts").glob("unit-*.parquet"))) >= 3:
            break
        time.sleep(0.02)
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait(timeout=60)
    done = len(list((out / "parts").glob("unit-*.parquet")))
    assert 3 <= done < 8 and not (out / "summary.parquet").exists()
    resumed = run_study(path, out, resume=True, progress=False)
    assert (resumed.ran, resumed.units) == (8 - done, 8)
    same_rows(resumed.rows, run_study(path, tmp_path / "whole", progress=False).rows)


# ----------------------------------------------------------------------------- node types

COMPILED = STUDY.replace("seed: 7", "seed: 7\nset: {simulation.mode: compiled}")


def cpus_in_numba_cache() -> list[set]:
    """The CPU names of each compiled fixed-step loop in numba's cache index (one set per
    generated module's run_fixed, run_fixed_one or run_fixed_chunk, whichever a run took: a
    unit's batch runs in chunks): which targets it was compiled for."""
    import pickle

    from blocksim.engine.numba_backend import cache_dir
    found = []
    for index in (cache_dir() / "__pycache__").glob("*.run_fixed*-*.nbi"):
        with open(index, "rb") as fh:
            pickle.load(fh)
            _, overloads = pickle.loads(fh.read())
        found.append({key[1][1] for key in overloads})
    return found


@pytest.mark.dask
def test_a_cluster_of_two_cpu_types_compiles_once_per_type_and_says_which(tmp_path):
    """Two Dask worker processes on loopback, one of them made another node type by numba's
    NUMBA_CPU_NAME (the generic target): the driver compiles for its own CPU, the generic worker
    once for its type, and the manifest and the run say so."""
    pytest.importorskip("distributed", reason="the dask executor needs pip install -e .[dask]")
    import llvmlite.binding as ll
    from distributed import Nanny, Scheduler, SpecCluster
    path = write(tmp_path, COMPILED)
    threads = run_study(path, tmp_path / "threads", progress=False)
    workers = {name: {"cls": Nanny, "options": {"nthreads": 1, "host": "127.0.0.1", "env": env}}
               for name, env in (("a", {}), ("b", {"NUMBA_CPU_NAME": "generic"}))}
    with SpecCluster(workers=workers, scheduler={"cls": Scheduler, "options": {
            "dashboard_address": None, "host": "127.0.0.1"}}) as cluster:
        b = next(w.worker_address for name, w in cluster.workers.items() if name == "b")
        run = run_study(path, tmp_path / "dask", scheduler=cluster.scheduler_address,
                        progress=False)
    plan = json.loads((tmp_path / "dask" / "manifest.json").read_text())["runs"][-1]["compiled"]
    host = ll.get_host_cpu_name()
    assert sorted((p["cpu"], p["on"], p["workers"]) for p in plan) == sorted(
        [(host, "the driver", 1), ("generic", f"worker {b}", 1)])
    assert run.compiled.startswith("2 node types, compiled once each: ")
    assert {host, "generic"} in cpus_in_numba_cache()
    same_rows(run.rows, threads.rows)


def test_cpu_generic_compiles_once_for_every_worker_process_and_says_so(tmp_path):
    path = write(tmp_path, COMPILED.replace("unit_size: 3", "unit_size: 3\ncpu: generic"))
    threads = run_study(path, tmp_path / "threads", progress=False, cpu="native")
    run = run_study(path, tmp_path / "procs", executor="processes", workers=2, progress=False)
    assert run.compiled.startswith("one node type, generic (")
    assert run.compiled.endswith(": compiled once, on a worker process")
    runs = json.loads((tmp_path / "procs" / "manifest.json").read_text())["runs"]
    assert (runs[-1]["cpu"], [p["cpu"] for p in runs[-1]["compiled"]]) == ("generic", ["generic"])
    same_rows(run.rows, threads.rows)


def test_workers_of_another_blocksim_version_or_cpu_are_refused():
    from blocksim.study.nodes import check_workers, groups, node_type
    me = node_type()
    other = {**me, "blocksim": "0.0.9"}
    with pytest.raises(BlocksimError, match=r"workers run another blocksim version than this "
                       r"driver's .*: worker b \(0.0.9\); install the same version"):
        check_workers({"worker a": me, "worker b": other}, generic=False)
    with pytest.raises(BlocksimError, match="cpu: generic, but these workers compile for their "
                       "own CPU .*: worker a; start them with NUMBA_CPU_NAME=generic"):
        check_workers({"worker a": me}, generic=True)
    elsewhere = {**me, "cache": "/elsewhere"}
    assert groups({"c": me, "a": me, "b": elsewhere}) == [["a", "c"], ["b"]]
