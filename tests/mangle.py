"""Files a user may edit by hand (round, game and board files, game logs), mangled at random: a value
replaced by one of another type or an absurd one, an entry dropped or repeated. The verbs reading them
must answer every such file in one line (exit 2) or use it, never with a traceback."""

from __future__ import annotations

import copy
import random

ODD_VALUES = (None, 0, -1, 2.5, -50, 10**12, float("nan"), float("inf"), "", "purple", "free_parking", "jail_fee",
              [], {}, [1], {"a": 1}, True, [[0, 0], [0, 0]])


def _places(doc, at=()):
    """Every path into ``doc`` (keys and list indices), the document itself first."""
    yield at
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        yield from _places(value, at + (key,))


def mangled(doc, rng: random.Random, changes: int = 3):
    """A copy of ``doc`` with one to ``changes`` random changes."""
    doc = copy.deepcopy(doc)
    for _ in range(rng.randint(1, changes)):
        places = [at for at in _places(doc) if at]
        if not places:
            break
        at = rng.choice(places)
        parent = doc
        for key in at[:-1]:
            parent = parent[key]
        how = rng.choice(("replace", "replace", "drop", "repeat"))
        if how == "replace":
            parent[at[-1]] = copy.deepcopy(rng.choice(ODD_VALUES))
        elif how == "drop":
            del parent[at[-1]]
        elif isinstance(parent, list):
            parent.insert(at[-1], copy.deepcopy(parent[at[-1]]))
        else:
            parent[at[-1]] = [copy.deepcopy(parent[at[-1]])]
    return doc


def answered_in_one_line(main, args) -> int:
    """``main(args)``'s exit code, with its output swallowed; AssertionError when it failed in more than one line."""
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(args)
    assert code in (0, 2), (code, args)
    assert code == 0 or err.getvalue().count("\n") == 1, err.getvalue()
    return code
