"""`identify` checks its config, robots, diagrams and data logs before any slow step: a wrong
input is one error naming the file and line (config, robot file, CSV) or the file and key (NPZ),
found in well under a second, and `python cli.py identify` prints it and exits 1."""
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from blocksim.cli import main
from blocksim.errors import DiagramFileError
from blocksim.identification import pipeline
from blocksim.identification.config import IdentifyConfigError
from blocksim.identification.datalog import DataLogError
from blocksim.identification.inputs import load_inputs
from blocksim.identification.processing import ProcessingError
from blocksim.models.robot_file import RobotFileError

ROOT = Path(__file__).resolve().parents[1]

CONFIG = """\
identify: 1
name: logged two-link
robot:
  cad: two_link
model: {rotor_inertia: false, friction: coulomb_viscous}
data:
  log: train.npz
  period: 2.0
  skip_periods: 0
processing: {cutoff: 10.0, decimate: 5}
validation: {log: check.npz, period: 2.0}
"""
LOG_LINE = 7           # the line of `log: train.npz`
EXCITED = """\
identify: 1
name: simulated two-link
robot:
  cad: two_link
  plant: two_link
model: {rotor_inertia: false, friction: coulomb_viscous}
excitation:
  frequency: 0.5
  harmonics: 4
  q_min: [-1.5, -2.0]
  q_max: [1.5, 2.0]
  qd_max: 2.0
  qdd_max: 8.0
  max_iter: 5
data:
  diagram: run.yaml
processing: {cutoff: 10.0, decimate: 5}
"""
"""A simulated run's config, for the excitation keys (checked before its diagram is read)."""
EXCITATION = "excitation: {q_min: [-1.5, -2.0], q_max: [1.5, 2.0]}\n"
"""The limits of a simulated run's excitation (the two_link preset has none)."""


def log_arrays(N=1500, n=2, dt=2e-3):
    """A smooth periodic record (period 2 s at dt = 2 ms): t (N,), q and tau (N, n)."""
    t = np.arange(N) * dt
    w = np.pi * np.arange(1, n + 1)[None, :]
    return t, 0.5 * np.sin(w * t[:, None]), 3.0 * np.cos(w * t[:, None])


def write_csv(path, t, q, tau, header="t,q1,q2,tau1,tau2"):
    rows = [header] + [",".join(repr(float(v)) for v in row) for row in np.column_stack([t, q, tau])]
    path.write_text("\n".join(rows) + "\n")


@pytest.fixture
def folder(tmp_path):
    t, q, tau = log_arrays()
    np.savez(tmp_path / "train.npz", t=t, q=q, tau=tau)
    np.savez(tmp_path / "check.npz", t=t, q=q, tau=tau)
    (tmp_path / "cfg.yaml").write_text(CONFIG)
    return tmp_path


@pytest.fixture
def no_slow_steps(monkeypatch):
    """The base parameters and the excitation optimisation are not reached (they would fail)."""
    def slow(*args, **kwargs):
        raise AssertionError("a slow step ran before the inputs were checked")
    monkeypatch.setattr(pipeline, "base_parameters", slow)
    monkeypatch.setattr(pipeline, "optimise_excitation", slow)


def fails(folder, cls, text=None):
    """Run the pipeline on folder/cfg.yaml (with `text` as the config when given) and return the
    error of class `cls` and the seconds it took to come."""
    cfg = folder / "cfg.yaml"
    if text is not None:
        cfg.write_text(text)
    start = time.perf_counter()
    with pytest.raises(cls) as info:
        pipeline.run(cfg, folder / "out", echo=lambda *_: None)
    seconds = time.perf_counter() - start
    assert not (folder / "out").exists()
    return info.value, seconds


def edit(old, new, text=CONFIG):
    assert old in text
    return text.replace(old, new, 1)


def test_the_good_inputs_load_processed_in_well_under_a_second(folder):
    load_inputs(folder / "cfg.yaml")                    # imports and first calls out of the way
    start = time.perf_counter()
    inputs = load_inputs(folder / "cfg.yaml")
    assert time.perf_counter() - start < 0.5
    assert inputs.model.n == 2 and inputs.cad.name == "two_link" and inputs.plant is None
    assert inputs.data.q.shape == (200, 2) and inputs.data.periods == 1       # 1000 samples / 5
    assert inputs.validation.q.shape == (200, 2)
    assert "links" in inputs.template


