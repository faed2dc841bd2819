"""The command line: simulate, check, blocks, metrics, plot, animate, draw, report, serve,
compare, identify, sweep, linearize, trim.

Heavy modules (numba kernels, matplotlib) are imported only by the commands that use them, so
`blocksim blocks` and `--help` answer at once.
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

_python_showwarning = warnings.showwarning


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """A BlocksimWarning as one line (`warning: file:line: ...`), others as Python shows them."""
    from .errors import BlocksimWarning
    if issubclass(category, BlocksimWarning):
        print(f"warning: {message}", file=sys.stderr)
    else:
        _python_showwarning(message, category, filename, lineno, file, line)


def _interrupt(signum, frame):
    """SIGTERM and SIGHUP stop a command as Ctrl-C does: the run keeps what it logged."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    import signal
    warnings.showwarning = _show_warning
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            try:
                signal.signal(getattr(signal, name), _interrupt)
            except ValueError:            # not the main thread (main() called from a thread)
                pass
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    from .errors import BlocksimError
    try:
        return args.func(args)
    except BlocksimError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # the reader left (`blocksim blocks | head`): stop writing, quietly, as Unix tools do
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as err:         # the system refused: no such folder, read-only, no space, ...
        print(f"error: {os_error_text(err)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        # Ctrl-C outside a run (a run keeps what it logged and says so itself)
        print("interrupted", file=sys.stderr)
        return 130


def os_error_text(err: OSError) -> str:
    """An operating system's refusal as `PATH: reason` (the reason in the words blocksim uses
    when it reads: no such folder F, F is a file, not a folder, permission denied, ...)."""
    if not err.filename:
        return str(err.strerror or err)
    from .reading.located_yaml import os_reason
    return f"{err.filename}: {os_reason(err, Path(err.filename))}"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="blocksim", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command")

    p = sub.add_parser("simulate", help="run a diagram (every variant, or one), print metrics")
    p.add_argument("diagram")
    p.add_argument("--variant", action="append", help="run only this variant (repeatable)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a dotted key, e.g. pid.Kp=[500,250] or simulation.solver=rk4")
    p.add_argument("--out", help="folder for signals, metrics and figures (new or empty)")
    p.add_argument("--force", action="store_true", help="allow a non-empty --out folder")
    p.add_argument("--plot", action="store_true", help="write the scopes' figures (PNG and SVG; a "
                   "diagram without scopes: a figure of each logged signal)")
    p.add_argument("--format", nargs="+", default=["csv"], choices=["csv", "mat", "parquet"],
                   dest="formats", help="tables written beside each variant's signals.npz "
                   "(default: csv; parquet needs pip install -e '.[data]')")
    p.add_argument("--report", action="store_true",
                   help="write report.html, the interactive HTML report")
    p.add_argument("--mode", choices=["auto", "interpreted", "compiled"],
                   help="execution mode (simulation.mode)")
    p.add_argument("--quiet", action="store_true", help="print only the metrics table")
    p.set_defaults(func=cmd_simulate)

    p = sub.add_parser("check", help="validate a diagram; print order, rates, widths and states")
    p.add_argument("diagram")
    p.add_argument("--variant")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("blocks", help="the block library, with ports, parameters, units, defaults")
    p.add_argument("type", nargs="?")
    p.add_argument("--markdown", action="store_true",
                   help="the whole library as Markdown (the text of docs/blocks.md)")
    p.add_argument("--out", metavar="FILE",
                   help="with --markdown: write it to FILE (e.g. docs/blocks.md) instead of printing")
    p.add_argument("--plugin", action="append", default=[], metavar="MODULE_OR_FILE",
                   help="also a plugin's blocks (a module, or a .py file; repeatable)")
    p.set_defaults(func=cmd_blocks)

    p = sub.add_parser("metrics", help="the metric kinds a diagram's metrics: section may use")
    p.add_argument("--markdown", action="store_true",
                   help="as Markdown (the text of docs/metrics.md)")
    p.add_argument("--out", metavar="FILE",
                   help="with --markdown: write it to FILE (e.g. docs/metrics.md) instead of printing")
    p.set_defaults(func=cmd_metrics)

    add_figure_commands(sub)
    add_web_commands(sub)

    p = sub.add_parser("identify", help="identify a robot's dynamic parameters; report, figures and "
                       "robot file in --out")
    p.add_argument("config", nargs="?",
                   help="identification config (YAML), e.g. examples/identify_two_link.yaml")
    p.add_argument("--out", help="folder for the report (new or empty); with --markdown: the file")
    p.add_argument("--force", action="store_true", help="allow a non-empty --out folder")
    p.add_argument("--markdown", action="store_true",
                   help="the config keys as Markdown (the text of docs/identify.md), no config run")
    p.set_defaults(func=cmd_identify)

    p = sub.add_parser("sweep", help="run a study (sweep, Monte Carlo) of a study file; rows "
                       "stream to --out, summary.parquet at the end (docs/studies.md)")
    p.add_argument("study", help="study file (YAML), e.g. examples/studies/w1_model_error.yaml")
    p.add_argument("--out", required=True, help="folder of the study (new or empty; with --resume "
                   "or --replay: the study's folder)")
    p.add_argument("--executor", choices=["threads", "processes", "dask"],
                   help="where units run (replaces the file's executor; default threads)")
    p.add_argument("--workers", type=int, help="worker processes (processes, a dask LocalCluster)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="a running Dask scheduler, e.g. tcp://10.0.0.5:8786 (implies --executor dask)")
    p.add_argument("--cpu", choices=["native", "generic"],
                   help="what workers compile for: native (once per node type, the default) or "
                   "generic (one target for a cluster of mixed CPUs; replaces the file's cpu)")
    p.add_argument("--resume", action="store_true",
                   help="finish the study in --out: run only the units without rows there")
    p.add_argument("--replay", type=int, metavar="MEMBER",
                   help="run one member alone and compare it with its row in --out")
    p.add_argument("--no-figures", action="store_true",
                   help="no figures (distributions, heat map, Sobol indices) in --out/figures")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("linearize", help="linearise a diagram at an operating point; model, "
                       "margins and Bode plot in --out")
    p.add_argument("diagram")
    p.add_argument("--variant", help="linearise this variant")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    for name, what in (("input", "an injection added to this signal"),
                       ("output", "a signal measured"), ("opening", "a signal cut")):
        p.add_argument(f"--{name}", action="append", metavar="SIGNAL",
                       help=f"{what} (repeatable; replaces analysis.{name}s)")
    p.add_argument("--at", help="the operating point: initial, a time of a run in s, or trim "
                   "(the equilibrium of analysis.trim) (replaces analysis.at)")
    p.add_argument("--period", help="the period of a discrete model in s (replaces "
                   "analysis.period)")
    p.add_argument("--frequency-response", action="store_true",
                   help="also measure the diagram's own frequency response by a run with a "
                   "multisine injected at the input; drawn over the Bode plot")
    p.add_argument("--band", nargs=2, type=float, metavar=("LOW", "HIGH"),
                   help="with --frequency-response: the band in Hz (default: a decade either "
                   "side of the crossover or of the modes)")
    p.add_argument("--lines", type=int, default=10,
                   help="with --frequency-response: the number of frequencies (default 10)")
    p.add_argument("--amplitude", type=float,
                   help="with --frequency-response: the peak of each sine, in the input's units "
                   "(default 1e-3 max(1, |its operating value|))")
    p.add_argument("--out", help="folder for model.npz, model.json, margins.json, bode.png/svg "
                   "(and frequency_response.json)")
    p.add_argument("--force", action="store_true", help="allow a non-empty --out folder")
    p.set_defaults(func=cmd_linearize)

    p = sub.add_parser("trim", help="find an equilibrium with chosen states, inputs and outputs "
                       "fixed or free; print it as an analysis: at: operating point")
    p.add_argument("diagram")
    p.add_argument("--variant")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--input", action="append", default=[], metavar="SIGNAL",
                   help="a signal whose injection (an added offset) trim may move (repeatable)")
    p.add_argument("--state", action="append", default=[], metavar="BLOCK=[VALUES]",
                   help="continuous states held, null for a free element: plant=[0, 0, 0, 0]")
    p.add_argument("--discrete-state", action="append", default=[], metavar="BLOCK=[VALUES]",
                   help="discrete states held (without modes), null for a free element")
    p.add_argument("--output", action="append", default=[], metavar="SIGNAL=VALUES",
                   help="a measured signal's value: motor.i=2")
    p.set_defaults(func=cmd_trim)
    return parser


def parse_sets(items: list[str]) -> dict:
    from .diagram.spec import parse_set_option
    return dict(parse_set_option(text) for text in items)


def prepare_out(out: str | None, force: bool):
    """The output folder (engine.run_folder.RunFolder): new, empty, or an earlier run that --force
    replaces whole; written in a staging folder put in place at the end, never half-written."""
    from .engine.run_folder import RunFolder
    return None if out is None else RunFolder(out, replace=force)


def cmd_simulate(args) -> int:
    import blocksim

    sets = parse_sets(args.set)
    if args.mode:
        sets["simulation.mode"] = args.mode
    base = blocksim.load(args.diagram, set=sets)
    variants = args.variant or base.variants or [None]
    for v in variants:
        if v is not None and v not in base.variants:
            from .errors import did_you_mean
            from .errors import BlocksimError
            raise BlocksimError(f"{args.diagram}: no variant '{v}'{did_you_mean(v, base.variants)}; "
                                f"variants: {', '.join(base.variants) or 'none'}")
    from .engine.exports import check_formats
    check_formats(args.formats)
    folder = prepare_out(args.out, args.force)
    if (args.plot or args.report) and folder is None:
        folder = prepare_out(f"runs/{Path(args.diagram).stem}-{time.strftime('%Y%m%d-%H%M%S')}",
                             False)
    try:
        code = _simulate_variants(args, base, variants, folder)
    except BaseException:
        if folder is not None:
            folder.abort()                 # the earlier run (if any) stays as it was
        raise
    return code


def _simulate_variants(args, base, variants, folder) -> int:
    """simulate's runs, table and figures, written into the staging folder and committed."""
    import json

    import blocksim

    from .engine.metrics import format_table
    from .errors import BlocksimError
    out = None if folder is None else folder.staging
    results = {}
    all_metrics = {}
    failed = {}
    interrupted = False
    base.expect_variants(variants)         # a study's compiled runs share one module
    for v in variants:
        label = v or "default"
        started = time.perf_counter()
        try:
            d = base if v is None else base.with_variant(v)
            try:
                r = blocksim.simulate(d)
            except KeyboardInterrupt as stop:      # keep what the run logged, then stop
                r = getattr(stop, "result", None)
                if r is None:
                    raise
            all_metrics[label] = r.metrics
        except BlocksimError as err:
            if len(variants) == 1:
                raise
            # one variant's mistake or divergence: say so, and finish and save the others
            failed[label] = err
            print(f"error: [{label}] {err}", file=sys.stderr)
            continue
        wall = time.perf_counter() - started
        results[label] = r
        if not args.quiet:
            stats = ", ".join(f"{k} {v}" for k, v in r.stats.items())
            print(f"[{label}] {d.name}: t = {r.t[0]:g}..{r.t[-1]:g} s, {len(r.t)} samples, "
                  f"{wall:.3f} s wall ({stats})")
        if r.interrupted:
            interrupted = True
            reached = f"t = {r.t[-1]:.12g} s" if len(r.t) else "the start"
            print(f"[{label}] interrupted at {reached}; what was logged up to there is kept",
                  file=sys.stderr)
        if out is not None:
            r.save(out / label, formats=args.formats)
        if interrupted:
            break
    if any(all_metrics.values()):
        print(format_table(all_metrics))
    if out is not None and not results:
        folder.abort()          # no variant ran: nothing replaces what the folder holds
    elif out is not None:
        (out / "metrics.json").write_text(json.dumps(all_metrics, indent=2) + "\n")
        written = []
        if args.plot and results:
            from .plotting import scope_figures
            written = scope_figures(base.spec, results, out)
        if args.report and results:
            from .web.report import write_report
            written.append(write_report(out))
        folder.commit()
        for path in written:
            print(f"wrote {folder.final(path)}")
        print(f"saved to {folder.path}/")
    if failed:
        print(f"error: {len(failed)} of {len(variants)} variants failed: {', '.join(failed)}"
              + (f"; the others ({', '.join(results)}) ran and were saved" if results
                 else f"; nothing was written to {folder.path}" if folder is not None else ""),
              file=sys.stderr)
        return 1
    return 130 if interrupted else 0


def cmd_check(args) -> int:
    import blocksim

    from .engine.metrics import check_metrics
    from .engine.plan import make_plan
    from .engine.scheduler import run_settings
    from .engine.simulate import logged_signals
    d = blocksim.load(args.diagram, variant=args.variant, set=parse_sets(args.set))
    cd = d.compile()
    settings = run_settings(d.settings, d.log_settings, cd)
    logged = logged_signals(cd, d.log_settings)
    check_metrics(cd, logged, (float(d.settings.start), float(d.settings.stop)))
    plan = make_plan(cd, settings, logged)
    print(f"{args.diagram}: '{d.name}' is valid"
          + (f" (variant {args.variant})" if args.variant else ""))
    print(f"\nsolver {settings.solver}, t = {float(settings.start):g}..{float(settings.stop):g} s"
          + (f", step {float(settings.step):.12g} s" if settings.step is not None else "")
          + f", base tick {float(plan.timebase.tick):.12g} s, log every "
          f"{float(settings.log_every):.12g} s "
          f"({len(plan.log_grid)} samples)")
    planned = {(o.block, o.serves): o for o in plan.output_steps}
    print("\nexecution order (sorted by direct feedthrough):")
    for k, call in enumerate(cd.calls, 1):
        blk = cd.blocks[call.block]
        split = "" if set(call.serves) == set(blk.output_names()) else f" [{', '.join(call.serves)}]"
        state = []
        if blk.n_xc:
            state.append(f"{blk.n_xc} continuous")
        if blk.n_xd:
            state.append(f"{blk.n_xd} discrete")
        widths = ", ".join(f"{p}:{w}" for p, w in cd.out_widths[call.block].items())
        step = planned.get((call.block, tuple(call.serves)))
        flags = [] if blk.enabled else ["disabled"]
        if call.block in cd.varying:
            flags.append("varies in minor steps")
        if step is not None and step.at_stages:
            flags.append("read at solver stages")
        if blk.n_modes:
            flags.append(f"holds {blk.n_modes} mode{'s' if blk.n_modes > 1 else ''} through "
                         "the stages")
        if step is None and blk.enabled and blk.output_names() \
                and cd.sample_times[call.block].kind != "constant":
            flags.append("not computed: nothing reads these outputs")
        print(f"  {k:3d}. {call.block:<22} {blk.type_name:<20} {str(cd.sample_times[call.block]):<28}"
              f" out[{widths}]" + (f" states: {', '.join(state)}" if state else "")
              + "".join(f"; {f}" for f in flags) + split)
    print(f"\nstates: {cd.n_xc} continuous, {cd.n_xd} discrete, {cd.n_zc} zero-crossing functions")
    rates = sorted({str(st) for st in cd.sample_times.values()})
    print(f"rates: {', '.join(rates)}")
    _print_robot_notes(cd)
    return 0


def _print_robot_notes(cd) -> None:
    """What the robots' files left out or lumped (a URDF's branches off the chain), once per
    robot, naming the blocks that use it."""
    from .blocks.robot import robot_notes
    users = robot_notes(cd.blocks)
    if users:
        print()
    for (robot, note), names in users.items():
        print(f"robot '{robot}' (block{'s' if len(names) > 1 else ''} {', '.join(names)}): {note}")


def _markdown_out(text: str, out: str | None) -> int:
    """A catalogue's Markdown: written to `out` (docs/blocks.md, docs/metrics.md) or printed."""
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text)
        print(f"wrote {out}")
    else:
        sys.stdout.write(text)
    return 0


