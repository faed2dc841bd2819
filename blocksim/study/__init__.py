"""Studies: many runs of one diagram (sweeps, Monte Carlo), described by a study file
(docs/studies.md), run in work units of batch runs on threads, worker processes or a Dask
cluster, written to disk as units finish, resumed after a crash and replayed member by member.

    import blocksim
    run = blocksim.study.run_study("examples/studies/w1_model_error.yaml", "runs/w1_model_error")
    run.rows[0]        # {"member": 0, "ff.param_error": -0.5, ..., "status": "ok", ...}
    blocksim.study.replay("examples/studies/w1_model_error.yaml", "runs/w1_model_error", 3).identical
    blocksim.study.read_study("runs/w1_model_error").rows     # a study folder read back
"""
from .file import Study, StudyFileError, load_study
from .replay import Replay, replay
from .run import StudyRun, run_study
from .sampling import member_seed, member_values
from .store import StoredStudy, read_study

__all__ = ["Replay", "Study", "StudyFileError", "StudyRun", "StoredStudy", "load_study",
           "member_seed", "member_values", "read_study", "replay", "run_study"]
