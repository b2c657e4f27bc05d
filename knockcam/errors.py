"""The one error type a user sees: a one-line message, exit code 2, no traceback."""


class KnockcamError(Exception):
    """Bad input or an impossible request, explained in one line (what, where, what to do).

    ``reason`` is what went wrong and ``what_to_do`` the advice, when given apart; the message joins
    them with ": ". A caller with advice of its own (live mode takes no --corners) reads ``reason``."""

    exit_code = 2

    def __init__(self, reason: str, what_to_do: str = ""):
        super().__init__(f"{reason}: {what_to_do}" if what_to_do else reason)
        self.reason = reason
        self.what_to_do = what_to_do
