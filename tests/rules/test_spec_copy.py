"""docs/RULES.md is the rules specification as the team keeps it (a clone has no other copy): the same text."""

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_the_shipped_rules_are_the_teams_specification():
    team = REPO.parent / "shared" / "RULES.md"
    if not team.is_file():
        pytest.skip("the team's specification is not beside this checkout")
    assert (REPO / "docs" / "RULES.md").read_bytes() == team.read_bytes(), "copy ../shared/RULES.md to docs/RULES.md"


def test_every_rule_id_the_engine_cites_is_in_the_shipped_rules():
    import re

    rules = (REPO / "docs" / "RULES.md").read_text(encoding="utf-8")
    defined = set(re.findall(r"\*\*([A-Z]\d+[a-z]?)\b", rules))
    cited = set()
    for source in (REPO / "knockcam" / "rules").glob("*.py"):
        cited |= set(re.findall(r"\b([RSEN]\d+[a-z]?)\b", source.read_text(encoding="utf-8")))
    assert cited and cited <= defined, sorted(cited - defined)
