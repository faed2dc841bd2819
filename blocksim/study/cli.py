"""The `sweep` command: a study run (or resumed) into --out with its table printed, or one member
replayed against its row (--replay)."""
from __future__ import annotations

from ..errors import BlocksimError


def sweep_command(args) -> int:
    if args.replay is not None:
        if args.resume:
            raise BlocksimError("--replay runs one member of a study already in --out; it does "
                                "not go with --resume")
        from .replay import replay
        found = replay(args.study, args.out, args.replay)
        print(found.text())
        return 0 if found.identical or found.promise == "to the tolerance" else 1
    if args.workers is not None and args.workers < 1:
        raise BlocksimError(f"--workers must be >= 1, got {args.workers}")
    from .report import summary_text
    from .run import run_study
    run = run_study(args.study, args.out, executor=args.executor, workers=args.workers,
                    scheduler=args.scheduler, resume=args.resume, figures=not args.no_figures,
                    cpu=args.cpu)
    print(f"{run.ran} of {run.units} units run now ({run.where}); {run.wall_s:.1f} s wall")
    if run.compiled:
        print(f"compiled: {run.compiled}")
    print(summary_text(run.rows, run.metrics, args.study, args.out))
    if run.tuned is not None:
        t = run.tuned
        if t.best is None:
            print(f"no candidate met the limits of optimize.subject_to in {t.batches} generations")
        else:
            print(f"tuned: member {t.best['member']}, "
                  + ", ".join(f"{k} = {t.best[k]:.6g}" for k in list(t.best)[1:list(t.best).index("seed")])
                  + f"; wrote {t.file}")
    if run.sensitivity is not None:
        from .sensitivity import indices_text
        print(indices_text(run.sensitivity))
        print(f"wrote {run.folder / 'sensitivity.json'}")
    print(f"wrote {run.summary}" + ("" if args.no_figures else f" and {run.folder / 'figures'}/"))
    return 0