def cmd_metrics(args) -> int:
    from .engine.metrics import METRIC_KINDS, markdown
    if args.markdown:
        return _markdown_out(markdown(), args.out)
    for kind in METRIC_KINDS.values():
        print(f"{kind.name:<18} {kind.doc}")
    return 0


def cmd_blocks(args) -> int:
    from .blocks.catalog import describe, markdown
    from .blocks.plugins import load_installed, load_plugin
    load_installed()
    for name in args.plugin:
        load_plugin(name, Path.cwd())
    if args.markdown:
        return _markdown_out(markdown(plugins=bool(args.plugin)), args.out)
    if args.out:
        from .errors import BlocksimError
        raise BlocksimError("--out goes with --markdown")
    print(describe(args.type))
    return 0


# ----------------------------------------------------------------------------- figures
# plot, animate, draw, compare: matplotlib is imported by these commands only.

def add_figure_commands(sub) -> None:
    p = sub.add_parser("plot", help="figures (PNG and SVG) from a saved run folder")
    p.add_argument("run", help="a `simulate --out` folder (one subfolder per variant) or one saved run")
    p.add_argument("--signals", nargs="+", metavar="BLOCK.PORT",
                   help="signals to plot (default: the diagram's scopes, else every logged signal)")
    p.add_argument("--variants", nargs="+", metavar="V", help="variants to overlay (default: all)")
    p.add_argument("--out", help="folder for the figures (default: the run folder)")
    p.add_argument("--title", help="figure title with --signals")
    p.add_argument("--format", nargs="+", default=["png", "svg"], choices=["png", "svg", "pdf"],
                   dest="formats", help="file formats (default: png svg)")
    p.set_defaults(func=cmd_plot)

    p = sub.add_parser("animate", help="a GIF of the arm moving, from a saved run")
    p.add_argument("run", help="a `simulate --out` folder or one saved run")
    p.add_argument("--variant", action="append", metavar="V",
                   help="variant to show (repeatable: arms overlaid; default: the first)")
    p.add_argument("--robot", metavar="NAME|FILE",
                   help="robot preset or YAML/URDF file (default: the diagram's Manipulator robot)")
    p.add_argument("--signal", metavar="BLOCK.PORT",
                   help="joint positions to show (default: the Manipulator's q)")
    p.add_argument("--reference", metavar="BLOCK.PORT",
                   help="reference joint positions drawn as a dashed ghost arm (default: a "
                        "logged ref*.q of the same width; 'none' for no ghost)")
    p.add_argument("--fps", type=float, default=25.0, help="frames per second (default 25)")
    p.add_argument("--speed", type=float, default=1.0,
                   help="simulated seconds per second of animation (default 1: real time)")
    p.add_argument("--member", type=int, default=0, help="batch member to show (default 0)")
    p.add_argument("--dpi", type=int, default=80, help="resolution (default 80)")
    p.add_argument("--out", metavar="FILE.gif",
                   help="output file (default: RUN/animation[_VARIANT].gif)")
    p.set_defaults(func=cmd_animate)

    p = sub.add_parser("draw", help="render the block diagram itself (blocks, ports, wires)")
    p.add_argument("diagram")
    p.add_argument("--variant", help="draw this variant (disabled blocks are greyed)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--out", metavar="FILE.png|FILE.svg",
                   help="output file; the extension picks the format (default: DIAGRAM_STEM.svg "
                        "in the current folder)")
    p.set_defaults(func=cmd_draw)

    p = sub.add_parser("compare", help="metric differences between two saved runs, and overlays")
    p.add_argument("run_a", metavar="RUN_A")
    p.add_argument("run_b", metavar="RUN_B")
    p.add_argument("--variants", nargs="+", metavar="V", help="variants to compare (default: common)")
    p.add_argument("--signals", nargs="+", metavar="BLOCK.PORT",
                   help="signals to overlay (default: every signal logged in both)")
    p.add_argument("--out", help="folder for the overlay figures and metrics_diff.csv/.json "
                                 "(default: runs/compare-A-vs-B)")
    p.add_argument("--no-figures", action="store_true", help="print the differences only")
    p.add_argument("--fail-rel", type=float, metavar="X",
                   help="exit 1 when a metric's |B - A| / |A| exceeds X (regression checks)")
    p.set_defaults(func=cmd_compare)