# ------------------------------------------------------------------- the config

@pytest.mark.parametrize("base, old, new, line, message", [
    (EXCITED, "  harmonics: 4\n", "  harmonics: 4\n  harmonics: 5\n", 10, "duplicate key 'harmonics' (first written at line 9)"),
    (EXCITED, "  frequency: 0.5", "  frequency: fast", 8, "excitation.frequency must be a number, got the text 'fast'"),
    (EXCITED, "  frequency: 0.5", "  frequency: -0.5", 8, "excitation.frequency must be > 0, got -0.5"),
    (EXCITED, "  frequency: 0.5", "  frequency: .nan", 8, "excitation.frequency must be a finite number"),
    (EXCITED, "  max_iter: 5", "  max_iter: 2.5", 14, "excitation.max_iter must be a whole number, got the number 2.5"),
    (EXCITED, "  harmonics: 4", "  harmonics: [4]", 9, "excitation.harmonics must be a whole number, got a list of 1"),
    (EXCITED, "  q_min: [-1.5, -2.0]", "  q_mn: [-1.5, -2.0]", 10, "unknown excitation key 'q_mn' (did you mean 'q_min'?)"),
    (EXCITED, "  q_max: [1.5, 2.0]", "  q_max: [1.5, 2.0, 1.0]", 11, "excitation.q_max has 3 values; robot 'two_link' has 2 joints"),
    (EXCITED, "  q_max: [1.5, 2.0]", "  q_max: [1.5, -2.5]", 10, "q_min must lie below q_max for every joint; joint 2: -2 >= -2.5"),
    (EXCITED, "  qd_max: 2.0", "  qd_max: [2.0, x]", 12, "excitation.qd_max[1] must be a number, got the text 'x'"),
    (CONFIG, "model: {rotor_inertia: false,", "model: {rotor_inertia: no,", 5, "model.rotor_inertia must be true or false, got the text 'no'"),
    (CONFIG, "friction: coulomb_viscous}", "friction: coulomb}", 5, "did you mean 'coulomb_viscous'?"),
    (CONFIG, "friction: coulomb_viscous}", "friction: coulomb_viscous, friction_smoothing: wide}", 5,
     "model.friction_smoothing must be a number >= 0 (rad/s) or 'estimate', got the text 'wide'"),
    (CONFIG, "friction: coulomb_viscous}", "friction: coulomb_viscous, friction_smoothing: -0.1}", 5,
     "model.friction_smoothing must be >= 0, got -0.1"),
    (CONFIG, "processing: {cutoff: 10.0", "estimation: {friction_smoothing: 0.01}\nprocessing: {cutoff: 10.0", 10,
     "estimation.friction_smoothing is now model.friction_smoothing"),
    (CONFIG, "processing: {cutoff: 10.0", "procesing: {cutoff: 10.0", 10, "unknown identification config key 'procesing'"),
    (CONFIG, "identify: 1", "identify: 2", 1, "identify: 2 is not a config format this version reads"),
    (CONFIG, "  skip_periods: 0\n", "  skip_periods: 0\n  diagram: run.yaml\n", 10, "data.diagram does not go with data.log"),
    (CONFIG, "  skip_periods: 0\n", "  skip_periods: 0\n  periods: 3\n", 10, "data.periods does not go with data.log"),
    (CONFIG, "validation: {log: check.npz, period: 2.0}\n", "validation: {log: check.npz, period: 2.0}\n"
     "excitation: {frequency: 0.5}\n", 12, "excitation does not go with data.log: the logged trajectory is the excitation"),
    (CONFIG, "validation: {log: check.npz, period: 2.0}", "validation: {frequency: 0.3}", 11,
     "validation needs 'log' when the data come from a log"),
    (CONFIG, "validation: {log: check.npz, period: 2.0}", "tracking: {diagram: t.yaml}", 11,
     "tracking needs robot.plant"),
    (CONFIG, "  cad: two_link", "  cad: two_lnk", 4, "robot.cad: 'two_lnk' is neither a preset (did you mean 'two_link'?)"),
    (CONFIG, "  cad: two_link", "  cad: [two_link]", 4, "robot.cad must be a text, got a list of 1"),
    (CONFIG, "robot:\n  cad: two_link\n", "robot:\n  plant: two_link\n", 3, "robot needs 'cad'"),
    (CONFIG, "  period: 2.0\n", "  period: 0\n", 8, "data.period must be > 0, got 0"),
])
def test_a_bad_config_value_is_reported_at_its_line(folder, no_slow_steps, base, old, new, line,
                                                    message):
    cfg = folder / "cfg.yaml"
    err, seconds = fails(folder, IdentifyConfigError, edit(old, new, base))
    assert err.where.file == str(cfg) and err.where.line == line, str(err)
    assert message in str(err) and str(err).startswith(f"{cfg}:{line}: ")
    assert seconds < 0.5


