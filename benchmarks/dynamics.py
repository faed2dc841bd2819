"""Speed of the rigid-body algorithms (rnea, mass_matrix, aba) for the Puma 560: microseconds per call.

Run by hand:  python benchmarks/dynamics.py [--robot puma560] [--batch 1000] [--forms]
Prints, per algorithm, the time per call at B = 1 through the public method, through the
low-level kernel (model.arrays + a preallocated workspace and output) and through the blocks'
Model/Data form (`models.model_data`), and the time per batch member at B = --batch through the
kernel and the Model/Data form. Targets: < 50 us per call at B = 1, < 2 us per member.
--forms also times the RNEA at B = 1 with its model held in each candidate Model form (the
measurement behind `models.model_data`): called from Python, from a compiled loop, and the
compile time of the thin function that reads the form.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # run from a checkout

from blocksim.models import model_data as md
from blocksim.models import rigid_body_kernels as rbk
from blocksim.models.robot import RobotModel


def per_call(fn, min_time=0.3):
    """Best-of-5 mean time of fn() in seconds, each run long enough to be measured."""
    fn()
    reps = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        dt = time.perf_counter() - t0
        if dt > min_time / 5:
            break
        reps *= 4
    best = dt / reps
    for _ in range(4):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robot", default="puma560")
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--forms", action="store_true", help="also time the candidate Model forms")
    args = ap.parse_args(argv)
    model = RobotModel.preset(args.robot)
    md_model = md.stack_model([model], False)
    n = model.n
    jt, xt, inertia, arm, tool = model.arrays
    g = model.gravity
    ws = model.workspace()
    rng = np.random.default_rng(0)
    rows = []
    for B in (1, args.batch):
        q, qd, qdd = (np.ascontiguousarray(rng.uniform(-2, 2, (B, n))) for _ in range(3))
        out = np.empty((B, n))
        out_m = np.empty((B, n, n))
        tau = model.rnea(q, qd, qdd)
        data = md.make_data(n, B)
        forms = {
            "rnea": lambda: md.rnea(md_model, data, 0, q, qd, qdd, rbk.NO_FEXT, out),
            "mass_matrix": lambda: md.mass_matrix(md_model, data, 0, q, out_m),
            "aba": lambda: md.aba(md_model, data, 0, q, qd, tau, rbk.NO_FEXT, out),
        }
        kernels = {
            "rnea": lambda: rbk.rnea_into(jt, xt, inertia, arm, tool, q, qd, qdd, g, rbk.NO_FEXT, out, ws),
            "mass_matrix": lambda: rbk.mass_matrix_into(jt, xt, inertia, arm, q, out_m, ws),
            "aba": lambda: rbk.aba_into(jt, xt, inertia, arm, tool, q, qd, tau, g, rbk.NO_FEXT, out, ws),
        }
        if B == 1:
            methods = {
                "rnea": lambda: model.rnea(q[0], qd[0], qdd[0]),
                "mass_matrix": lambda: model.mass_matrix(q[0]),
                "aba": lambda: model.aba(q[0], qd[0], tau[0]),
            }
            for name in kernels:
                rows.append((name, "method, B=1", per_call(methods[name]) * 1e6, "us/call"))
                rows.append((name, "kernel, B=1", per_call(kernels[name]) * 1e6, "us/call"))
                rows.append((name, "model/data, B=1", per_call(forms[name]) * 1e6, "us/call"))
        else:
            for name in kernels:
                rows.append((name, f"kernel, B={B}", per_call(kernels[name]) / B * 1e6, "us/member"))
                rows.append((name, f"model/data, B={B}", per_call(forms[name]) / B * 1e6,
                             "us/member"))
    print(f"{model.name}: {n} joints, numba kernels (warm)")
    for name, how, value, unit in sorted(rows, key=lambda r: r[0]):
        print(f"  {name:12s} {how:18s} {value:8.3f} {unit}")
    if args.forms:
        model_forms(model)


def model_forms(model):
    """The RNEA at B = 1 with the model read from each candidate Model form (models.model_data's
    docstring): from Python, from a compiled loop, and the thin reader's compile time."""
    from collections import namedtuple

    from numba import float64, int64, njit
    from numba.experimental import jitclass

    jt, xt, inertia, arm, tool = (np.array(a) for a in model.arrays)
    g, n, ws, out = np.array(model.gravity), model.n, model.workspace(), np.empty((1, model.n))
    q, qd, qdd = (np.random.default_rng(1).uniform(-2, 2, (1, n)) for _ in range(3))

    def flat(a, q, qd, qdd, out):
        rbk.rnea_into(a[0], a[1], a[2], a[3], a[4], q, qd, qdd, a[5], rbk.NO_FEXT, out, a[6])

    def fields(a, q, qd, qdd, out):
        m = a[0]
        rbk.rnea_into(m.jtype, m.xtree[0], m.inertia[0], m.armature[0], m.tool[0], q, qd, qdd,
                      m.gravity[0], rbk.NO_FEXT, out, a[1].ws if len(a) > 1 else m.ws)

    def record(a, q, qd, qdd, out):
        r = a[1][0]
        rbk.rnea_into(a[0], r.xtree, r.inertia, r.armature, r.tool, q, qd, qdd, r.gravity,
                      rbk.NO_FEXT, out, a[2])

    def model_data(a, q, qd, qdd, out):
        md.rnea(a[0], a[1], 0, q, qd, qdd, rbk.NO_FEXT, out)

    Model = namedtuple("Model", "jtype xtree inertia armature tool gravity")
    Data = namedtuple("Data", "ws")
    spec = [("jtype", int64[::1]), ("xtree", float64[:, :, ::1]), ("inertia", float64[:, :, ::1]),
            ("armature", float64[:, ::1]), ("tool", float64[:, ::1]), ("gravity", float64[:, ::1]),
            ("ws", float64[:, ::1])]

    class Fields:
        def __init__(self, jtype, xtree, inertia, armature, tool, gravity, ws):
            self.jtype, self.xtree, self.inertia, self.armature = jtype, xtree, inertia, armature
            self.tool, self.gravity, self.ws = tool, gravity, ws

    stacked = (jt, xt[None], inertia[None], arm[None], tool[None], g[None])
    rec = np.zeros(1, np.dtype([("xtree", float, (n, 12)), ("inertia", float, (n, 10)),
                                ("armature", float, (n,)), ("tool", float, (12,)),
                                ("gravity", float, (3,))]))
    for name, value in zip(("xtree", "inertia", "armature", "tool", "gravity"),
                           (xt, inertia, arm, tool, g)):
        rec[0][name] = value
    cases = {
        "model/data (one row of fields)": (model_data, (md.stack_model([model], False),
                                                        md.make_data(n, 1))),
        "tuple of 7 arrays": (flat, (jt, xt, inertia, arm, tool, g, ws)),
        "namedtuple Model + Data": (fields, (Model(*stacked), Data(ws))),
        "record array": (record, (jt, rec, ws)),
        "jitclass": (fields, (jitclass(spec)(Fields)(*stacked, ws),)),
    }
    njit(lambda x: x + 1)(1)                          # numba's own start-up, paid once
    print(f"{model.name}: rnea at B=1 by Model form    from Python   compiled loop   compile")
    for name, (fn, arg) in cases.items():
        thin = njit(error_model="numpy")(fn)

        @njit(error_model="numpy")
        def loop(a, q, qd, qdd, out, reps):
            for r in range(reps):
                q[0, 0] = r * 1e-9
                thin(a, q, qd, qdd, out)

        t0 = time.perf_counter()
        loop(arg, q, qd, qdd, out, 1)
        compile_s = time.perf_counter() - t0
        python = per_call(lambda: thin(arg, q, qd, qdd, out))
        compiled = per_call(lambda: loop(arg, q, qd, qdd, out, 1000)) / 1000
        print(f"  {name:34s} {python * 1e6:8.3f} us   {compiled * 1e6:8.3f} us   {compile_s:5.2f} s")


if __name__ == "__main__":
    main()
