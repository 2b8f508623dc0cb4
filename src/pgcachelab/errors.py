"""The one user-facing error type, caught once in the CLI."""


class UserError(Exception):
    """Bad input or an unusable environment: one line for the user, exit code 2.

    `message` names the option or key and quotes the bad value; `hint` says how to fix it.
    """

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message}\nhint: {self.hint}"
        return self.message
