"""The live tuning page (`python cli.py serve FILE --tune pid.Kp`): a local web server, bound to
127.0.0.1 only, whose page has a slider and a field for each element of each tuned parameter;
each change reruns the diagram through the fast-restart path (one Simulator, compiled once,
new values by Simulator.set_parameters) and redraws the scopes.

Runs are coalesced: the page keeps at most one request in flight and sends only the latest
values when it returns; the server runs the latest request it has, and answers an older one
that a newer one overtook with "superseded" (its result, if it was running, is dropped). The
diagram file is never written: the page shows the tuned values as a variant to paste into it,
and its "Save as variant" button (only when pressed) writes them as a variant into a file of
its own beside the diagram (web/variant_file.py).
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np

from ..errors import BlocksimError
from .decimate import DEFAULT_MAX_POINTS

HERE = Path(__file__).parent


def tuned_values(diagram, names: list[str]) -> dict[str, list[float]]:
    """{block.param: its elements} of each tuned parameter, from the loaded diagram (after the
    variant and --set); a name that is no numeric block parameter is an error naming it."""
    from ..errors import did_you_mean
    out = {}
    for key in names:
        block, _, param = key.partition(".")
        blocks = diagram.spec.blocks
        if block not in blocks or not param:
            raise BlocksimError(f"--tune {key}: no block '{block}'{did_you_mean(block, blocks)}; "
                                "name a block parameter as block.param")
        params = blocks[block].params
        if param not in params:
            cls_params = getattr(type(diagram.compile().blocks[block]), "params", {})
            if param not in cls_params:
                raise BlocksimError(f"--tune {key}: block '{block}' has no parameter '{param}'"
                                    f"{did_you_mean(param, cls_params)}", block=block)
            value = cls_params[param].default
        else:
            value = params[param]
        try:
            flat = np.asarray(value, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise BlocksimError(f"--tune {key}: {value!r} is not a number or a list of numbers",
                                block=block) from None
        out[key] = [float(v) for v in flat]
    return out


class Tuner:
    """One Simulator of the diagram and the latest request: `request(seq, values)` is answered
    with the figures of a run of those values, or "superseded" when a newer request came."""

    def __init__(self, diagram, tune: dict[str, list[float]], cap: int = DEFAULT_MAX_POINTS):
        import blocksim
        self.diagram = diagram
        self.tune = tune
        self.cap = cap
        self.sim = blocksim.Simulator(diagram)
        self.runs = 0
        self._lock = threading.Condition()
        self._wanted: tuple[int, dict] | None = None
        self._done: dict | None = None
        self._latest = -1
        self._context = None
        threading.Thread(target=self._work, daemon=True, name="blocksim-serve-runs").start()

    def initial(self) -> dict:
        """The last run drawn (a page opened again continues from its seq), or a first run of
        the diagram's own values."""
        with self._lock:
            done = self._done
        return done if done is not None and "error" not in done else self.request(0, self.tune)

    def request(self, seq: int, values: dict) -> dict:
        with self._lock:
            if seq < self._latest or (seq == self._latest and seq != 0):
                return {"seq": seq, "superseded": True}
            self._latest = max(self._latest, seq)
            self._wanted = (seq, values)
            self._lock.notify_all()
            while True:
                if self._latest > seq:
                    return {"seq": seq, "superseded": True}
                if self._done is not None and self._done["seq"] == seq:
                    return self._done
                self._lock.wait(timeout=1.0)

    def _work(self) -> None:
        while True:
            with self._lock:
                while self._wanted is None:
                    self._lock.wait()
                seq, values = self._wanted
                self._wanted = None
            answer = self._run(seq, values)
            with self._lock:
                if seq == self._latest:      # an overtaken run's figures are dropped
                    self._done = answer
                self._lock.notify_all()

    def parameters(self, values: dict) -> dict:
        """The page's values ({key: [elements]}) as parameter values: a scalar for a scalar
        parameter, else the list, in float (what set_parameters and a variant take)."""
        try:
            return {k: (float(v[0]) if len(self.tune[k]) == 1 else [float(x) for x in v])
                    for k, v in values.items() if k in self.tune}
        except (TypeError, ValueError, IndexError):
            raise BlocksimError(f"the values {values} are not numbers for "
                                f"{', '.join(self.tune)}") from None

    def _run(self, seq: int, values: dict) -> dict:
        from .report import context, page_state
        try:
            self.sim.set_parameters(self.parameters(values))
            result = self.sim.run()
            self.runs += 1
            results = {"tuned": result}
            folder = Path(str(self.diagram.path)).parent
            if self._context is None:        # scopes, units, joints: the same in every rerun
                self._context = context(results, folder)
            state = page_state(results, folder, self.cap, title=self.diagram.name,
                               known=self._context)
        except BlocksimError as err:
            return {"seq": seq, "error": str(err)}
        state.update(seq=seq, values=values, runs=self.runs)
        return state