def add_web_commands(sub) -> None:
    p = sub.add_parser("report", help="the interactive HTML report of a saved run or study folder "
                       "(one offline file)")
    p.add_argument("run", help="a `simulate --out` folder (one subfolder per variant) or one saved run")
    p.add_argument("--out", metavar="FILE.html", help="the page (default: RUN/report.html)")
    p.add_argument("--plotly", choices=["inline", "shared"], default="inline",
                   help="inline: plotly.js inside the page (1.5 MB of it, default); shared: one "
                        "plotly.min.js beside the page, shared by the reports of its folder")
    p.add_argument("--max-points", type=int, default=None, metavar="N",
                   help="at most N points drawn per trace, keeping minima and maxima (default "
                        "5000); the files keep every sample")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("serve", help="a local page that reruns the diagram as you move its "
                       "tuned parameters (127.0.0.1 only)")
    p.add_argument("diagram")
    p.add_argument("--tune", action="append", default=[], metavar="BLOCK.PARAM",
                   help="a parameter with a slider and a field per element (repeatable)")
    p.add_argument("--variant", help="tune this variant")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--port", type=int, default=8765,
                   help="the port on 127.0.0.1 (default 8765; 0: any free port)")
    p.add_argument("--max-points", type=int, default=None, metavar="N",
                   help="at most N points drawn per trace (default 5000)")
    p.set_defaults(func=cmd_serve)


