"""Follows a game from what the camera sees when the board is still: slides, knock-offs, jail, Chance, Railroad.

The tracker is fed ``Observation``s (the tokens at rest on a still board) and asks the table through a
prompter when a rule needs a choice. It is deterministic: the same observations and answers give the
same game, which is how a game log is resumed and replayed. Scoring is the engine's (knockcam.rules).

Attribution (RULES.md S1): a new token at rest belongs to the side whose turn it is (or whose
re-slide is due, S4/E1/S2); tokens already on the board are followed by position (same colour,
nearest), so knocked tokens keep their owner; a token no longer seen was knocked off (S2), unless
something covers the board where it was (a hand, a cup): then it stays there, flagged, until seen.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
from typing import Any, Callable

from knockcam import settings
from knockcam.assign import doubt_words
from knockcam.board.layout import Board
from knockcam.detect.tokens import HiddenArea, near_hidden
from knockcam.errors import KnockcamError
from knockcam.live.prompts import Question, yes_no
from knockcam.report.evidence import space_name
from knockcam.rules import Game, RoundResult, score_round
from knockcam.rules import choices

ON_SPACE, NO_SPACE, OFF_BOARD = "on_space", "no_space", "off_board"
COVERED = "covered"  # a token's flag while it is not seen where something covers the board
# Tracked token states: on the board at rest; out for the round (off the board, knocked off, not seen);
# in jail (S4); in a player's hand, to be slid again (S4 paid, E1 Chance, S2 variant).
BOARD, OUT, JAIL, HAND = "board", "out", "jail", "hand"


@dataclass(frozen=True)
class Seen:
    """One token at rest as the detector and the board geometry saw it (what the game log keeps)."""

    side: str  # the colour seen
    xy_mm: tuple[float, float]
    space: str | None
    state: str = ON_SPACE  # on_space | no_space | off_board
    ambiguous: bool = False
    margin_mm: float = 0.0
    runner_up: str | None = None
    doubt: str | None = None  # why the call is left to a human (knockcam.assign.doubt_words), when it is

    def to_dict(self) -> dict:
        d = asdict(self)
        d["xy_mm"] = [round(float(v), 1) for v in self.xy_mm]
        d["margin_mm"] = round(float(self.margin_mm), 1)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Seen":
        return cls(side=d["side"], xy_mm=(float(d["xy_mm"][0]), float(d["xy_mm"][1])), space=d.get("space"),
                   state=d.get("state", ON_SPACE), ambiguous=bool(d.get("ambiguous", False)),
                   margin_mm=float(d.get("margin_mm", 0.0)), runner_up=d.get("runner_up"), doubt=d.get("doubt"))


@dataclass(frozen=True)
class Still:
    """What a detector makes of one still frame: the tokens at rest, and the parts of the board something
    else covers (a hand, a cup: knockcam.detect's hidden areas, from the cover network and the empty-board
    frame) where a token may not be seen."""

    seen: tuple[Seen, ...]
    covered: tuple[HiddenArea, ...] = ()
    positions: tuple = ()  # the knockcam.assign Positions ``seen`` was made from, in its order (close-ups; not logged)


@dataclass(frozen=True)
class Observation:
    """The tokens at rest on one still frame; ``launched``: a slide started since the last observation;
    ``covered``: the parts of the board something else covered (see Still)."""

    seen: tuple[Seen, ...]
    frame: int = -1
    t: float = 0.0
    launched: bool = False
    evidence: str | None = None  # the saved frame, relative to the log's folder
    covered: tuple[HiddenArea, ...] = ()

    def to_dict(self) -> dict:
        return {"frame": self.frame, "t": round(float(self.t), 3), "launched": self.launched,
                "evidence": self.evidence, "seen": [s.to_dict() for s in self.seen],
                "covered": [{"outline_mm": [[round(float(x), 1), round(float(y), 1)] for x, y in a.outline_mm],
                             "area_mm2": round(float(a.area_mm2))} for a in self.covered]}

    @classmethod
    def from_dict(cls, d: dict) -> "Observation":
        covered = tuple(HiddenArea(outline_mm=tuple((float(x), float(y)) for x, y in a["outline_mm"]),
                                   area_mm2=float(a["area_mm2"])) for a in d.get("covered", ()))
        return cls(seen=tuple(Seen.from_dict(s) for s in d.get("seen", ())), frame=int(d.get("frame", -1)),
                   t=float(d.get("t", 0.0)), launched=bool(d.get("launched", False)), evidence=d.get("evidence"),
                   covered=covered)


def seen_from_positions(positions) -> tuple[Seen, ...]:
    """knockcam.assign Positions -> Seen records."""
    return tuple(Seen(side=p.token.side, xy_mm=(float(p.token.xy_mm[0]), float(p.token.xy_mm[1])),
                      space=p.space, state=p.state, ambiguous=bool(p.ambiguous), margin_mm=float(p.margin_mm),
                      runner_up=p.runner_up, doubt=doubt_words(p) if p.ambiguous else None) for p in positions)


@dataclass
class Tracked:
    """A token the tracker follows this round: its owner, the colour last seen, where it is, its state."""

    id: int
    side: str
    colour: str
    xy_mm: tuple[float, float]
    space: str | None
    state: str
    on_space: bool = True
    ambiguous: bool = False
    doubt: str | None = None  # why, when ambiguous (Seen.doubt); None in a log written before reasons were kept
    rival: str | None = None  # a close call's other answer (Seen.runner_up: a space id, no_space or off_board) ...
    margin_mm: float = 0.0  # ... and how far the base centre can move before the call changes
    flags: list[str] = field(default_factory=list)
    parked: bool = False  # in jail or due a re-slide, but not yet taken off the board

    def resting(self, board: Board) -> str:
        """Where it rests on the board (state BOARD), in words: its space's printed name, or 'no space'."""
        return space_name(board, self.space if self.on_space else None)

    def doubts(self, board: Board) -> list[str]:
        """Why a human should look at it, in words: the camera's doubt (a close call with the other space it may
        rest on and the margin), then the tracker's flags (a vanished token is out: nothing to look at)."""
        doubt = self.doubt or "in doubt"
        if doubt == "close call" and self.rival:
            doubt = f"close call: or {space_name(board, self.rival)}, margin {self.margin_mm:.1f} mm"
        return ([doubt] if self.ambiguous else []) + [f for f in self.flags if f != "vanished"]

    def to_dict(self, board: Board) -> dict:
        return {"id": self.id, "side": self.side, "colour": self.colour,
                "xy_mm": [round(float(v), 1) for v in self.xy_mm], "space": self.space, "state": self.state,
                "ambiguous": self.ambiguous, "doubt": self.doubt, "flags": list(self.flags),
                "doubts": self.doubts(board),
                "rival": self.rival if self.ambiguous and self.doubt == "close call" else None}


