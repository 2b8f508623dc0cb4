"""The lab's own error types: the one user-facing error, caught once in the CLI, and the one
base of the errors that fail a point (its reason is recorded and the sweep goes on).

They live at the bottom of the layers (pyproject.toml's import contract), so that a layer
raises what a higher one catches without importing upward.
"""


class UserError(Exception):
    """Bad input or an unusable environment: one line for the user, exit code 2.

    `message` names the option or key and quotes the bad value; `hint` says how to fix it.
    """

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message}\nhint: {self.hint}"
        return self.message


class RunFailed(UserError):
    """The environment failed once a run had started (the disk filled, the store went away):
    one line like a UserError, but exit code 1, as for a run that could not finish."""

    exit_code = 1


class PointError(Exception):
    """A point could not be measured; the message is the reason recorded for it."""


class ClusterError(PointError):
    """The server would not initialise, start or stop; the message is the reason to record.

    Here rather than in clusters/: the emulated machine (machine/emulated.py) refuses a server
    start with it from the hook the cluster calls before every start.
    """
