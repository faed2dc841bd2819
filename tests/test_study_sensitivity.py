"""Sobol indices of a study (sampling: saltelli, SALib): Ishigami's function, whose indices are
known in closed form, and a saltelli study of a diagram end to end."""
import json
import math

import numpy as np
import pytest

from blocksim.errors import BlocksimWarning
from blocksim.study import StudyFileError, load_study, member_values, run_study

from test_study import write

pytest.importorskip("SALib", reason="Sobol indices need SALib: pip install -e '.[sensitivity]'")

ISHIGAMI_S1 = {"parameters.a": 0.3139, "parameters.b": 0.4424, "parameters.c": 0.0}
ISHIGAMI_ST = {"parameters.a": 0.5576, "parameters.b": 0.4424, "parameters.c": 0.2437}
"""Ishigami's f = sin x1 + 7 sin^2 x2 + 0.1 x3^4 sin x1, x ~ U(-pi, pi)^3 (Saltelli et al.,
Global Sensitivity Analysis: The Primer, 2008; SALib's test values)."""


def test_the_sobol_indices_of_ishigamis_function_are_its_known_ones(tmp_path):
    from blocksim.study.sensitivity import sobol_indices
    text = ("diagram: msd.yaml\nsampling: saltelli\nsamples: 2048\nseed: 5\nfactors:\n"
            + "".join(f"  {p}: {{uniform: [-3.141592653589793, 3.141592653589793]}}\n"
                      for p in ISHIGAMI_S1))
    study = load_study(write(tmp_path, text))
    assert study.members == 2048 * 5
    x = member_values(study.factors, study.samples, study.sampling, study.seed,
                      range(study.members))
    x1, x2, x3 = (np.array(x[p]) for p in ISHIGAMI_S1)
    y = np.sin(x1) + 7 * np.sin(x2) ** 2 + 0.1 * x3 ** 4 * np.sin(x1)
    rows = [{"member": m, "f[0]": float(v)} for m, v in enumerate(y)]
    found = sobol_indices(list(ISHIGAMI_S1), rows, ["f[0]"], seed=5)["f[0]"]
    for p in ISHIGAMI_S1:
        assert found[p]["S1"] == pytest.approx(ISHIGAMI_S1[p], abs=0.04), p
        assert found[p]["ST"] == pytest.approx(ISHIGAMI_ST[p], abs=0.04), p
        assert 0 < found[p]["ST_conf"] < 0.1


def test_a_saltelli_study_writes_its_indices_and_warns_when_they_are_too_wide(tmp_path):
    path = write(tmp_path, "diagram: msd.yaml\nsampling: saltelli\nsamples: 8\nunit_size: 16\n"
                           "factors:\n  x.x0: {uniform: [0.5, 1.5]}\n"
                           "  parameters.k: {uniform: [2.0, 6.0]}\n")
    with pytest.warns(BlocksimWarning) as told:
        run = run_study(path, tmp_path / "out", progress=False)
    assert [str(w.message).split(": ", 1)[1] for w in told] == [
        f"the Sobol indices of {col} for {names} have confidence intervals wider than +-0.1 "
        "with samples: 8; take more samples (4 times the samples halve the intervals)"
        for col, names in (("peak_x[0]", "x.x0"), ("rms_v[0]", "x.x0, parameters.k"))]
    assert len(run.rows) == 8 * 4
    stored = json.loads((tmp_path / "out" / "sensitivity.json").read_text())
    assert stored == run.sensitivity
    assert set(stored) == {"peak_x[0]", "rms_v[0]"}
    assert set(stored["peak_x[0]"]) == {"x.x0", "parameters.k"}
    # the peak of x is its start x0 (a damped oscillation from rest): x0 explains it all
    assert stored["peak_x[0]"]["x.x0"]["ST"] > 0.9 and \
        math.isclose(stored["peak_x[0]"]["parameters.k"]["ST"], 0.0, abs_tol=1e-9)


def test_saltelli_needs_every_factor_drawn(tmp_path):
    path = write(tmp_path, "diagram: msd.yaml\nsampling: saltelli\nsamples: 8\nfactors:\n"
                           "  x.x0: {uniform: [0.5, 1.5]}\n  parameters.k: [2.0, 6.0]\n")
    with pytest.raises(StudyFileError, match=r":6: factors: 'parameters.k': sampling: saltelli "
                                             r"\(Sobol indices\) needs every factor drawn"):
        load_study(path)