def test_a_config_that_is_not_utf8_or_not_yaml(folder, no_slow_steps):
    cfg = folder / "cfg.yaml"
    cfg.write_bytes(CONFIG.replace("logged two-link", "Zwei-Gelenk-Arm, gepr\xfcft").encode("latin-1"))
    err, _ = fails(folder, IdentifyConfigError)
    assert str(err).startswith(f"{cfg}:2: not UTF-8 text")
    err, _ = fails(folder, IdentifyConfigError, edit("  period: 2.0", "  period: [2.0"))
    assert str(err).startswith(f"{cfg}:") and "malformed YAML" in str(err)
    err, _ = fails(folder, IdentifyConfigError, "- identify\n- robot\n")
    assert str(err) == f"{cfg}:1: an identification config is a mapping (identify: 1, robot: ...), got a list of 2"


def test_a_bad_cad_robot_file_is_reported_in_that_file(folder, no_slow_steps):
    robot = folder / "arm.yaml"
    robot.write_text("name: arm\nlinks:\n  - {a: 1.0, mass: heavy}\n  - {a: 0.8, mass: 1.0}\n")
    err, _ = fails(folder, RobotFileError, edit("  cad: two_link", "  cad: arm.yaml"))
    assert str(err) == f"{robot}:3: link 1: mass must be a number, got the text 'heavy'"
    err, _ = fails(folder, RobotFileError, edit("  cad: two_link", "  cad: parts/arm.yaml"))
    assert str(err) == (f"{folder / 'parts' / 'arm.yaml'}: cannot read the robot file: no such folder "
                        f"{folder / 'parts'} (robot.cad at {folder / 'cfg.yaml'}:4)")


def test_a_diagram_without_the_blocks_identify_sets_is_refused_before_the_slow_steps(folder, no_slow_steps):
    (folder / "run.yaml").write_text("blocksim: 1\nblocks:\n  ref: {type: Constant, value: [0.0, 0.0]}\n"
                                     "connections: []\n")
    text = edit("  cad: two_link\n", "  cad: two_link\n  plant: two_link\n")
    text = edit("coulomb_viscous}\n", "coulomb_viscous}\n" + EXCITATION, text)
    text = edit("  log: train.npz\n  period: 2.0\n  skip_periods: 0\n", "  diagram: run.yaml\n", text)
    text = edit("validation: {log: check.npz, period: 2.0}\n", "", text)
    err, _ = fails(folder, IdentifyConfigError, text)
    assert str(err) == (f"{folder / 'cfg.yaml'}:9: data.diagram: the diagram has no block 'plant', "
                        "'u' (identify uses blocks ref, plant, u)")
    err, _ = fails(folder, DiagramFileError, edit("diagram: run.yaml", "diagram: gone.yaml", text))
    assert str(err) == f"{folder / 'gone.yaml'}: cannot read the diagram file: no such file (data.diagram at {folder / 'cfg.yaml'}:9)"


def simulated_config(folder):
    """The shipped two-link excitation diagram and robots in `folder`, and a config of a simulated
    data run with them."""
    for name in ("excitation_two_link.yaml", "two_link_cad.yaml", "two_link_true.yaml"):
        (folder / name).write_text((ROOT / "examples" / "identification" / name).read_text())
    text = edit("  cad: two_link\n", "  cad: two_link_cad.yaml\n  plant: two_link_true.yaml\n")
    text = edit("coulomb_viscous}\n", "coulomb_viscous}\n" + EXCITATION, text)
    text = edit("  log: train.npz\n  period: 2.0\n  skip_periods: 0\n", "  diagram: excitation_two_link.yaml\n", text)
    return edit("validation: {log: check.npz, period: 2.0}\n", "", text)


