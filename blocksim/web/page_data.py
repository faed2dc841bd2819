"""The numbers of a page, packed small: one zlib-deflated, base64 block of binary arrays that
the page inflates with the browser's DecompressionStream.

- a time vector: float64, exact (stored once however many traces share it);
- a trace's kept sample indices (when decimated): uint32, delta-coded;
- a trace's values: uint16 codes over the trace's own [lo, hi], delta-coded (mod 65536); a
  code of 65535 is a NaN or infinity (a gap). So a value is shown to within (hi - lo) / 131068,
  far below a pixel of its figure; the exact values are in the run's files.
"""
from __future__ import annotations

import base64
import zlib

import numpy as np

GAP = 65535
STEPS = 65534


class Packer:
    """Collects the arrays of a page; each method returns the reference the page reads."""

    def __init__(self):
        self._chunks: list[bytes] = []
        self._size = 0
        self._times: dict[bytes, dict] = {}

    def _add(self, data: bytes) -> int:
        offset = self._size
        self._chunks.append(data)
        self._size += len(data)
        pad = (-self._size) % 8
        if pad:
            self._chunks.append(b"\0" * pad)
            self._size += pad
        return offset

    def time(self, t) -> dict:
        """{off, n} of a float64 time vector (in s), shared by equal vectors."""
        raw = np.ascontiguousarray(t, dtype="<f8").tobytes()
        if raw not in self._times:
            self._times[raw] = {"off": self._add(raw), "n": len(t)}
        return self._times[raw]

    def indices(self, keep: np.ndarray) -> dict:
        """{off, n} of sample indices, delta-coded uint32."""
        keep = np.asarray(keep, dtype=np.int64)
        deltas = np.diff(keep, prepend=0).astype("<u4")
        return {"off": self._add(deltas.tobytes()), "n": len(keep)}

    def values(self, y: np.ndarray) -> dict:
        """{off, n, lo, hi} of values coded as uint16 over [lo, hi], delta-coded."""
        y = np.asarray(y, dtype=float)
        finite = np.isfinite(y)
        lo = float(y[finite].min()) if finite.any() else 0.0
        hi = float(y[finite].max()) if finite.any() else 0.0
        span = hi - lo
        codes = np.full(len(y), GAP, dtype=np.int64)
        if span > 0:
            codes[finite] = np.rint((y[finite] - lo) / span * STEPS)
        else:
            codes[finite] = 0
        deltas = (np.diff(codes, prepend=0) % 65536).astype("<u2")
        return {"off": self._add(deltas.tobytes()), "n": len(y), "lo": lo, "hi": hi}

    def blob(self) -> str:
        """All arrays, deflated (zlib) and base64 encoded."""
        return base64.b64encode(zlib.compress(b"".join(self._chunks), 9)).decode("ascii")


def decode_values(blob: str, ref: dict) -> np.ndarray:
    """The values the page shows for `ref` (Packer.values), decoded as the page decodes them
    (used by the tests and by serve's checks)."""
    raw = zlib.decompress(base64.b64decode(blob))
    deltas = np.frombuffer(raw, dtype="<u2", count=ref["n"], offset=ref["off"]).astype(np.int64)
    codes = np.cumsum(deltas) % 65536
    y = ref["lo"] + codes * ((ref["hi"] - ref["lo"]) / STEPS)
    return np.where(codes == GAP, np.nan, y)
