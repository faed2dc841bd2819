"""Headless Chromium for the browser tests, driven over the DevTools protocol with the standard
library only (an HTTP upgrade to a websocket, text frames both ways).

`Browser()` starts Debian's chromium-headless-shell (or chromium) with a new profile, bound to
127.0.0.1; `page.goto(url)`, `page.evaluate(js)` (awaiting a promise), `page.screenshot()`.
Where no Chromium is installed, `browser_or_skip()` skips the test with the reason, unless
BLOCKSIM_REQUIRE_BROWSER=1 (CI, which installs it), where the test fails instead."""
from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request

import pytest

CANDIDATES = ("chromium-headless-shell", "chromium", "chromium-browser")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
         "--window-size=1280,900")


def chromium_path() -> str | None:
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def browser_or_skip() -> str:
    path = chromium_path()
    if path is None:
        reason = ("no headless Chromium here (apt-get install chromium-headless-shell, as .ci/run "
                  "does)")
        if os.environ.get("BLOCKSIM_REQUIRE_BROWSER") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return path


class _Socket:
    """A websocket client connection: masked text frames out, whole messages in."""

    def __init__(self, url: str, timeout: float):
        m = re.match(r"ws://([^:/]+):(\d+)(/.*)", url)
        host, port, path = m.group(1), int(m.group(2)), m.group(3)
        self.sock = socket.create_connection((host, port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("the browser closed the websocket handshake")
            head += chunk
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(head.decode(errors="replace"))
        self.buffer = head.split(b"\r\n\r\n", 1)[1]

    def send(self, text: str) -> None:
        data = text.encode()
        n = len(data)
        header = bytes([0x81])
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _read(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("the browser closed the websocket")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def receive(self) -> str:
        message = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            payload = self._read(n)
            if b0 & 0x0F in (0x1, 0x0):
                message += payload
                if b0 & 0x80:
                    return message.decode()


class Browser:
    """One headless Chromium with one page; a context manager that ends the browser it started."""

    def __init__(self, timeout: float = 60.0):
        self.path = browser_or_skip()
        self.profile = tempfile.mkdtemp(prefix="blocksim-chromium-")
        self.timeout = timeout
        # a session of its own: Debian's /usr/bin/chromium* are shell scripts that start the
        # browser as their child, so close() ends the whole group, not the script alone
        self.proc = subprocess.Popen([self.path, *FLAGS, f"--user-data-dir={self.profile}",
                                      "about:blank"], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, start_new_session=True)
        port = None
        deadline = time.monotonic() + timeout
        while port is None and time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line and self.proc.poll() is not None:
                raise RuntimeError(f"{self.path} ended at start (exit {self.proc.returncode})")
            m = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            if m:
                port = int(m.group(1))
        if port is None:
            self.close()
            raise RuntimeError(f"{self.path} did not open its DevTools port in {timeout} s")
        self._drain = __import__("threading").Thread(target=self._drain_stderr, daemon=True)
        self._drain.start()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=timeout) as fh:
            pages = [p for p in json.load(fh) if p.get("type") == "page"]
        self.ws = _Socket(pages[0]["webSocketDebuggerUrl"], timeout)
        self._id = 0
        self.events: list[str] = []
        self.requests: list[str] = []
        self.call("Page.enable")
        self.call("Network.enable")
        self.call("Runtime.enable")

    def _drain_stderr(self):
        for _ in self.proc.stderr:
            pass

    def call(self, method: str, **params) -> dict:
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.receive())
            if msg.get("id") == self._id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self._event(msg)

    def _event(self, msg: dict) -> None:
        self.events.append(msg["method"])
        if msg["method"] == "Network.requestWillBeSent":
            self.requests.append(msg["params"]["request"]["url"])

    def goto(self, url: str) -> None:
        """Open url and wait for its load event; `requests` then lists the URLs it asked for."""
        self.events, self.requests = [], []
        self.call("Page.navigate", url=url)
        while "Page.loadEventFired" not in self.events:
            msg = json.loads(self.ws.receive())
            if "method" in msg:
                self._event(msg)

    def evaluate(self, expression: str):
        """The value of a JavaScript expression (a promise is awaited); a thrown error raises."""
        out = self.call("Runtime.evaluate", expression=expression, awaitPromise=True,
                        returnByValue=True, timeout=int(self.timeout * 1000))
        if "exceptionDetails" in out:
            raise RuntimeError(f"{expression[:80]}: {out['exceptionDetails']}")
        return out["result"].get("value")

    def screenshot(self) -> bytes:
        return base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])

    def close(self) -> None:
        """End the browser: its process group (the one this object started), then its profile."""
        import signal
        for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline:
                try:
                    os.killpg(self.proc.pid, 0)
                except ProcessLookupError:
                    break
                self.proc.poll()
                time.sleep(0.05)
            else:
                continue
            break
        self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
