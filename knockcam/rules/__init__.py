"""The scoring engine: Monopoly Knockout rounds and games exactly per RULES.md (pure Python, no vision).

``score_round(RoundInput, Board) -> RoundResult`` scores one round; ``Game`` carries cash, pot and
turn order from round to round and gives the standings.
"""

from knockcam.rules.game import Game, Standing
from knockcam.rules.ledger import LedgerEntry
from knockcam.rules.parse import load_file, parse_round
from knockcam.rules.round import (RoundInput, RoundResult, SideSummary, SlideEvent, TokenPlacement, rotate,
                                  score_round, validate_round)

__all__ = ["Game", "Standing", "LedgerEntry", "RoundInput", "RoundResult", "SideSummary", "SlideEvent",
           "TokenPlacement", "rotate", "score_round", "validate_round", "load_file", "parse_round"]