def cmd_serve(args) -> int:
    from .web.decimate import DEFAULT_MAX_POINTS
    from .web.serve import serve
    serve(args.diagram, args.tune, port=args.port, variant=args.variant,
          set=parse_sets(args.set), cap=args.max_points or DEFAULT_MAX_POINTS,
          ready=lambda text: print(text, flush=True))
    return 0


def cmd_report(args) -> int:
    from .web.decimate import DEFAULT_MAX_POINTS
    from .web.report import write_report
    from .web.study_data import is_study_folder
    if args.max_points is not None and is_study_folder(args.run):
        from .errors import BlocksimError
        raise BlocksimError(f"--max-points: {args.run} is a study folder, whose page draws no "
                            "traces (it is for a saved run's report)")
    path = write_report(args.run, args.out, plotly=args.plotly,
                        cap=args.max_points or DEFAULT_MAX_POINTS)
    print(f"wrote {path}")
    return 0


def cmd_plot(args) -> int:
    from .plotting import plot_run
    for path in plot_run(args.run, signals=args.signals, variants=args.variants, out=args.out,
                         formats=tuple(args.formats), title=args.title):
        print(f"wrote {path}")
    return 0


def cmd_animate(args) -> int:
    from .animation import animate_run
    path = animate_run(args.run, variants=args.variant, robot=args.robot, signal=args.signal,
                       reference=args.reference, fps=args.fps, speed=args.speed,
                       member=args.member, dpi=args.dpi, out=args.out)
    print(f"wrote {path}")
    return 0


