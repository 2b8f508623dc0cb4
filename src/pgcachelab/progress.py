"""The one progress protocol: what a run, the TPC-C loader and its driver say as they go.

The CLI's classes (cli/progress.py: a bar, or plain lines) implement it; a workload that runs a
task with progress of its own inside a measurement (the TPC-C load) hands that task a
QuietProgress, which passes on only its lines.
"""

from collections.abc import Callable
from typing import Protocol, Self


class Progress(Protocol):
    """Entered around a whole task; `start` once, then `begin` and `finished` per step."""

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc) -> bool | None: ...

    def start(self, total: int, completed: int) -> None:
        """`total` steps, of which `completed` were done before (a resumed run)."""

    def begin(self, description: str) -> None:
        """The step that runs now (a bar's description)."""

    def finished(self, line: str) -> None:
        """A step ended: its line."""

    def note(self, line: str) -> None:
        """A line that is not a step."""


class QuietProgress:
    """Progress that shows no bar: only its lines, through `show` when one is given."""

    def __init__(self, show: Callable[[str], None] | None = None):
        self.show = show

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def start(self, total: int, completed: int) -> None:
        pass

    def begin(self, description: str) -> None:
        pass

    def finished(self, line: str) -> None:
        if self.show is not None:
            self.show(line)

    def note(self, line: str) -> None:
        self.finished(line)
