"""Progress on stderr: a bar with ETA over measurements, one line per finished point.

Plain lines stand in when stderr is not a terminal or NO_COLOR is set, so the runner never
asks whether progress is wanted; both implement pgcachelab.progress.Progress.
"""

import os
import sys

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from pgcachelab.printable import printable, printable_lines
from pgcachelab.progress import QuietProgress


class LineProgress(QuietProgress):
    """Plain lines only: for logs and pipes."""

    def __init__(self, stream=None):
        super().__init__(self._print)
        self.stream = stream or sys.stderr

    def start(self, total: int, completed: int) -> None:
        if completed:
            self._print(f"resuming: {completed} of {total} measurements already done")

    def _print(self, line: str) -> None:
        print(printable_lines(line), file=self.stream, flush=True)


class BarProgress(LineProgress):
    def __init__(self):
        super().__init__()
        self.console = Console(stderr=True)
        self.bar = Progress(
            TextColumn("{task.description}", markup=False),  # a label's [/x] is text
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=self.console,
            transient=True,
        )
        self.task = None

    def __enter__(self):
        self.bar.__enter__()
        return self

    def __exit__(self, *exc):
        return self.bar.__exit__(*exc)

    def start(self, total: int, completed: int) -> None:
        self.task = self.bar.add_task("measuring", total=total, completed=completed)
        if completed:
            self.note(f"resuming: {completed} of {total} measurements already done")

    def begin(self, description: str) -> None:
        assert self.task is not None  # start() comes first
        self.bar.update(self.task, description=printable(description))

    def finished(self, line: str) -> None:
        self.console.print(printable_lines(line), highlight=False, markup=False)
        assert self.task is not None  # start() comes first
        self.bar.advance(self.task)

    def note(self, line: str) -> None:
        self.console.print(printable_lines(line), highlight=False, markup=False)


def make_progress() -> LineProgress:
    if sys.stderr.isatty() and not os.environ.get("NO_COLOR"):
        return BarProgress()
    return LineProgress()
