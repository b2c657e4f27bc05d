"""What the table sees: a rich terminal scoreboard (always), an optional overlay window (``--show``) and
an optional web page of the same (``--serve PORT``, knockcam.live.web).

Headless always works; the window needs an OpenCV build with a GUI and a display, and says so
clearly when there is none.
"""

from __future__ import annotations

import numpy as np
from rich.console import Console
from rich.table import Table

from knockcam.board.layout import Board
from knockcam.errors import KnockcamError
from knockcam.report.evidence import space_name

SIDE_BGR = {"red": (40, 40, 220), "yellow": (30, 210, 250), "green": (60, 170, 40), "blue": (210, 110, 30)}
SIDE_RICH = {"red": "red", "yellow": "yellow", "green": "green", "blue": "blue"}
WINDOW = "knockcam live"


def check_window() -> None:
    """KnockcamError unless an OpenCV window can be opened here."""
    from knockcam.calibrate.click import has_display

    if not has_display():
        raise KnockcamError("--show needs a display and an OpenCV build with a GUI (this one is headless, or "
                            "$DISPLAY is unset or does not answer): run without --show; the terminal scoreboard "
                            "still works")


class Display:
    """Terminal messages and scoreboards; with ``show`` an overlay window of the camera, with ``page`` the same on
    the game's web page."""

    def __init__(self, board: Board, *, console: Console | None = None, show: bool = False, quiet: bool = False,
                 page=None):
        self.board = board
        self.console = console or Console(highlight=False)
        self.show = show
        self.quiet = quiet
        self.page = page  # a knockcam.live.web.GamePage, or None
        if show:
            check_window()

    @property
    def wants_frames(self) -> bool:
        """Whether the camera's frames are shown anywhere (the window or the page)."""
        return self.show or self.page is not None

    def message(self, text: str) -> None:
        if not self.quiet:
            self.console.print(text, markup=False)
        self.told(text)

    def told(self, text: str) -> None:
        """A message the players were told (on the terminal by the prompter): the page lists it too."""
        if self.page is not None:
            self.page.show_message(text)

    def asked(self, question) -> None:
        """The question now waiting (a knockcam.live.prompts.Question; None once answered): the page shows it."""
        if self.page is not None:
            self.page.show_question(question)
            if question is None:
                self.page.show_close_ups({})

    def close_ups(self, image: np.ndarray, calibration, positions, snapshot: dict) -> None:
        """For the round-end review on the page: a top-down close-up of each token left to a human, as
        ``knockcam score``'s evidence draws it (its base, the spaces around, a close call's margin), from the
        still frame and the calls made on it (``positions``, knockcam.assign)."""
        if self.page is None or calibration is None:
            return
        from types import SimpleNamespace

        import cv2

        from knockcam.report.evidence import close_up

        scored = SimpleNamespace(image=image, calibration=calibration, board=self.board, positions=list(positions),
                                 round=None)  # the review comes before the round is scored
        pictures = {}
        for t in snapshot["tokens"]:
            if t["state"] != "board" or not t.get("ambiguous"):
                continue
            # the call on this very frame: the position at the token's place, in its colour (the tracker keeps
            # the base centre it last saw, to 0.1 mm)
            near = [i for i, p in enumerate(positions) if p.side == t["colour"]
                    and np.hypot(*(np.asarray(p.token.xy_mm) - np.asarray(t["xy_mm"]))) < 0.2]
            if near:
                picture = close_up(scored, near[0], number=t["id"] + 1)  # labelled as the review numbers it
                ok, jpeg = cv2.imencode(".jpg", picture, [cv2.IMWRITE_JPEG_QUALITY, 90])
                if ok:
                    pictures[t["id"] + 1] = jpeg.tobytes()
        self.page.show_close_ups(pictures)

    def scoreboard(self, snapshot: dict, provisional=None) -> Table:
        table = Table(title=f"Round {snapshot['round']} of {snapshot['rounds']} - {snapshot['phase']}"
                            + (f" - next: {snapshot['expected']}" if snapshot.get("expected") else ""))
        table.add_column("side")
        table.add_column("slid", justify="right")
        table.add_column("cash", justify="right")
        table.add_column("this round (if it ended now)", justify="right")
        for side in snapshot["order"]:
            gain = "" if provisional is None else f"{provisional.delta[side]:+d}"
            table.add_row(f"[{SIDE_RICH.get(side, 'white')}]{side}[/]", str(snapshot["slid"].get(side, 0)),
                          f"M{snapshot['cash'][side]}", gain)
        table.caption = f"Free Parking pot M{snapshot['pot']}"
        return table

    def status(self, snapshot: dict, provisional=None) -> None:
        if not self.quiet:
            self.console.print(self.scoreboard(snapshot, provisional))
        if self.page is not None:
            self.page.show_state(snapshot)
            self.page.show_provisional(provisional)

    def round_table(self, number: int, result: dict) -> None:
        if self.page is not None:
            self.page.show_round(number, result)
        if self.quiet:
            return
        table = Table(title=f"Round {number} scored")
        for col in ("side", "properties", "bonus", "house", "tax", "free parking", "round", "cash"):
            table.add_column(col, justify="left" if col in ("side", "properties") else "right")
        for side in result["order"]:
            s = result["per_side"][side]
            table.add_row(f"[{SIDE_RICH.get(side, 'white')}]{side}[/]", ", ".join(s["properties"]) or "-",
                          str(s["set_bonus"]), str(s["house"]), str(-s["tax"]), str(s["free_parking"]),
                          f"{s['delta']:+d}", f"M{s['cash_after']}")
        table.caption = f"pot M{result['pot_after']}; next order {', '.join(result['next_order'])}"
        self.console.print(table)

    def standings(self, standings: list[dict]) -> None:
        if self.page is not None:
            self.page.show_standings(standings)
        if self.quiet:
            return
        table = Table(title="Final standings (W1)")
        table.add_column("place", justify="right")
        table.add_column("side")
        table.add_column("cash", justify="right")
        for s in standings:
            table.add_row(str(s["place"]), f"[{SIDE_RICH.get(s['side'], 'white')}]{s['side']}[/]", f"M{s['cash']}")
        self.console.print(table)

    # -- the overlay: the window and the page ----------------------------------------------------------
    def token_marks(self, calibration, snapshot: dict) -> list[dict]:
        """The tokens at rest as the overlay marks them: the pixel their base rests on, the side, the number the
        round-end review asks by, the space as printed, why a human should look (``doubts``) and, for a close
        call the review can settle, the other answer (``rival``: its name, and the review's word for it)."""
        if calibration is None:
            return []
        marks = []
        for t in snapshot["tokens"]:
            if t["state"] != "board" or not np.all(np.isfinite(t["xy_mm"])):  # placed by hand where none was seen
                continue
            x, y = (float(v) for v in calibration.mm_to_px([t["xy_mm"]])[0])
            other = t.get("rival")  # (the review cannot put a token on no space)
            rival = None if other in (None, "no_space") else \
                {"name": space_name(self.board, other), "answer": "off" if other == "off_board" else other}
            marks.append({"number": t["id"] + 1, "side": t["side"], "x": x, "y": y,
                          "space": space_name(self.board, t["space"]), "doubts": list(t.get("doubts", [])),
                          "rival": rival})
        return marks

    def overlay(self, image: np.ndarray, calibration, snapshot: dict, note: str = "", words: bool = True
                ) -> np.ndarray:
        """The frame with the board outline and the tokens at rest; with ``words``, their labels, whose turn and
        the cash too (the page writes those itself, at a size a phone can read)."""
        import cv2

        out = image.copy()
        if calibration is not None:
            w, length = self.board.size_mm
            outline = calibration.mm_to_px([(0, 0), (w, 0), (w, length), (0, length)])
            cv2.polylines(out, [np.round(outline).astype(np.int32)], True, (255, 255, 255), 2, cv2.LINE_AA)
        for mark in self.token_marks(calibration, snapshot):
            c = (int(round(mark["x"])), int(round(mark["y"])))
            cv2.circle(out, c, 9, SIDE_BGR.get(mark["side"], (255, 255, 255)), 2, cv2.LINE_AA)
            if words:
                why = f" ({'; '.join(mark['doubts'])})" if mark["doubts"] else ""
                _outlined(out, f"{mark['number']} {mark['space']}{why}", (c[0] + 12, c[1] + 4), 0.45)
        if not words:
            return out
        head = f"round {snapshot['round']}/{snapshot['rounds']} {snapshot['phase']}"
        if snapshot.get("expected"):
            head += f"  next: {snapshot['expected']}"
        cash = "  ".join(f"{s} M{snapshot['cash'][s]}" for s in snapshot["order"]) + f"  pot M{snapshot['pot']}"
        for i, text in enumerate((head, cash, note)):
            if text:
                _outlined(out, text, (10, 24 + 22 * i), 0.6)
        return out

    def frame(self, image: np.ndarray, calibration, snapshot: dict, note: str = "") -> None:
        """One camera frame: drawn in the window (every frame) and on the page (a few a second)."""
        to_page = self.page is not None and self.page.frame_due()
        if not (self.show or to_page):
            return
        import cv2

        if self.show:
            cv2.imshow(WINDOW, self.overlay(image, calibration, snapshot, note))
            cv2.waitKey(1)
        if to_page:
            jpeg, marks = self._page_picture(image, calibration, snapshot)
            if jpeg:
                self.page.show_frame(jpeg, marks, note)
            self.page.show_state(snapshot)

    def scored(self, number: int, image: np.ndarray, calibration, snapshot: dict) -> None:
        """The frame round ``number`` was scored on, the tokens numbered as scored: the page keeps it up until the
        next round is scored (the window shows the camera, which moves on)."""
        if self.page is not None:
            self.page.show_scored(number, *self._page_picture(image, calibration, snapshot))

    def _page_picture(self, image: np.ndarray, calibration, snapshot: dict) -> tuple[bytes, list[dict]]:
        """A frame for the page: JPEG without words, and the tokens' marks at fractions of its size."""
        import cv2

        drawn = self.overlay(image, calibration, snapshot, words=False)
        ok, jpeg = cv2.imencode(".jpg", drawn, [cv2.IMWRITE_JPEG_QUALITY, self.page.jpeg_quality])
        height, width = drawn.shape[:2]
        marks = [dict(m, x=m["x"] / width, y=m["y"] / height) for m in self.token_marks(calibration, snapshot)]
        return (jpeg.tobytes() if ok else b""), marks

    def close(self) -> None:
        """Close the window (the page is its owner's to close: it may stay up for the final standings)."""
        if self.show:
            import cv2

            cv2.destroyWindow(WINDOW)


def _outlined(image: np.ndarray, text: str, origin: tuple[int, int], scale: float) -> None:
    """White text with a black outline: readable on the board's white spaces and on a dark table alike."""
    import cv2

    for colour, thickness in (((0, 0, 0), 3), ((255, 255, 255), 1)):
        cv2.putText(image, text, origin, cv2.FONT_HERSHEY_SIMPLEX, scale, colour, thickness, cv2.LINE_AA)
