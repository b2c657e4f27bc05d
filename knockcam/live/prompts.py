"""Questions to the table: a terminal prompter for game night and a scripted one for tests and replays.

Every question has a stable ``key`` (``r2:jail:red:1`` = round 2, the first jail question to red),
a default for Enter, and a ``check`` that turns an answer into its normal form or says what is
wrong with it. Scripted answers can be given by key (a mapping) or in order (a list).
"""

from __future__ import annotations

import difflib
import re
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Protocol


from knockcam.errors import KnockcamError
from knockcam.files import parse_json_or_yaml, read_text
from knockcam.live.log import RESUME_LATER
from knockcam.sides import SIDES

YES = ("y", "yes", "o", "oui", "1", "true")
NO = ("n", "no", "non", "0", "false")


def yes_no(answer: str) -> str:
    """'yes' or 'no' from the usual spellings; ValueError otherwise."""
    a = answer.strip().lower()
    if a in YES:
        return "yes"
    if a in NO:
        return "no"
    raise ValueError("answer yes or no")


@dataclass(frozen=True)
class Question:
    """One question: ``key`` (stable id), the text, the default for an empty answer, and its checker."""

    key: str
    text: str
    default: str | None = None
    check: Callable[[str], str] = field(default=lambda a: a.strip(), compare=False, repr=False)
    timeout_s: float | None = None  # a terminal takes the default after this long (a question that may be moot)

    def normal(self, answer: str) -> str:
        """The answer in normal form (the default for an empty one); ValueError with a reason if invalid."""
        answer = "" if answer is None else str(answer)
        if not answer.strip():
            if self.default is None:
                raise ValueError("an answer is needed")
            answer = self.default
        return self.check(answer)


class Prompter(Protocol):
    def ask(self, question: Question) -> str: ...

    def tell(self, message: str) -> None: ...


class TerminalPrompter:
    """Asks on the terminal (Enter takes the default) and repeats the question after a bad answer. With ``page``
    (knockcam.live.web.GamePage with answers), an answer or a review request may come from the game's page too:
    whichever answers first."""

    PAGE_POLL_S = 0.2  # how often the page is looked at while the keyboard is quiet

    def __init__(self, stdin=None, stdout=None, *, pollable: bool | None = None, page=None):
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self.page = page
        self.answered_on: str | None = None  # where the last answer came from: keyboard, page or timeout
        self.keyboard_closed = False  # stdin ended (a game run without a terminal): the page alone answers
        # typing a line at any time asks for a review: only on an interactive terminal
        self._pollable = pollable if pollable is not None else bool(getattr(self.stdin, "isatty", lambda: False)())

    def tell(self, message: str) -> None:
        print(message, file=self.stdout, flush=True)

    def ask(self, question: Question) -> str:
        hint = f" [{question.default}]" if question.default else ""
        if question.timeout_s and question.default is not None:
            hint = f" [{question.default} in {question.timeout_s:g} s]"
        while True:
            print(f"? {question.text}{hint} ", end="", file=self.stdout, flush=True)
            got = self._wait(question)
            if got is None:
                print(f"(no answer: {question.default})", file=self.stdout, flush=True)
                self.answered_on = "timeout"
                return question.normal(question.default)
            source, line = got
            self.answered_on = source
            if source == "page":  # already checked, in normal form
                print(f"{line}  (answered on the game's page)", file=self.stdout, flush=True)
                return line
            if line == "" and self.page is not None:
                self.keyboard_closed = True
                print("(no keyboard: answer on the game's page)", file=self.stdout, flush=True)
                continue
            if line == "" and question.timeout_s and question.default is not None:  # it would be taken anyway
                print(f"(input closed: {question.default})", file=self.stdout, flush=True)
                self.answered_on = "timeout"
                return question.normal(question.default)
            if line == "":
                raise KnockcamError(f"no answer to '{question.text}' (input closed)", RESUME_LATER)
            try:
                return question.normal(line)
            except ValueError as exc:
                print(f"  {exc}", file=self.stdout, flush=True)

    def _wait(self, question: Question) -> tuple[str, str] | None:
        """The next answer: ("page", its normal form) or ("keyboard", the line typed); None once the question's
        ``timeout_s`` has run out."""
        limit = question.timeout_s if question.timeout_s and question.default is not None else None
        start = time.monotonic()
        while True:
            if self.page is not None:
                answer = self.page.take_answer(question.key)
                if answer is not None:
                    return "page", answer
            left = None if limit is None else limit - (time.monotonic() - start)
            if left is not None and left <= 0:
                return None
            wait = left if self.page is None else min(self.PAGE_POLL_S, self.PAGE_POLL_S if left is None else left)
            if self.keyboard_closed:
                time.sleep(wait)
            elif wait is None or self._ready(wait):
                return "keyboard", self.stdin.readline()

    def poll(self) -> bool:
        """True when a player typed a line between questions (Enter or 'fix'), or asked on the page: they dispute
        something."""
        if self.page is not None and self.page.take_review():
            return True
        if not self._pollable or self.keyboard_closed or not self._ready(0.0):
            return False
        line = self.stdin.readline()
        return line != ""

    def _ready(self, timeout_s: float) -> bool:
        """True when a line can be read within ``timeout_s`` (always True where stdin cannot be polled)."""
        import select

        try:
            fd = self.stdin.fileno()
        except (AttributeError, OSError, ValueError):
            return True
        try:
            ready, _, _ = select.select([fd], [], [], timeout_s)
        except (OSError, ValueError):
            return True
        return bool(ready)