def cmd_draw(args) -> int:
    from .drawing import draw_diagram
    out = args.out or f"{Path(args.diagram).stem}.svg"
    path = draw_diagram(args.diagram, out, variant=args.variant, set=parse_sets(args.set))
    print(f"wrote {path}")
    return 0


def cmd_compare(args) -> int:
    from .compare import compare_command
    return compare_command(args.run_a, args.run_b, variants=args.variants, signals=args.signals,
                           out=args.out, figures=not args.no_figures, fail_rel=args.fail_rel)


def cmd_identify(args) -> int:
    """Run the identification workflow of a config (blocksim.identification.pipeline), or print
    the config reference (--markdown)."""
    from .errors import BlocksimError
    if args.markdown:
        if args.config:
            raise BlocksimError("identify --markdown prints the config reference; it takes no CONFIG")
        from .identification.config import reference_markdown
        return _markdown_out(reference_markdown(), args.out)
    if not args.config or not args.out:
        raise BlocksimError("identify needs a CONFIG and --out DIR (or --markdown for the config "
                            "reference)")
    from .identification.pipeline import run
    folder = prepare_out(args.out, args.force)
    try:
        run(args.config, None if folder is None else folder.staging)
    except BaseException:
        if folder is not None:
            folder.abort()
        raise
    if folder is not None:
        folder.commit()
    return 0


