"""A whole game, played round by round: carried cash, pot and turn order (N1-N3), standings (W1).

The live camera mode drives a Game step by step: during the sliding phase it asks ``can_pay_jail`` /
``reslide`` (S4, S2) and records the payments, then ``play_round`` scores the round's positions.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping

from knockcam.board.layout import Board
from knockcam.errors import KnockcamError
from knockcam.rules.money import DEFAULT_MONEY_UNIT, JAIL_FEE, POT_START, RESLIDE_FEE
from knockcam.rules.parse import PLAY_FIELDS, parse_game, parse_play
from knockcam.rules.round import (EVENT_KINDS, RESLIDE_VARIANTS, RoundInput, RoundResult, SlideEvent,
                                  TokenPlacement, score_round, validate_round)


@dataclass(frozen=True)
class Standing:
    """W1: a side's place (equal money shares the place) and its cash."""

    place: int
    side: str
    cash: int

    def to_dict(self) -> dict[str, Any]:
        return {"place": self.place, "side": self.side, "cash": self.cash}


class Game:
    """The state of one game: turn order, cash, pot, round number, history; ``play_round`` advances it."""

    def __init__(self, order: Iterable[str], board: Board, *, pot: int = POT_START,
                 cash: Mapping[str, int] | None = None, money_unit: int = DEFAULT_MONEY_UNIT,
                 reslide_off_board: str = "none", where: str = "game") -> None:
        order = tuple(order)
        if reslide_off_board not in RESLIDE_VARIANTS:
            raise KnockcamError(f"{where}: reslide_off_board: one of {', '.join(RESLIDE_VARIANTS)}, "
                                f"not {reslide_off_board!r} (S2)")
        validate_round(RoundInput(order=order, pot=pot, cash=dict(cash or {}), money_unit=money_unit,
                                  reslide_off_board=reslide_off_board), board, where)
        self.board = board
        self.first_order = order
        self.start_pot = pot
        self.start_cash = {side: int((cash or {}).get(side, 0)) for side in order}
        self.money_unit = money_unit
        self.reslide_off_board = reslide_off_board
        self.rounds_total = len(order)  # R5: as many rounds as sides
        self.order = order
        self.pot = pot
        self.cash = dict(self.start_cash)
        self.round_number = 0           # rounds played so far
        self.inputs: list[RoundInput] = []
        self.history: list[RoundResult] = []
        self.pending: list[SlideEvent] = []  # this round's sliding-phase payments so far

    # -- the sliding phase (S2, S4) -------------------------------------------------------------
    @property
    def over(self) -> bool:
        return self.round_number >= self.rounds_total

    def cash_now(self, side: str) -> int:
        """What the side holds at this moment of the sliding phase (cash less fees paid this round)."""
        self._need_side(side)
        held = dict(self.cash)
        for event in self.pending:
            fee = EVENT_KINDS[event.kind][1]
            if held[event.side] >= fee:
                held[event.side] -= fee
        return held[side]

    def can_pay_jail(self, side: str) -> bool:
        """S4: a jailed token may be slid again only if its side holds at least M100 now (never in round 1)."""
        return self.cash_now(side) >= JAIL_FEE

    def pay_jail(self, side: str) -> bool:
        """S4: record the M100 jail fee if the side can pay; False (token stays in jail) if it cannot."""
        if not self.can_pay_jail(side):
            return False
        self.pending.append(SlideEvent(side, "jail_fee"))
        return True

    def can_reslide(self, side: str, hit_another_token: bool = False) -> bool:
        """S2: may an off-board token slide again under this game's variant (never after hitting a token)?"""
        self._need_side(side)
        if self.reslide_off_board == "none" or hit_another_token:
            return False
        return self.reslide_off_board == "free" or self.cash_now(side) >= RESLIDE_FEE

    def reslide(self, side: str, hit_another_token: bool = False) -> bool:
        """S2: allow a re-slide if the variant permits it, recording the M100 fee under ``paid``."""
        if not self.can_reslide(side, hit_another_token):
            return False
        if self.reslide_off_board == "paid":
            self.pending.append(SlideEvent(side, "reslide_fee"))
        return True

    # -- scoring ----------------------------------------------------------------------------------
    def round_input(self, tokens: Iterable[TokenPlacement | tuple[str, str | None]],
                    railroad_choice: Mapping[str, Iterable[str | None]] | None = None,
                    house_choice: Mapping[str, str] | None = None,
                    events: Iterable[SlideEvent] | None = None) -> RoundInput:
        """This round's input from the game state: order, pot and cash carried, pending payments included."""
        placed = tuple(t if isinstance(t, TokenPlacement) else TokenPlacement(*t) for t in tokens)
        return RoundInput(order=self.order, pot=self.pot, cash=dict(self.cash), tokens=placed,
                          events=tuple(self.pending if events is None else events),
                          railroad_choice={s: tuple(v) for s, v in (railroad_choice or {}).items()},
                          house_choice=dict(house_choice or {}), money_unit=self.money_unit,
                          reslide_off_board=self.reslide_off_board)

    def play_round(self, round_input: RoundInput, where: str | None = None) -> RoundResult:
        """Score the round (E1-E4), then N1-N3: carry cash and pot (refilled if empty), rotate the order."""
        where = where or f"game round {self.round_number + 1}"
        if self.over:
            raise KnockcamError(f"{where}: the game is over: {self.rounds_total} sides play {self.rounds_total} "
                                "rounds (R5)")
        if tuple(round_input.order) != self.order:
            raise KnockcamError(f"{where}: order: expected {list(self.order)} after rotation, "
                                f"not {list(round_input.order)} (R6)")
        if round_input.pot != self.pot:
            raise KnockcamError(f"{where}: pot: expected M{self.pot} carried over, not {round_input.pot!r} (R4)")
        for side in self.order:
            if round_input.cash_of(side) != self.cash[side]:
                raise KnockcamError(f"{where}: cash.{side}: expected M{self.cash[side]} carried over, "
                                    f"not {round_input.cash.get(side)!r} (R3)")
        if round_input.money_unit != self.money_unit:
            raise KnockcamError(f"{where}: money_unit: this game uses M{self.money_unit} (R3)")
        if round_input.reslide_off_board not in (None, self.reslide_off_board):
            raise KnockcamError(f"{where}: reslide_off_board: this game plays {self.reslide_off_board!r} (S2)")
        if round_input.reslide_off_board is None:  # the game's variant governs its rounds
            round_input = replace(round_input, reslide_off_board=self.reslide_off_board)
        result = score_round(round_input, self.board, where)
        self.inputs.append(round_input)
        self.history.append(result)
        self.cash = dict(result.cash)
        self.pot = result.pot_after      # N2 refill included
        self.order = result.next_order   # N3
        self.round_number += 1
        self.pending = []                # N1: every token returns
        return result

    def play(self, tokens: Iterable[TokenPlacement | tuple[str, str | None]], **choices: Any) -> RoundResult:
        """``play_round(round_input(tokens, ...))`` in one call."""
        return self.play_round(self.round_input(tokens, **choices))

    def standings(self) -> list[Standing]:
        """W1: most money first; equal money shares the place (ties listed in round 1's turn order)."""
        first = {side: i for i, side in enumerate(self.first_order)}
        ranked = sorted(self.first_order, key=lambda s: (-self.cash[s], first[s]))
        return [Standing(place=1 + sum(1 for o in ranked if self.cash[o] > self.cash[s]), side=s, cash=self.cash[s])
                for s in ranked]

    # -- save and resume ----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A game file: settings, the rounds played (positions and choices) and the state they lead to."""
        rounds = []
        for ri in self.inputs:
            full = ri.to_dict()
            rounds.append({key: full[key] for key in PLAY_FIELDS if key in full})
        return {"order": list(self.first_order), "pot": self.start_pot, "money_unit": self.money_unit,
                "cash": dict(self.start_cash), "reslide_off_board": self.reslide_off_board, "rounds": rounds,
                "state": {"round": self.round_number, "order": list(self.order), "cash": dict(self.cash),
                          "pot": self.pot},
                "pending_events": [{"side": e.side, "kind": e.kind} for e in self.pending]}

    @classmethod
    def from_dict(cls, data: Any, board: Board, where: str = "game") -> "Game":
        """Resume a saved game (or play a game file) by replaying its rounds; checks any saved state matches."""
        spec = parse_game(data, where)
        game = cls(spec["order"], board, pot=spec["pot"], cash=spec["cash"], money_unit=spec["money_unit"],
                   reslide_off_board=spec["reslide_off_board"], where=where)
        for i, item in enumerate(spec["rounds"]):
            at = f"{where}: rounds[{i}]"
            for key, now in (("order", list(game.order)), ("pot", game.pot), ("money_unit", game.money_unit)):
                if key in item and item[key] != now:
                    rule = {"order": "R6", "pot": "R4", "money_unit": "R3"}[key]
                    raise KnockcamError(f"{at}: {key}: expected {now!r} carried over, not {item[key]!r} ({rule})")
            if "reslide_off_board" in item and item["reslide_off_board"] != game.reslide_off_board:
                raise KnockcamError(f"{at}: reslide_off_board: this game plays {game.reslide_off_board!r}, not "
                                    f"{item['reslide_off_board']!r}: the variant is set once, at the top of the game "
                                    "file (S2)")
            if "cash" in item:
                if not isinstance(item["cash"], dict) or any(item["cash"].get(s, 0) != game.cash[s] for s in game.order):
                    raise KnockcamError(f"{at}: cash: expected {game.cash} carried over, not {item['cash']!r} (R3)")
            play = parse_play(item, board, at)
            game.play_round(game.round_input(play["tokens"], play["railroad_choice"], play["house_choice"],
                                             play["events"]), where=at)
        state = spec["state"]
        if state is not None:
            now = {"round": game.round_number, "order": list(game.order), "cash": dict(game.cash), "pot": game.pot}
            if not isinstance(state, dict) or {k: state.get(k) for k in now} != now:
                raise KnockcamError(f"{where}: state: the saved state does not match replaying its rounds on board "
                                    f"{board.name!r} (replay gives {now})")
        for i, event in enumerate(spec["pending_events"]):
            if event.side not in game.order or event.kind not in EVENT_KINDS:
                raise KnockcamError(f"{where}: pending_events[{i}]: must be {{side, kind}} with a side in the game "
                                    "and kind jail_fee or reslide_fee")
            game.pending.append(event)
        return game

    def _need_side(self, side: str) -> None:
        if side not in self.cash:
            raise KnockcamError(f"side {side!r} is not in this game ({', '.join(self.first_order)}) (R1)")
