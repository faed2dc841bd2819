"""Writes the elastic-joint residual study's results for tests/test_elastic_residuals.py: runs
`python cli.py identify` on examples/commissioning/elastic_identify.yaml (the two-link arm with
elastic joints and a backlash, measured on its motor encoders) and elastic_identify_rigid.yaml
(the same arm made rigid), and keeps what the residual check is computed from. Run by hand (about
2 to 3 minutes per config on 2 cores):

    PYTHONPATH=. python tests/data/make_elastic_study.py [OUT_ELASTIC OUT_RIGID]

(the optional folders: existing identify outputs of the two configs to read instead of running).

Writes into tests/data/:
- elastic_study.npz: elastic_residual, rigid_residual (N, 2) N m, the validation torque minus the
  identified model's prediction (the physically consistent estimate), and elastic_q, rigid_q
  (N, 2) rad, the validation's processed joint angles (float64);
- elastic_study.json: each run's metrics.json entries validation_residual and validation.
"""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
STUDIES = ROOT / "examples" / "commissioning"
CONFIGS = {"elastic": "elastic_identify.yaml", "rigid": "elastic_identify_rigid.yaml"}


def main(folders=None) -> None:
    from blocksim.identification.pipeline import run
    arrays, metrics = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for k, (case, config) in enumerate(CONFIGS.items()):
            out = Path(folders[k]) if folders else Path(tmp) / case
            if not folders:
                run(STUDIES / config, out)
            with np.load(out / "data" / "validation.npz") as v:
                arrays[f"{case}_residual"] = v["tau"] - v["pred_consistent"]
                arrays[f"{case}_q"] = v["q"]
            m = json.loads((out / "metrics.json").read_text())
            metrics[case] = {"validation_residual": m["validation_residual"],
                             "validation": m["validation"]}
    here = Path(__file__).parent
    np.savez_compressed(here / "elastic_study.npz", **arrays)
    (here / "elastic_study.json").write_text(json.dumps(metrics, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:3] if len(sys.argv) >= 3 else None)