def cmd_sweep(args) -> int:
    """Run, resume or replay a study (blocksim.study)."""
    from .study.cli import sweep_command
    return sweep_command(args)


def cmd_linearize(args) -> int:
    """Linearise (blocksim.analysis), print the model and its loop's margins, write the files."""
    import blocksim
    from .analysis.linearize import linear_model
    from .analysis.report import (bode_data, margins_of, modes, write_frequency_response,
                                  write_margins, write_model)
    d = blocksim.load(args.diagram, variant=args.variant, set=parse_sets(args.set))
    at = None if args.at is None else (args.at if args.at in ("initial", "trim")
                                       else {"time": args.at})
    model = linear_model(d, inputs=args.input, outputs=args.output, openings=args.opening, at=at,
                         period=args.period, origin="option")
    kind = f"discrete, period {model.dt:.6g} s" if model.dt else "continuous"
    print(f"{d.name}: {len(model.states)} states, {len(model.inputs)} inputs, "
          f"{len(model.outputs)} outputs; {kind}; at t = {model.time:.6g} s"
          + (" (trimmed: an equilibrium)" if model.trimmed is not None else ""))
    if model.exact:
        print("linearised exactly from their own dynamics: " + ", ".join(model.exact))
    if model.nonsmooth:
        print("linearised in the mode they hold there: " + ", ".join(model.nonsmooth))
    for text in model.steep:
        print(f"steep at the operating point (its tangent holds only near it): {text}")
    poles = modes(model)
    if poles:
        print("modes (natural frequency, damping ratio): " + ", ".join(
            f"{f:.6g} Hz ({z:.3g})" if f else "0 (an integrator)" for f, z in poles[:12])
            + (", ..." if len(poles) > 12 else ""))
    margins = margins_of(model) if model.loop else None
    if margins is not None:
        print(f"the loop at {model.loop}:")
        print(margins.table())
    else:
        print("no margins: the model is not a loop seen from one point (one input, the same "
              "signal as the only output and as an opening)")
    measured = None
    if args.frequency_response:
        from .analysis.frequency_response import frequency_response
        measured = frequency_response(d, band=args.band, lines=args.lines,
                                      amplitude=args.amplitude, model=model)
        print(f"frequency response of the diagram ({'the loop L' if model.loop else 'the model'}"
              f"; a multisine of {len(measured.frequencies)} sines of {measured.amplitude:.4g} "
              f"each at {model.inputs[0]}; settled {measured.settle:.6g} s, measured "
              f"{measured.window:.6g} s, {measured.mode}):")
        print(measured.table())
        print(f"distortion {measured.distortion:.3g} (the power away from the lines over the "
              "lines'): " + ("linear at this amplitude" if measured.linear_enough else
                             "NOT linear at this amplitude (a block saturates or switches, or "
                             "the run has not settled): take a smaller --amplitude"))
    folder = prepare_out(args.out, args.force)
    if folder is None:
        return 0
    try:
        write_model(model, folder.staging)
        if margins is not None:
            write_margins(margins, folder.staging)
        from .plotting import bode_figure, save_figure
        f, H = bode_data(model)
        labels = [f"{o} / {i}" for o in model.outputs for i in model.inputs]
        title = f"{d.name}: " + (f"the loop at {model.loop}" if model.loop else "the model")
        if measured is not None:
            write_frequency_response(measured, folder.staging)
        save_figure(bode_figure(f, H, title, labels,
                                None if margins is None else margins.as_dict(),
                                modes=[f for f, z in poles if f > 0 and z < 1],
                                measured=None if measured is None else
                                (measured.frequencies, measured.measured)),
                    folder.staging, "bode")
    except BaseException:
        folder.abort()
        raise
    path = folder.commit()
    print(f"wrote {path}/: model.npz, model.json"
          + (", margins.json" if margins is not None else "")
          + (", frequency_response.json" if measured is not None else "") + ", bode.png, bode.svg")
    return 0


