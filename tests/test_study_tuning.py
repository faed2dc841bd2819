"""Tuning (optimize: in a study file): differential evolution in whole generations, one batch
run each, under limits on other metrics; the answer as a variant the diagram takes."""
import math

import pytest

import blocksim
from blocksim.study import StudyFileError, load_study, run_study
from blocksim.study.tuning import PENALTY, score

from test_study import DIAGRAM, write

# no noise (variance 0), and the metrics of a step response: rms of x (m), peak of |v| (m/s)
QUIET = DIAGRAM.replace("variance: 0.01", "variance: 0.0").replace(
    "  - {name: peak_x, kind: peak, signal: x.out}\n  - {name: rms_v, kind: rms, signal: v.out}",
    "  - {name: rms_x, kind: rms, signal: x.out}\n  - {name: peak_v, kind: peak, signal: v.out}")

TUNE = """\
study: 1
diagram: msd.yaml
seed: 4
set: {simulation.stop_time: 3}
optimize:
  minimize: rms_x[0]
  parameters:
    damper.gain: [-8.0, -0.1]     # N s/m, minus the damping
  subject_to:
    peak_v[0]: {max: 1.2}         # m/s
  popsize: 6
  generations: 4
"""


def test_tuning_finds_the_best_feasible_candidate_one_batch_run_per_generation(tmp_path):
    path = write(tmp_path, TUNE, QUIET)
    run = run_study(path, tmp_path / "out", progress=False)
    tuned = run.tuned
    assert tuned.batches == 5                       # the first population and 4 generations
    assert len(run.rows) == 5 * 6
    assert [r["member"] for r in run.rows] == list(range(30))
    feasible = [r for r in run.rows if r["peak_v[0]"] <= 1.2]
    assert tuned.best == min(feasible, key=lambda r: r["rms_x[0]"])
    assert any(r["peak_v[0]"] > 1.2 for r in run.rows)    # the limit is active somewhere
    # tuned.yaml's variant runs the diagram with the answer: its metrics, bit for bit
    text = (tmp_path / "out" / "tuned.yaml").read_text()
    assert "variants:\n  tuned: {damper.gain: " in text
    d = blocksim.load(QUIET + text.split("\n", 2)[2], variant="tuned",
                      set={"simulation.stop_time": 3})
    again = blocksim.simulate(d).metrics
    assert again["rms_x"][0] == tuned.best["rms_x[0]"]
    # a candidate replays from its stored values
    from blocksim.study import replay
    assert replay(path, tmp_path / "out", 17).identical


def test_a_candidate_outside_its_limits_scores_above_every_feasible_one():
    study_row = {"status": "ok", "m[0]": 0.5, "c[0]": 3.0}
    from blocksim.study.tuning import Tuning
    t = Tuning("m[0]", {"c[0]": (None, 2.0)})
    assert score(study_row, t) == PENALTY + 1.0
    assert score(dict(study_row, **{"c[0]": 1.0}), t) == 0.5
    assert score(dict(study_row, status="failed", **{"c[0]": 1.0}), t) == 2 * PENALTY
    assert score(dict(study_row, **{"c[0]": math.nan}), t) == 2 * PENALTY


@pytest.mark.parametrize("text, line, message", [
    (TUNE.replace("  popsize: 6", "  popsize: 2"), 11,
     "optimize.popsize: 2 x 1 parameter(s) is 2 candidates per generation; differential "
     "evolution needs at least 5"),
    (TUNE.replace("{max: 1.2}", "{most: 1.2}"), 10,
     "unknown key 'most' in optimize.subject_to.peak_v[0]"),
    (TUNE.replace("[-8.0, -0.1]", "[-0.1, -8.0]"), 8,
     "factors: 'damper.gain': uniform needs low < high"),
    (TUNE + "factors:\n  x.x0: [1]\n", 13, "a study with optimize: tunes optimize.parameters"),
])
def test_a_bad_optimize_section_is_an_error_at_its_line(tmp_path, text, line, message):
    path = write(tmp_path, text, QUIET)
    with pytest.raises(StudyFileError) as err:
        load_study(path)
    assert str(err.value).startswith(f"{path}:{line}: ")
    assert message in str(err.value)


def test_resume_continues_a_tuning_from_its_stored_generations_to_the_same_answer(tmp_path, monkeypatch):
    from blocksim.errors import BlocksimError
    from blocksim.study.store import StudyFolder
    path = write(tmp_path, TUNE, QUIET)
    whole = run_study(path, tmp_path / "whole", progress=False)
    real = StudyFolder.write_part

    def crash_at_the_third(self, unit, rows):
        if unit == 2:
            raise KeyboardInterrupt          # the driver dies in generation 2
        real(self, unit, rows)
    monkeypatch.setattr(StudyFolder, "write_part", crash_at_the_third)
    with pytest.raises(KeyboardInterrupt):
        run_study(path, tmp_path / "out", progress=False)
    monkeypatch.setattr(StudyFolder, "write_part", real)
    assert sorted(p.name for p in (tmp_path / "out" / "parts").iterdir()) == [
        "unit-000000.parquet", "unit-000001.parquet"]
    # another search (more generations) is another study
    path.write_text(TUNE.replace("generations: 4", "generations: 5"))
    with pytest.raises(BlocksimError, match="holds another study: optimize changed"):
        run_study(path, tmp_path / "out", resume=True, progress=False)
    path.write_text(TUNE)
    resumed = run_study(path, tmp_path / "out", resume=True, progress=False)
    assert (resumed.ran, resumed.tuned.batches) == (3, 5)
    assert resumed.where == "threads: 5 generations, one batch run each (2 read back from their parts)"
    from test_study import same_rows
    same_rows(resumed.rows, whole.rows)
    assert resumed.tuned.best["member"] == whole.tuned.best["member"]
    assert resumed.tuned.best["rms_x[0]"] == whole.tuned.best["rms_x[0]"]
    assert (tmp_path / "out" / "tuned.yaml").read_text() == \
        (tmp_path / "whole" / "tuned.yaml").read_text()
    # a stored generation that is not what the search draws is refused, not mixed in
    from blocksim.study.store import read_parquet, write_parquet
    part = tmp_path / "out" / "parts" / "unit-000001.parquet"
    rows = read_parquet(part)
    rows[0]["damper.gain"] += 1e-9
    write_parquet(part, rows)
    with pytest.raises(BlocksimError, match="generation 1 on disk holds other candidates"):
        run_study(path, tmp_path / "out", resume=True, progress=False)