def test_the_data_run_diagram_must_log_what_identify_reads_at_a_rate_above_the_cutoff(folder, no_slow_steps):
    text = simulated_config(folder)
    (folder / "cfg.yaml").write_text(text)
    assert load_inputs(folder / "cfg.yaml").data is None          # the shipped diagram passes
    diagram = folder / "excitation_two_link.yaml"
    diagram.write_text(diagram.read_text().replace("signals: [ref.q, plant.q, u.out]", "signals: [ref.q, plant.q]"))
    err, _ = fails(folder, IdentifyConfigError)
    assert str(err) == (f"{folder / 'cfg.yaml'}:9: data.diagram: the diagram does not log u.out "
                        "(identify reads plant.q, u.out)")
    diagram.write_text((ROOT / "examples" / "identification" / "excitation_two_link.yaml").read_text())
    err, _ = fails(folder, IdentifyConfigError, edit("{cutoff: 10.0, decimate: 5}", "{cutoff: 600, decimate: 5}", text))
    assert str(err) == (f"{folder / 'cfg.yaml'}:10: processing.cutoff 600 Hz must lie below the Nyquist "
                        "frequency 500 Hz of the data run's log (data.diagram)")


# ------------------------------------------------------------------- operating-system refusals

def test_os_errors_on_reading_the_config_are_path_and_reason(tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    cases = {tmp_path / "none" / "cfg.yaml": f"no such folder {tmp_path / 'none'}",
             tmp_path / "afile" / "cfg.yaml": f"{tmp_path / 'afile'} is a file, not a folder",
             tmp_path: "is a folder, not a file"}
    for path, reason in cases.items():
        assert main(["identify", str(path), "--out", str(tmp_path / "out")]) == 1
        assert capsys.readouterr().err == f"error: {path}: cannot read the identification config: {reason}\n"
        assert not (tmp_path / "out").exists()


def test_a_data_log_in_a_missing_folder_names_the_config_line(folder, no_slow_steps):
    err, _ = fails(folder, DataLogError, edit("log: train.npz", "log: logs/train.npz"))
    assert str(err) == (f"{folder / 'logs' / 'train.npz'}: cannot read the data log: no such folder "
                        f"{folder / 'logs'} (data.log at {folder / 'cfg.yaml'}:{LOG_LINE})")


# ------------------------------------------------------------------- the data log

def npz_case(folder, **arrays):
    path = folder / "bad.npz"
    np.savez(path, **arrays)
    return path


T, Q, TAU = log_arrays()
Q_NAN = Q.copy()
Q_NAN[100, 1] = np.nan
T_UNEVEN = T.copy()
T_UNEVEN[10:] += 1e-4


@pytest.mark.parametrize("arrays, message", [
    (dict(t=T, q=Q), "no key 'tau' in the archive (keys: t, q; a log holds t, q, tau)"),
    (dict(t=T, q=Q_NAN, tau=TAU), "key 'q', column 2: sample 101 (t = 0.2 s) is nan, not a finite number"),
    (dict(t=T, q=Q[:, :1], tau=TAU[:, :1]), "key 'q': 1 column of q (and of tau), but the robot has 2 joints"),
    (dict(t=T, q=Q, tau=TAU[:, :1]), "q has 2 columns and tau 1"),
    (dict(t=T, q=Q[:-1], tau=TAU), "t, q and tau must have one row per sample; got 1500, 1499 and 1500"),
    (dict(t=T, q=np.array([{"a": 1}], dtype=object), tau=TAU), "key 'q' holds Python objects (pickled)"),
    (dict(t=T, q=Q.astype(str), tau=TAU), "key 'q' holds <U"),
    (dict(t=T[:1], q=Q[:1], tau=TAU[:1]), "1 sample; a log needs at least 3"),
    (dict(t=T_UNEVEN, q=Q, tau=TAU), "samples must be uniformly spaced in time; the step from sample 10 to 11"),
    (dict(t=T[::-1].copy(), q=Q, tau=TAU), "time must increase"),
    (dict(t=T[:, None], q=Q, tau=TAU), "key 't' must be one value per sample"),
])
def test_a_bad_npz_log_names_file_and_key_in_well_under_a_second(folder, no_slow_steps, arrays, message):
    path = npz_case(folder, **arrays)
    err, seconds = fails(folder, DataLogError, edit("log: train.npz", "log: bad.npz"))
    assert str(err).startswith(f"{path}: ") and message in str(err), str(err)
    assert str(err).endswith(f"(data.log at {folder / 'cfg.yaml'}:{LOG_LINE})")
    assert seconds < 0.5


def test_a_file_that_is_no_npz_archive_is_never_unpickled(folder, no_slow_steps):
    import pickle
    (folder / "bad.npz").write_bytes(pickle.dumps({"t": T, "q": Q, "tau": TAU}))
    err, _ = fails(folder, DataLogError, edit("log: train.npz", "log: bad.npz"))
    assert "not an NPZ archive" in str(err)
    (folder / "bad.npz").write_bytes(b"PK\x03\x04 truncated")
    err, _ = fails(folder, DataLogError, edit("log: train.npz", "log: bad.npz"))
    assert str(err).startswith(f"{folder / 'bad.npz'}: not")


def set_cell(row, column, value):
    def change(rows):
        cells = rows[row].split(",")
        cells[column] = value
        rows[row] = ",".join(cells)
    return change


def set_row(row, text):
    def change(rows):
        rows[row] = text if row == 0 else ",".join(rows[row].split(",")[:text])
    return change


@pytest.mark.parametrize("change, line, message", [
    (set_cell(51, 2, "x"), 52, "column 'q2': 'x' is not a number"),
    (set_cell(30, 4, "inf"), 31, "column 'tau2': sample 30 (t = 0.058 s) is inf, not a finite number"),
    (set_cell(7, 0, "0.5"), 8, "samples must be uniformly spaced in time; the step from sample 6 to 7"),
    (set_row(20, 4), 21, "4 values in this row, the header has 5 columns"),
    (set_row(0, "t,q1,q2,tau1"), 1, "the CSV header must be t, q1..qn, tau1..taun"),
    (set_row(0, "time,q1,q2,tau1,tau2"), 1, "the CSV header must be t, q1..qn, tau1..taun"),
])
def test_a_bad_csv_log_names_file_line_and_column(folder, no_slow_steps, change, line, message):
    path = folder / "bad.csv"
    write_csv(path, T, Q, TAU)
    rows = path.read_text().splitlines()
    change(rows)
    path.write_text("\n".join(rows) + "\n")
    err, seconds = fails(folder, DataLogError, edit("log: train.npz", "log: bad.csv"))
    assert str(err).startswith(f"{path}:{line}: ") and message in str(err), str(err)
    assert seconds < 0.5


def test_a_csv_log_with_one_joint_too_few_names_the_header(folder, no_slow_steps):
    path = folder / "bad.csv"
    write_csv(path, T, Q[:, :1], TAU[:, :1], header="t,q1,tau1")
    err, _ = fails(folder, DataLogError, edit("log: train.npz", "log: bad.csv"))
    assert str(err).startswith(f"{path}:1: columns 'q1': 1 column of q (and of tau), but the robot has 2")


def test_a_good_csv_log_reads_as_the_npz(folder):
    write_csv(folder / "train.csv", T, Q, TAU)
    a = load_inputs(folder / "cfg.yaml").data
    (folder / "cfg.yaml").write_text(edit("log: train.npz", "log: train.csv"))
    b = load_inputs(folder / "cfg.yaml").data
    np.testing.assert_array_equal(a.q, b.q)
    np.testing.assert_array_equal(a.tau, b.tau)


@pytest.mark.parametrize("old, new, cls, line, message", [
    ("  period: 2.0\n", "  period: 2.001\n", ProcessingError, 8, "data.period: the period 2.001 s is not a whole number of samples"),
    ("  period: 2.0\n", "  period: 4.0\n", ProcessingError, 8, "data.period: the log holds 3 s, fewer than 0 + 1 periods of 4.0 s"),
    ("  skip_periods: 0\n", "  skip_periods: 1\n", ProcessingError, 9, "data.skip_periods: the log holds 3 s, fewer than 1 + 1"),
    ("{cutoff: 10.0, decimate: 5}", "{cutoff: 300.0, decimate: 5}", ProcessingError, 10,
     "processing.cutoff: filter cutoff 300.0 Hz must lie below the Nyquist frequency 250 Hz"),
    ("{cutoff: 10.0, decimate: 5}", "{cutoff: 10.0, state_cutoff: 260, decimate: 5}", ProcessingError, 10,
     "processing.state_cutoff: filter cutoff 260 Hz must lie below the Nyquist frequency 250 Hz"),
])
def test_processing_options_that_do_not_fit_the_log_name_their_key(folder, no_slow_steps, old, new, cls,
                                                                    line, message):
    err, seconds = fails(folder, cls, edit(old, new))
    assert str(err).startswith(f"{folder / 'cfg.yaml'}:{line}: ") and message in str(err), str(err)
    assert str(err).endswith(f"({folder / 'train.npz'})")
    assert seconds < 0.5


def test_a_log_too_short_for_the_parameters_is_refused_before_the_estimation(folder, no_slow_steps):
    err, _ = fails(folder, DataLogError, edit("{cutoff: 10.0, decimate: 5}", "{cutoff: 10.0, decimate: 100}"))
    assert str(err) == (f"{folder / 'train.npz'}: after processing (decimate 100) the log gives 10 samples "
                        "x 2 joints = 20 torque equations, not more than the 26 parameters to identify: "
                        "give a longer log or a smaller processing.decimate "
                        f"(data.log at {folder / 'cfg.yaml'}:{LOG_LINE})")


def test_the_validation_log_is_checked_too(folder, no_slow_steps):
    np.savez(folder / "check.npz", t=T, q=Q_NAN, tau=TAU)
    err, _ = fails(folder, DataLogError)
    assert str(err).startswith(f"{folder / 'check.npz'}: key 'q', column 2: sample 101")
    assert str(err).endswith(f"(validation.log at {folder / 'cfg.yaml'}:11)")


# ------------------------------------------------------------------- the command line

def test_cli_identify_on_a_bad_log_prints_one_line_and_exits_1(folder, capsys):
    np.savez(folder / "train.npz", t=T, q=Q_NAN, tau=TAU)
    out = folder / "out"
    assert main(["identify", str(folder / "cfg.yaml"), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert err == (f"error: {folder / 'train.npz'}: key 'q', column 2: sample 101 (t = 0.2 s) is nan, "
                   f"not a finite number (data.log at {folder / 'cfg.yaml'}:{LOG_LINE})\n")
    assert not out.exists() and not [p for p in folder.iterdir() if p.name.startswith(".out")]


def test_cli_identify_with_a_bad_config_value_has_no_traceback(folder):
    (folder / "cfg.yaml").write_text(edit("  period: 2.0", "  period: fast"))
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), "identify", str(folder / "cfg.yaml"),
                           "--out", str(folder / "out")], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert proc.returncode == 1
    assert proc.stderr == (f"error: {folder / 'cfg.yaml'}:8: data.period must be a number, "
                           "got the text 'fast'\n")
    assert time.perf_counter() - start < 60


def test_the_shipped_identification_configs_pass_the_checks():
    for name in ("identify_two_link.yaml", "identify_kr6.yaml"):
        path = ROOT / "examples" / name
        inputs = load_inputs(path)
        assert inputs.plant is not None and inputs.data is None
        assert yaml.safe_load(path.read_text())["robot"]["cad"].endswith("_cad.yaml")


# ------------------------------------------------------------------- the config reference

def test_docs_identify_md_is_the_config_reference():
    from blocksim.identification.config import reference_markdown
    path = ROOT / "docs" / "identify.md"
    assert path.read_text() == reference_markdown(), (
        "docs/identify.md is out of date: run `python cli.py identify --markdown --out docs/identify.md`")


def test_every_config_key_is_documented_with_unit_default_and_meaning(capsys):
    from blocksim.identification.config import MEASUREMENT, SECTIONS, reference_markdown
    text = reference_markdown()
    keys = [(f"{section}.{key}", entry) for section, body in SECTIONS.items()
            for key, entry in body.items()]
    keys += [(f"data.measurement.{key}", entry) for key, entry in MEASUREMENT.items()]
    assert len(keys) == 69
    for name, entry in keys:
        assert entry.unit and entry.default and len(entry.doc) > 15, name
        assert f"| `{name}` | {entry.unit} | {entry.default} | {entry.doc} |" in text
    assert "| `model.friction_smoothing` | rad/s | the CAD file's |" in text
    assert main(["identify", "--markdown"]) == 0
    assert capsys.readouterr().out == text
    assert main(["identify"]) == 1
    assert "identify needs a CONFIG and --out DIR" in capsys.readouterr().err
