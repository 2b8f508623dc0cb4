"""Ctrl-C and SIGTERM, remembered as well as raised.

The handler raises KeyboardInterrupt, but Python swallows an exception raised while it runs
the at-fork callbacks of a subprocess start ("Exception ignored in: _releaseLock", found by the
fault suite): the signal is then lost and the run went on to the end. The signal is also
recorded here, and the runner checks after every measurement.
"""

import signal

_received: int | None = None
_stopped_servers = 0  # servers the lab stopped once a signal had asked it to stop


def handle(signum, frame) -> None:
    """The lab's handler of SIGINT and SIGTERM."""
    global _received
    _received = signum
    raise KeyboardInterrupt


def received() -> int | None:
    """The signal that asked the lab to stop, if one did."""
    return _received


def server_stopped() -> None:
    """A server the lab ran was stopped: counted once a signal has asked the lab to stop, so
    that the lab says it stopped one only when it did (an agent waiting for units runs none)."""
    global _stopped_servers
    if _received is not None:
        _stopped_servers += 1


def stopped_servers() -> int:
    """Servers stopped since a signal asked the lab to stop."""
    return _stopped_servers


def raise_if_received() -> None:
    """Raise the KeyboardInterrupt a swallowed signal should have raised."""
    if _received is not None:
        raise KeyboardInterrupt


def install() -> None:
    # A shell starts background jobs with SIGINT ignored, and Python then never raises
    # KeyboardInterrupt: a `kill -INT` would be lost and the server left running.
    signal.signal(signal.SIGINT, handle)
    # SIGTERM takes the Ctrl-C path, so the server is stopped and the run marked interrupted.
    signal.signal(signal.SIGTERM, handle)
