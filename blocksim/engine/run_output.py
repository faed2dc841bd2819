"""What one run of a plan hands back to the Simulator: the log, the events, the statistics."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Event:
    """A located zero crossing: time (s), block, event-function index and batch member."""

    t: float
    block: str
    index: int
    member: int


@dataclass
class RunOutput:
    """t: the logged times (s); signals: name -> (B, len(t), width); events; stats (steps,
    evaluations, mode); interrupted: stopped by Ctrl-C or a stop request; stopped_by: the block
    whose event ended the run."""

    t: np.ndarray
    signals: dict[str, np.ndarray]
    events: list[Event] = field(default_factory=list)
    stats: dict = field(default_factory=dict)
    interrupted: bool = False
    stopped_by: str | None = None