def _handler(tuner: Tuner, page: str, plotly: str, save=None):
    """The request handler: GET the page, plotly.js and the state; POST /run; POST /save (with
    `save(name, values)`), which writes a file and so is answered only for a JSON request from
    the page itself (its Host and Origin this server's; a browser sends no such request from
    another site without asking this server first, and this server allows none)."""
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):       # quiet: the command prints its own lines
            pass

        def _send(self, body: bytes, kind: str, code: int = 200):
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path in ("/", "/index.html"):
                self._send(page.encode(), "text/html; charset=utf-8")
            elif self.path == "/plotly.min.js":
                self._send(plotly.encode(), "text/javascript")
            elif self.path == "/state":
                self._send(json.dumps({"tune": tuner.tune, "run": tuner.initial()}).encode(),
                           "application/json")
            else:
                self._send(b"not found", "text/plain", 404)

        def _own(self) -> bool:
            here = f"127.0.0.1:{self.server.server_address[1]}"
            return (self.headers.get("Host") == here
                    and self.headers.get("Origin", f"http://{here}") == f"http://{here}"
                    and self.headers.get("Content-Type", "").startswith("application/json"))

        def do_POST(self):
            if self.path == "/save" and save is not None:
                if not self._own():
                    self._send(b'{"error": "not from this page"}', "application/json", 403)
                    return
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                    name, values = str(body["name"]), dict(body["values"])
                except (ValueError, KeyError, TypeError):
                    self._send(b'{"error": "a save request is {name, values}"}',
                               "application/json", 400)
                    return
                try:
                    path, command = save(name, values)
                    answer = {"file": str(path), "command": command}
                except BlocksimError as err:
                    answer = {"error": str(err)}
                self._send(json.dumps(answer).encode(), "application/json")
                return
            if self.path != "/run":
                self._send(b"not found", "text/plain", 404)
                return
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                seq, values = int(body["seq"]), dict(body["values"])
            except (ValueError, KeyError, TypeError):
                self._send(b'{"error": "a run request is {seq, values}"}', "application/json",
                           400)
                return
            self._send(json.dumps(tuner.request(seq, values)).encode(), "application/json")
    return Handler


def serve(path, tune: list[str], port: int = 8765, variant=None, set=None,  # noqa: A002
          cap: int = DEFAULT_MAX_POINTS, ready=print) -> None:
    """Serve the tuning page of diagram `path` on http://127.0.0.1:PORT/ until interrupted
    (port 0: a free port, said by `ready`)."""
    import blocksim

    from .report import plotly_js
    if not tune:
        raise BlocksimError("serve needs at least one --tune block.param (e.g. --tune pid.Kp)")
    js, _ = plotly_js()
    diagram = blocksim.load(path, variant=variant, set=set or None)
    tuner = Tuner(diagram, tuned_values(diagram, tune), cap)
    lock = threading.Lock()

    def saver(name: str, values: dict):
        from .variant_file import save_variant
        with lock:                       # one save at a time: each reads the file the last wrote
            return save_variant(path, name, variant, set or {}, tuner.parameters(values))
    page = ((HERE / "serve.html").read_text()
            .replace("{{TITLE}}", diagram.name)
            .replace("{{STYLE}}", (HERE / "report.css").read_text())
            .replace("{{SCRIPT}}", (HERE / "report.js").read_text() + (HERE / "serve.js").read_text()))
    try:
        server = ThreadingHTTPServer(("127.0.0.1", port), _handler(tuner, page, js, saver))
    except OSError as err:
        raise BlocksimError(f"--port {port}: {err.strerror or err}") from None
    server.daemon_threads = True
    ready(f"serving {diagram.name} on http://127.0.0.1:{server.server_address[1]}/ "
          f"(tuning {', '.join(tune)}; Ctrl-C stops)")
    try:
        server.serve_forever()
    finally:
        server.server_close()
