"""The one error type a user sees: a one-line message, exit code 2, no traceback."""


class KnockcamError(Exception):
    """Bad input or an impossible request, explained in one line (what, where, what to do)."""

    exit_code = 2