@dataclass
class Reslide:
    side: str
    token: int
    why: str  # jail (S4) | chance (E1) | off_board (S2 variant)


class Tracker:
    """The game as the camera follows it. ``observe`` one still board at a time; ``emit`` gets every event."""

    def __init__(self, game: Game, board: Board, prompter, *, tokens_per_side: int | None = None,
                 review: str | None = None, emit: Callable[..., None] | None = None, cfg: dict | None = None):
        cfg = cfg or settings.load("live")
        self.game = game
        self.board = board
        self.prompter = prompter
        self.tokens_per_side = int(tokens_per_side or cfg["tracking"]["tokens_per_side"])
        self.review = review or cfg["review"]
        self.still_mm = float(cfg["tracking"]["still_mm"])
        self.colour_mm = float(cfg["tracking"]["colour_mm"])
        self.off_timeout_s = float(cfg["prompts"]["off_board_timeout_s"])
        self.emit_fn = emit
        self.kinds = {s.id: s.kind for s in board.spaces}
        self.names = {s.id: s.name for s in board.spaces}
        self.phase = "over" if game.over else "clear"
        self.tokens: list[Tracked] = []
        self.slid: dict[str, int] = {}
        self.turn = 0
        self.queue: list[Reslide] = []
        self.chance_pending: list[int] = []
        self.asked: dict[tuple, int] = {}
        self.last_obs: Observation | None = None
        self.told_clear = False
        self.review_requested = False
        self.off_asked: tuple[str, int] | None = None  # (side, its slides then): asked once per slide

    # -- helpers ------------------------------------------------------------------------------------
    @property
    def round(self) -> int:
        return self.game.round_number + (0 if self.phase == "over" else 1)

    @property
    def order(self) -> tuple[str, ...]:
        return self.game.order

    def emit(self, kind: str, **data: Any) -> None:
        if self.emit_fn is not None:
            self.emit_fn(kind, **data)

    def tell(self, message: str) -> None:
        self.prompter.tell(message)

    def ask(self, kind: str, side: str | None, text: str, default: str | None, check,
            timeout_s: float | None = None) -> str:
        n = self.asked.get((self.round, kind, side), 0) + 1
        self.asked[(self.round, kind, side)] = n
        key = f"r{self.round}:{kind}:{side or '-'}:{n}"
        return self.prompter.ask(Question(key=key, text=text, default=default, check=check, timeout_s=timeout_s))

    def expected(self) -> str | None:
        """The side whose token comes next: a due re-slide first, else the turn (S1), else nobody."""
        if self.queue:
            return self.queue[0].side
        if self.phase != "slide":
            return None
        n = len(self.order)
        for k in range(n):
            side = self.order[(self.turn + k) % n]
            if self.slid.get(side, 0) < self.tokens_per_side:
                return side
        return None

    def _advance(self, side: str) -> None:
        self.turn = (self.order.index(side) + 1) % len(self.order)

    def _on(self, token: Tracked) -> str | None:
        return token.space if token.state == BOARD and token.on_space else None

    def placements(self) -> list[tuple[str, str | None]]:
        """Where every token of the round is now, as the engine takes it (None: scores nothing)."""
        return [(t.side, self._on(t)) for t in self.tokens]

    def provisional(self) -> RoundResult | None:
        """The round scored as if it ended now (engine choices for Railroad): the live scoreboard."""
        if self.phase not in ("slide", "chance"):
            return None
        ri = self.game.round_input(self.placements())
        return score_round(ri, self.board, where=f"round {self.round} (provisional)")

    def snapshot(self) -> dict:
        return {"round": self.round, "rounds": self.game.rounds_total, "phase": self.phase,
                "order": list(self.order), "expected": self.expected(), "slid": dict(self.slid),
                "tokens": [t.to_dict(self.board) for t in self.tokens], "cash": dict(self.game.cash),
                "pot": self.game.pot}

    def request_review(self) -> None:
        """A player disputes something: the positions are reviewed before this round is scored."""
        self.review_requested = True
        self.tell("A review of the positions will be asked before this round is scored")

    # -- the observation ------------------------------------------------------------------------------
    def observe(self, obs: Observation) -> None:
        self.last_obs = obs
        if self.phase == "over":
            return
        if self.phase == "clear":
            on_board = [s for s in obs.seen if s.state != OFF_BOARD]
            if on_board:
                if not self.told_clear:
                    self.tell(f"Clear the board for round {self.round}: {len(on_board)} token(s) still on it")
                    self.told_clear = True
                return
            self._start_round()
            return
        if self._cleared(obs):
            return
        self._update(obs)
        self._advance_phase()

    def _cleared(self, obs: Observation) -> bool:
        """The players cleared the board before the camera saw every slide (a token it missed, a slide it was
        not told about): ask to score the round as it stands rather than to lose every token (N1)."""
        on_board = [s for s in obs.seen if s.state != OFF_BOARD]
        before = [t for t in self.tokens if t.state == BOARD]
        if on_board or len(before) < 2:
            return False
        missing = {side: self.tokens_per_side - n for side, n in self.slid.items() if n < self.tokens_per_side}
        if self.phase == "chance":
            missing = {}
        left = ", ".join(f"{side} {n}" for side, n in missing.items()) or "none"
        answer = self.ask("cleared", None, f"The board was cleared (tokens not slid: {left}). Score round "
                          f"{self.round} as it was before? (y: score it; n: they were knocked off)", "yes", yes_no)
        if answer != "yes":
            return False
        self.emit("cleared", round=self.round, missing=missing, frame=obs.frame)
        self.queue, self.chance_pending = [], []
        self._finish_round()
        if self.phase == "clear":
            self._start_round()  # this very frame shows the empty board of the next round
        return True

    def _start_round(self) -> None:
        self.phase = "slide"
        self.tokens, self.queue, self.chance_pending = [], [], []
        self.slid = {side: 0 for side in self.order}
        self.turn = 0
        self.told_clear = False
        self.emit("round_start", round=self.round, order=list(self.order), cash=dict(self.game.cash),
                  pot=self.game.pot)
        self.tell(f"Round {self.round} of {self.game.rounds_total}: order {', '.join(self.order)}; "
                  f"{self.order[0]} slides first")

    def _match(self, tokens: list[Tracked], seen: list[Seen], within: float | None,
               any_colour: bool = False) -> list[tuple[int, int]]:
        """Greedy nearest pairs (token index, seen index) of the same colour (any colour: ``any_colour``),
        closer than ``within`` mm (None: any distance)."""
        cands = []
        for i, t in enumerate(tokens):
            for j, s in enumerate(seen):
                if not any_colour and s.side != t.colour:
                    continue
                d = ((t.xy_mm[0] - s.xy_mm[0]) ** 2 + (t.xy_mm[1] - s.xy_mm[1]) ** 2) ** 0.5
                if within is not None and d > within:
                    continue
                cands.append((d, i, j))
        cands.sort()
        used_t, used_s, pairs = set(), set(), []
        for _, i, j in cands:
            if i in used_t or j in used_s:
                continue
            used_t.add(i)
            used_s.add(j)
            pairs.append((i, j))
        return pairs

    def _place(self, token: Tracked, s: Seen) -> None:
        token.xy_mm = s.xy_mm
        token.colour = s.side
        token.space = s.space
        token.on_space = s.state == ON_SPACE
        token.ambiguous, token.doubt, token.rival, token.margin_mm = s.ambiguous, s.doubt, s.runner_up, s.margin_mm
        token.state = OUT if s.state == OFF_BOARD else BOARD

    def _update(self, obs: Observation) -> None:
        """One still board in the sliding (or Chance) phase: the tokens that stayed, the one slid, those
        knocked, anything else that appeared, then Go to Jail (S4)."""
        gone, rest = self._follow(obs)
        expected = self.expected()
        new = self._slid_seen(expected, [s for s in rest if s.state != OFF_BOARD], gone)
        if new is not None:
            rest.remove(new)
        changed, leftovers = self._knocked(gone, rest)
        slid_token = self._slide(expected, new, leftovers, changed, obs)
        self._appeared(leftovers, obs)
        self._go_to_jail(slid_token)

    def _follow(self, obs: Observation) -> tuple[list[Tracked], list[Seen]]:
        """Step 1: tokens at rest where they were (on the board, or parked in jail / in hand but not yet
        picked up) follow what is seen there. Returns the tokens on the board not seen where they were
        (``gone``: moved or knocked off) and what is seen that no token explains (``rest``)."""
        seen = list(obs.seen)
        followed = [t for t in self.tokens if t.state == BOARD or (t.state in (JAIL, HAND) and t.parked)]
        pairs = self._match(followed, seen, self.still_mm)
        used = {j for _, j in pairs}
        for i, j in pairs:
            if followed[i].state == BOARD:
                self._place(followed[i], seen[j])
                if COVERED in followed[i].flags:
                    followed[i].flags.remove(COVERED)  # uncovered, and still there
        matched = {followed[i].id for i, _ in pairs}
        for t in followed:
            if t.state != BOARD and t.id not in matched:
                t.parked = False  # taken to the In Jail card, or picked up to be slid again
        # tokens placed by hand (the camera missed them) stay where the players said unless seen elsewhere
        gone = [t for t in self.tokens if t.state == BOARD and t.id not in matched and "manual" not in t.flags]
        under = self._covered(gone, obs)
        return [t for t in gone if t not in under], [seen[j] for j in range(len(seen)) if j not in used]

    def _covered(self, gone: list[Tracked], obs: Observation) -> list[Tracked]:
        """Of the tokens not seen where they were, those where a hand or a cup covers the board: each may well
        be there still, so it stays where it was, flagged, until the board is uncovered (taking it for knocked
        off would score it out)."""
        reach = self.board.token.base_diameter_mm / 2
        under = [t for t in gone if obs.covered and near_hidden(t.xy_mm, obs.covered, reach)]
        for t in under:
            if COVERED not in t.flags:
                t.flags.append(COVERED)
                self.emit("covered", round=self.round, token=t.id, side=t.side, space=t.space, frame=obs.frame)
                self.tell(f"{t.side}'s token on {t.resting(self.board)} is covered (a hand, a cup?): kept where it "
                          "was; uncover it before the round is scored")
        return under

    def _slid_seen(self, expected: str | None, on_board: list[Seen], gone: list[Tracked]) -> Seen | None:
        """Step 2: which of the unexplained tokens on the board is the one slid: of the expected side's colour,
        the one farthest from that colour's missing tokens (a knocked token lands near where it was)."""
        if expected is None:
            return None
        mine = [s for s in on_board if s.side == expected]
        if mine:
            def distance_from_gone(s: Seen) -> float:
                ds = [((g.xy_mm[0] - s.xy_mm[0]) ** 2 + (g.xy_mm[1] - s.xy_mm[1]) ** 2) ** 0.5
                      for g in gone if g.colour == s.side]
                return min(ds) if ds else float("inf")
            return max(mine, key=distance_from_gone)
        if (len(on_board) == 1 and not any(g.colour == on_board[0].side for g in gone)
                and not self._can_slide(on_board[0].side)):
            return on_board[0]  # S1: a new token at rest is the turn's when its colour cannot be
        return None

    def _knocked(self, gone: list[Tracked], rest: list[Seen]) -> tuple[bool, list[Seen]]:
        """Step 3: knocked tokens: moved (same colour, any distance), or seen in another colour where they were
        (a colour the detector was unsure of), or gone (knocked off the board, S2). Returns whether any token
        was knocked, and what is still unexplained on the board."""
        changed = False
        moved = self._match(gone, rest, None)
        rest_left = [j for j in range(len(rest)) if j not in {j for _, j in moved}]
        gone_left = [i for i in range(len(gone)) if i not in {i for i, _ in moved}]
        flicker = self._match([gone[i] for i in gone_left], [rest[j] for j in rest_left], self.colour_mm, True)
        pairs = moved + [(gone_left[a], rest_left[b]) for a, b in flicker]
        moved_idx = {i for i, _ in pairs}
        taken = {j for _, j in pairs}
        for i, j in pairs:
            before = gone[i].space
            far = self._far(gone[i], rest[j])
            self._place(gone[i], rest[j])
            if far:
                changed = True
                self.emit("knock", round=self.round, token=gone[i].id, side=gone[i].side, before=before,
                          after=gone[i].space if gone[i].state == BOARD else None, state=gone[i].state)
        for i, token in enumerate(gone):
            if i not in moved_idx:
                token.state = OUT
                changed = True
                if "vanished" not in token.flags:
                    token.flags.append("vanished")
                self.emit("knock", round=self.round, token=token.id, side=token.side, before=token.space,
                          after=None, state=OUT)
        return changed, [rest[j] for j in range(len(rest)) if j not in taken and rest[j].state != OFF_BOARD]

    def _slide(self, expected: str | None, new: Seen | None, leftovers: list[Seen], changed: bool,
               obs: Observation) -> Tracked | None:
        """Step 4: the slide itself, or, where no token of the expected side came to rest, the question
        whether it slid off the board: asked when a slide was seen starting, a token was knocked, or another
        side's colour arrived instead (this side's slide was not seen)."""
        if new is not None:
            return self._slide_in(expected, new, obs)
        if expected is None:
            return None
        skipped = any(s.side != expected and self._can_slide(s.side) for s in leftovers)
        skip_unasked = skipped and not self.queue and (expected, self.slid.get(expected, 0)) != self.off_asked
        if obs.launched or changed or skip_unasked:
            return self._maybe_off_board(expected, obs)
        return None

    def _appeared(self, leftovers: list[Seen], obs: Observation) -> None:
        """Step 5: anything else that appeared: a token seen again, a slide out of turn, or an extra token."""
        for s in leftovers:
            back = next((t for t in self.tokens if t.state == OUT and "vanished" in t.flags and t.colour == s.side),
                        None)
            if back is not None:
                self._place(back, s)
                back.flags.remove("vanished")
                self.emit("seen_again", round=self.round, token=back.id, side=back.side, space=back.space)
                continue
            side = s.side
            if self._can_slide(side) and not self.queue:
                if side == self.expected():
                    self._slide_in(side, s, obs)
                    continue
                first = not any(self.slid.values())  # the round's first slide
                token = self._new_token(side, s, ["out_of_turn"])
                self.slid[side] += 1
                self._advance(side)
                self.emit("slide", round=self.round, token=token.id, side=side, space=token.space,
                          out_of_turn=True, frame=obs.frame)
                self.tell(f"{side} slid out of turn (or an earlier slide was not seen): counted as {side}'s"
                          + (self._order_doubt(side) if first else ""))
            else:
                self.emit("extra_token", round=self.round, colour=s.side, xy_mm=list(s.xy_mm), frame=obs.frame)
                self.tell(f"an extra {s.side} token is on the board (not counted): remove it or fix it at the review")

    def _go_to_jail(self, slid_token: Tracked | None) -> None:
        """Step 6 (S4): tokens that stopped on, or were bumped onto, Go to Jail go to jail, the one just slid
        first, then in turn order; their re-slides come before the next turn."""
        jailed = [t for t in self.tokens if t.state == BOARD and t.on_space and self.kinds.get(t.space) == "go_to_jail"]
        rank = {side: i for i, side in enumerate(self.order)}
        jailed.sort(key=lambda t: (t is not slid_token, rank[t.side], t.id))
        front: list[Reslide] = []
        for token in jailed:
            front += self._jail(token)
        self.queue[:0] = front

    def _order_doubt(self, side: str) -> str:
        """Said when a round's first slide is another side's: perhaps the turn order given is not the one played,
        and it decides who is paid on a shared space (E3a)."""
        return (f"; {side} slid first, but round {self.round} starts with {self.order[0]} (this round's order: "
                f"{', '.join(self.order)}: --order gives round 1's, turned each round, R6). If that is not the order "
                "played, start a new game with the right --order: it decides who is paid on a shared space (E3a)")

    def _can_slide(self, side: str) -> bool:
        """A side of this game that still has a token to slide in the sliding phase (S1)."""
        return self.phase == "slide" and side in self.slid and self.slid[side] < self.tokens_per_side

    def _far(self, token: Tracked, s: Seen) -> bool:
        return ((token.xy_mm[0] - s.xy_mm[0]) ** 2 + (token.xy_mm[1] - s.xy_mm[1]) ** 2) ** 0.5 > self.still_mm

    def _new_token(self, side: str, s: Seen, flags: list[str]) -> Tracked:
        token = Tracked(id=len(self.tokens), side=side, colour=s.side, xy_mm=s.xy_mm, space=s.space, state=BOARD,
                        flags=list(flags))
        self._place(token, s)
        self.tokens.append(token)
        return token

    def _slide_in(self, side: str, s: Seen, obs: Observation) -> Tracked:
        flags = [] if s.side == side else ["colour"]
        if self.queue and self.queue[0].side == side:
            due = self.queue.pop(0)
            token = self.tokens[due.token]
            self._place(token, s)
            for f in flags:
                if f not in token.flags:
                    token.flags.append(f)
            self.emit("reslide", round=self.round, token=token.id, side=side, why=due.why, space=token.space,
                      state=token.state, frame=obs.frame)
        else:
            token = self._new_token(side, s, flags)
            self.slid[side] += 1
            self._advance(side)
            self.emit("slide", round=self.round, token=token.id, side=side, space=token.space, state=token.state,
                      colour=s.side, frame=obs.frame)
        where = token.resting(self.board) if token.state == BOARD else "off the board"
        note = f" (it looked {s.side}: counted as {side}'s, S1)" if flags else ""
        self.tell(f"{side}: token on {where}{note}")
        return token

    def _space_or_yes_no(self, answer: str) -> str:
        """'yes', 'no', or a space id (its id or printed name): where a token the camera missed is."""
        a = answer.strip()
        try:
            return yes_no(a)
        except ValueError:
            pass
        try:
            return self.board.space_id(a)
        except KnockcamError as err:
            raise ValueError(f"answer yes, no, or the space the token is on ({err})") from None

    def _maybe_off_board(self, side: str, obs: Observation) -> Tracked | None:
        self.off_asked = (side, self.slid.get(side, 0))
        answer = self.ask("off", side, f"No new {side} token was seen at rest: did it slide off the board (y), not yet "
                          "(n), or is it on a space the camera missed (type the space)?", "no",
                          self._space_or_yes_no, timeout_s=self.off_timeout_s)
        if answer == "no":
            return None
        if answer != "yes":  # the players place it by hand: a correction, logged like an override
            space = self.board.space(answer)
            xy = tuple(float(v) for v in np.mean(np.asarray(space.polygon, dtype=np.float64), axis=0))
            seen = Seen(side=side, xy_mm=xy, space=answer, state=ON_SPACE)
            token = self._slide_in(side, seen, obs)
            token.flags.append("manual")
            self.emit("override", round=self.round, token=token.id, side=side, before={"space": None, "state": "unseen"},
                      after={"space": answer, "state": BOARD}, evidence=obs.evidence)
            return token
        if self.queue and self.queue[0].side == side:
            due = self.queue.pop(0)
            token = self.tokens[due.token]
            token.state = OUT
            self.emit("reslide", round=self.round, token=token.id, side=side, why=due.why, space=None, state=OUT,
                      frame=obs.frame)
        else:
            token = Tracked(id=len(self.tokens), side=side, colour=side, xy_mm=(float("nan"), float("nan")),
                            space=None, state=OUT, on_space=False)
            self.tokens.append(token)
            self.slid[side] += 1
            self._advance(side)
            self.emit("slide", round=self.round, token=token.id, side=side, space=None, state=OUT, frame=obs.frame)
        self.tell(f"{side}: token off the board, out for the round (S2)")
        self._offer_reslide(token)
        return token

    def _offer_reslide(self, token: Tracked) -> None:
        """S2 variant: the owner may slide an off-board token again (free or M100), never after it hit a token."""
        variant = self.game.reslide_off_board
        if variant == "none" or not self.game.can_reslide(token.side):
            return
        fee = " for M100 into the pot" if variant == "paid" else " free"
        answer = self.ask("reslide", token.side, f"S2: {token.side}, slide that token again{fee}? "
                          "(not if it hit another token first) (y/n)", "no", yes_no)
        if answer == "yes" and self.game.reslide(token.side):
            token.state = HAND
            self.queue.insert(0, Reslide(token.side, token.id, "off_board"))
            self.emit("reslide_granted", round=self.round, token=token.id, side=token.side, variant=variant)

    def _jail(self, token: Tracked) -> list[Reslide]:
        side = token.side
        if self.game.can_pay_jail(side):
            answer = self.ask("jail", side, f"S4: {side}'s token is on Go to Jail. Pay M100 into the pot and slide "
                              "it again? (y/n; no: it stays in jail until the end of the round)", "no", yes_no)
            if answer == "yes" and self.game.pay_jail(side):
                token.state, token.parked = HAND, True
                self.emit("jail", round=self.round, token=token.id, side=side, paid=True)
                self.tell(f"{side} pays M100 into the pot: take the token from jail and slide it again")
                return [Reslide(side, token.id, "jail")]
        else:
            why = "round 1: nobody holds M100 yet" if self.game.round_number == 0 else f"{side} holds under M100"
            self.tell(f"S4: {side}'s token goes to jail ({why}); it comes back at the end of the round")
        token.state, token.parked = JAIL, True
        self.emit("jail", round=self.round, token=token.id, side=side, paid=False)
        return []

    # -- end of the sliding phase, E1, E2, scoring ---------------------------------------------------------
    def _advance_phase(self) -> None:
        if self.queue:
            return
        if self.phase == "slide" and self.expected() is None:
            self.phase = "chance"
            rank = {side: i for i, side in enumerate(self.order)}
            chance = [t for t in self.tokens if self._on(t) and self.kinds.get(t.space) == "chance"]
            chance.sort(key=lambda t: (rank[t.side], t.id))
            self.chance_pending = [t.id for t in chance]
            self.emit("chance_start", round=self.round, tokens=[t.id for t in chance])
        if self.phase == "chance":
            while self.chance_pending:
                token = self.tokens[self.chance_pending.pop(0)]
                if self._on(token) and self.kinds.get(token.space) == "chance":
                    token.state, token.parked = HAND, True
                    self.queue.append(Reslide(token.side, token.id, "chance"))
                    self.tell(f"E1 Chance: {token.side}, slide your token on Chance again from behind GO!")
                    return
            self._finish_round()

    def _finish_round(self) -> None:
        self._review()  # overrides first: E2 suggestions depend on where every token is
        placements = self.placements()
        railroad = self._railroads(placements)
        ri = self.game.round_input(placements, railroad_choice=railroad)
        number = self.round
        result = self.game.play_round(ri, where=f"round {number}")
        self.emit("round", round=number, input=ri.to_dict(), result=result.to_dict(),
                  evidence=self.last_obs.evidence if self.last_obs else None,
                  state={"round": self.game.round_number, "order": list(self.game.order),
                         "cash": dict(self.game.cash), "pot": self.game.pot})
        if self.game.over:
            self.phase = "over"
            standings = [s.to_dict() for s in self.game.standings()]
            self.emit("standings", standings=standings)
            self.tell("Game over (W1): " + ", ".join(f"{s['place']}. {s['side']} M{s['cash']}" for s in standings))
        else:
            self.phase = "clear"
            self.tell(f"Round {number} scored. All tokens return (N1): clear the board; next order "
                      f"{', '.join(self.game.order)}")

    def _railroads(self, placements: list[tuple[str, str | None]]) -> dict[str, list[str]]:
        """E2: suggest the best unoccupied property for each Railroad token (side by side) and confirm it."""
        positions = [[side, space] for side, space in placements]
        rank = {side: i for i, side in enumerate(self.order)}
        props = {p.id for p in self.board.properties}
        out: dict[str, list[str]] = {}
        for side in self.order:
            slots = [i for i, (s, sp) in enumerate(positions) if s == side and sp and self.kinds[sp] == "railroad"]
            if not slots:
                continue
            free = choices.unoccupied(self.board, positions)
            if not free:
                self.tell(f"E2 {side}: no unoccupied property: the Railroad token stays and scores nothing")
                continue
            slots = slots[:len(free)]
            options = choices.rank_moves(self.board, side, positions, slots, rank, self.game.cash_now(side), None, 3)
            best, worth = options[0]
            free_ids = {p.id for p in free}

            def check(answer: str, best=best, free_ids=free_ids, n=len(slots)) -> str:
                a = answer.strip()
                if a.lower() in ("y", "yes", "ok"):
                    return ",".join(best)
                try:
                    picks = [self.board.space_id(p.strip()) for p in a.split(",") if p.strip()]
                except KnockcamError as err:
                    raise ValueError(str(err)) from None
                if len(picks) != n:
                    raise ValueError(f"give {n} propert{'y' if n == 1 else 'ies'} (comma-separated) or yes")
                for p in picks:
                    if p not in props:
                        raise ValueError(f"{self.names[p]} is not a property")
                    if p not in free_ids:
                        raise ValueError(f"{p} is occupied")
                if len(set(picks)) != len(picks):
                    raise ValueError("the same property twice")
                return ",".join(picks)

            names = " and ".join(self.names[p] for p in best)
            answer = self.ask("railroad", side, f"E2 {side}: move the Railroad token{'s' if len(slots) > 1 else ''} "
                              f"to {names} ({worth:+d} for {side})? Enter = yes, or type property id(s)", "yes", check)
            picks = answer.split(",")
            out[side] = picks
            for slot, pick in zip(slots, picks):
                positions[slot][1] = pick
            self.emit("railroad", round=self.round, side=side, to=picks, suggested=list(best),
                      by="suggested" if tuple(picks) == tuple(best) else "player")
            self.tell(f"E2 {side}: move the Railroad token{'s' if len(picks) > 1 else ''} to "
                      f"{' and '.join(self.names[p] for p in picks)}")
        return out

    def review_lines(self) -> list[str]:
        lines = []
        for t in self.tokens:
            where = t.resting(self.board) if t.state == BOARD else \
                {OUT: "off the board", JAIL: "in jail", HAND: "not slid again"}[t.state]
            doubts = t.doubts(self.board)
            lines.append(f"  {t.id + 1:2d}. {t.side:6s} {where}" + (f"  ({'; '.join(doubts)})" if doubts else ""))
        return lines

    def _review(self) -> None:
        """Round-end review: the positions, and a chance to override one (a dispute); logged with evidence."""
        doubtful = any(t.state == BOARD and t.doubts(self.board) for t in self.tokens)
        requested, self.review_requested = self.review_requested, False
        if not requested and (self.review == "never" or (self.review == "ambiguous" and not doubtful)):
            return
        n_tokens = len(self.tokens)
        while True:
            self.tell(f"Round {self.round} positions:\n" + "\n".join(self.review_lines()))

            def check(answer: str) -> str:
                a = answer.strip()
                if a.lower() in ("ok", "y", "yes"):
                    return "ok"
                parts = a.split(None, 1)
                if len(parts) != 2 or not parts[0].isdigit() or not 1 <= int(parts[0]) <= n_tokens:
                    raise ValueError(f"Enter to score, or '<token 1-{n_tokens}> <space id or name | off | jail>'")
                target = parts[1].strip()
                if target.lower() in ("off", "jail", "none"):
                    target = target.lower()
                else:
                    try:
                        target = self.board.space_id(target, also=("off", "jail"))
                    except KnockcamError as err:
                        raise ValueError(str(err)) from None
                return f"{int(parts[0])} {target}"

            answer = self.ask("review", None, "Enter to score this round, or fix a token: "
                              "'<n> <space id or name | off | jail>'", "ok", check)
            if answer == "ok":
                return
            number, target = answer.split(" ", 1)
            token = self.tokens[int(number) - 1]
            before = {"space": token.space, "state": token.state}
            if target in ("off", "none"):
                token.state = OUT
            elif target == "jail":
                token.state = JAIL
            else:
                token.state, token.space, token.on_space = BOARD, target, True
            token.ambiguous, token.doubt = False, None
            token.flags = [f for f in token.flags if f != "colour"] + ["override"]
            self.emit("override", round=self.round, token=token.id, side=token.side, before=before,
                      after={"space": token.space if token.state == BOARD else None, "state": token.state},
                      evidence=self.last_obs.evidence if self.last_obs else None)
