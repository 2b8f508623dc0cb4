"""The one user-facing error type, caught once in the CLI."""


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
