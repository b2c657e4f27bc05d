"""The four sides of the game (RULES.md R1): one colour each, 4 tokens each (R2)."""

SIDES = ("red", "yellow", "green", "blue")
TOKENS_PER_SIDE = 4
SHAPES = ("cat", "car", "top_hat", "dog")