def _assignments(items: list[str], option: str) -> dict:
    """--option NAME=VALUE items, each value read as (safe) YAML flow text."""
    from .errors import BlocksimError
    from .reading.located_yaml import parse_yaml_text
    from .diagram.yaml_loader import to_plain
    out = {}
    for text in items:
        key, sep, raw = text.partition("=")
        if not sep or not key.strip() or not raw.strip():
            raise BlocksimError(f"{option} expects NAME=VALUE such as plant=[0, 0, 0, 0], "
                                f"got '{text}'")
        value = to_plain(parse_yaml_text(raw.strip(), f"{option} {key.strip()}"))
        out[key.strip()] = value if isinstance(value, list) else [value]
    return out


def cmd_trim(args) -> int:
    """Trim (blocksim.analysis.trim): print the equilibrium as an `at:` operating point."""
    import yaml

    import blocksim
    from .analysis.trim import trim
    d = blocksim.load(args.diagram, variant=args.variant, set=parse_sets(args.set))
    found = trim(d, inputs=args.input, outputs=_assignments(args.output, "--output"),
                 states=_assignments(args.state, "--state"),
                 discrete_states=_assignments(args.discrete_state, "--discrete-state"))
    print(f"{d.name}: an equilibrium (largest residual {found.residual:.3g}, "
          f"{found.nfev} evaluations)")
    if found.outputs:
        print("outputs: " + ", ".join(f"{k} = {v}" for k, v in found.outputs.items()))
    print("# the operating point, for the analysis: section (analysis.at)")
    print(yaml.safe_dump({"at": found.at}, sort_keys=False, default_flow_style=None), end="")
    return 0