class ScriptedPrompter:
    """Answers from a script: a mapping key -> answer (or list of answers for a repeated key), or a list
    taken in order. A question the script does not answer gets its default; messages are kept in ``told``."""

    def __init__(self, answers: dict | list | None = None, *, skip: int = 0, echo=None):
        self.by_key: dict[str, deque] = {}
        self.in_order: deque = deque()
        if isinstance(answers, dict):
            for key, value in answers.items():
                values = value if isinstance(value, list) else [value]
                self.by_key[str(key)] = deque(str(v) for v in values)
        elif answers is not None:
            self.in_order = deque(str(v) for v in list(answers)[skip:])
        self.told: list[str] = []
        self.asked: list[tuple[str, str]] = []
        self.echo = echo
        self.answered_on: str | None = None  # where the last answer came from: the file, or its default

    def tell(self, message: str) -> None:
        self.told.append(message)
        if self.echo is not None:
            print(message, file=self.echo, flush=True)

    def ask(self, question: Question) -> str:
        self.answered_on = "file"
        if question.key in self.by_key and self.by_key[question.key]:
            raw = self.by_key[question.key].popleft()
        elif self.in_order:
            raw = self.in_order.popleft()
        else:
            raw, self.answered_on = "", "default"
        try:
            answer = question.normal(raw)
        except ValueError as exc:
            raise KnockcamError(f"scripted answer {raw!r} to {question.key} ({question.text}): {exc}") from None
        self.asked.append((question.key, answer))
        if self.echo is not None:
            print(f"? {question.text} -> {answer}", file=self.echo, flush=True)
        return answer


QUESTION_KINDS = ("cleared", "off", "reslide", "jail", "railroad", "review")  # what the live loop asks
_KEY = re.compile(r"r(\d+):([a-z_]+):([a-z]+|-):(\d+)")


def load_answers(path: str | Path) -> dict | list:
    """An answers file (JSON or YAML): a mapping question key -> answer, or a list of answers in order. A key
    that no question can have (a misspelt kind or side) is refused: its answer would be lost without a word,
    and the question given its default. YAML's yes/no read as true/false are taken as yes/no."""
    data = parse_json_or_yaml(read_text(path, "answers file"), path)
    if data is None:
        return []
    if not isinstance(data, (dict, list)):
        raise KnockcamError(f"{path}: answers must be a mapping (question key -> answer) or a list in order")
    if isinstance(data, list):
        return [_answer(v) for v in data]
    for key in data:
        _check_key(str(key), path)
    return {str(key): [_answer(a) for a in value] if isinstance(value, list) else _answer(value)
            for key, value in data.items()}


def _answer(value):
    """An answer as typed: YAML reads an unquoted yes or no as a boolean."""
    return ("yes" if value else "no") if isinstance(value, bool) else value


def _check_key(key: str, path) -> None:
    shape = (f"keys are rROUND:KIND:SIDE:N, e.g. r2:jail:blue:1 (KIND one of {', '.join(QUESTION_KINDS)}; SIDE "
             "one of the sides, or - for a question to nobody)")
    match = _KEY.fullmatch(key)
    if not match:
        raise KnockcamError(f"{path}: answer key {key!r} is no question's: {shape}")
    for word, known, what in ((match[2], QUESTION_KINDS, "kind"), (match[3], SIDES + ("-",), "side")):
        if word not in known:
            near = difflib.get_close_matches(word, known, n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise KnockcamError(f"{path}: answer key {key!r}: no question has the {what} {word!r}{hint}: {shape}")


def check_answer_sides(answers: dict | list | None, sides, path) -> None:
    """KnockcamError for an answer keyed to a side not in this game (``sides``): no question would ever ask for
    it, and the question meant for another side would be given its default without a word."""
    if not isinstance(answers, dict):
        return
    for key in answers:
        side = _KEY.fullmatch(key)[3]
        if side != "-" and side not in sides:
            raise KnockcamError(f"{path}: answer key {key!r} is for {side}, who is not in this game (sides "
                                f"{', '.join(sides)})", "key each answer to a side of this game")


class ReplayPrompter:
    """Answers already in the game log, in order, then hands over to ``live`` (None: stop there)."""

    def __init__(self, logged: Iterable[tuple[str, str]], live: Prompter | None, before_live=None, after_live=None):
        self.logged = deque(logged)
        self.live = live
        self.before_live = before_live  # called with the question before a live ask (to log it)
        self.after_live = after_live  # called with (question, answer) before the answer is acted on

    def tell(self, message: str) -> None:
        if not self.logged and self.live is not None:
            self.live.tell(message)

    def ask(self, question: Question) -> str:
        if self.logged:
            key, answer = self.logged.popleft()
            if key != question.key:
                raise KnockcamError(f"game log does not match the game: it answers {key} where the game asks "
                                    f"{question.key}; was it written by another knockcam version?")
            return answer
        if self.live is None:
            raise NeedAnswer(question)
        if self.before_live is not None:
            self.before_live(question)
        answer = self.live.ask(question)
        if self.after_live is not None:
            self.after_live(question, answer)
        return answer


class NeedAnswer(Exception):
    """Replaying a log that ends at an unanswered question."""

    def __init__(self, question: Question):
        super().__init__(question.key)
        self.question = question
