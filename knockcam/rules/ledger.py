"""The ledger: one entry per money movement, per choice the engine made, and per notable non-payment.

Every coin the engine moves is an entry naming its rule id (RULES.md), the side, the signed change
to that side's cash, the signed change to the Free Parking pot, and a reason a player can read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Entry kinds: money moved; a choice (given by the player or made by the engine); a payment refused
# (S4: cannot pay); a note explaining why something did not pay (outranked, jailed, off the board).
KINDS = ("money", "choice", "refused", "note")


@dataclass(frozen=True)
class LedgerEntry:
    """One line of the ledger. ``amount`` is the side's cash change, ``pot`` the pot's change (both in M).

    For a choice, ``chose`` names the space(s) chosen, ``worth`` what the choice is worth to the side in
    E3, ``by`` is ``"player"`` or ``"engine"`` and ``alternatives`` lists (space(s), worth) not chosen.
    """

    rule: str
    kind: str
    side: str | None
    amount: int
    pot: int
    reason: str
    space: str | None = None
    chose: tuple[str, ...] = ()
    by: str | None = None
    worth: int | None = None
    alternatives: tuple[tuple[str, int], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule, "kind": self.kind, "side": self.side,
                               "amount": self.amount, "pot": self.pot, "reason": self.reason}
        if self.space is not None:
            out["space"] = self.space
        if self.kind == "choice":
            out["chose"] = list(self.chose)
            out["by"] = self.by
            out["worth"] = self.worth
            out["alternatives"] = [{"choice": label, "worth": worth} for label, worth in self.alternatives]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "LedgerEntry":
        return cls(rule=data["rule"], kind=data["kind"], side=data["side"], amount=int(data["amount"]),
                   pot=int(data["pot"]), reason=data["reason"], space=data.get("space"),
                   chose=tuple(data.get("chose", ())), by=data.get("by"), worth=data.get("worth"),
                   alternatives=tuple((a["choice"], int(a["worth"])) for a in data.get("alternatives", ())))


def money(rule: str, side: str | None, amount: int, pot: int, reason: str, space: str | None = None) -> LedgerEntry:
    """A money movement."""
    return LedgerEntry(rule=rule, kind="money", side=side, amount=amount, pot=pot, reason=reason, space=space)


def note(rule: str, side: str | None, reason: str, space: str | None = None, kind: str = "note") -> LedgerEntry:
    """A line that moves no money but explains the outcome (a refusal or a non-payment)."""
    return LedgerEntry(rule=rule, kind=kind, side=side, amount=0, pot=0, reason=reason, space=space)


def signed(amount: int) -> str:
    """Money as the ledger writes it: ``+250``, ``-100``."""
    return f"{amount:+d}"
