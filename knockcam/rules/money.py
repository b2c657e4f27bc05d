"""The fixed sums of the rules (RULES.md): fees, tax, the pot at setup and its refill, the default unit."""

JAIL_FEE = 100            # S4: paid into the pot to slide a jailed token again
RESLIDE_FEE = 100         # S2 variant "paid": paid into the pot to slide an off-board token again
LUXURY_TAX = 100          # E3d: per property collected for
POT_START = 500           # R4: the pot at setup
POT_REFILL = 500          # N2: what the bank puts in an empty pot
DEFAULT_MONEY_UNIT = 50   # R3: the smallest note
