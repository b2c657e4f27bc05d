"""Synthetic game videos for tests and benchmarks: one synth scene, tokens slid in, knocked, picked up.

A game is written as ``Step``s (tokens sliding from behind GO! to a spot, knocked tokens moving,
tokens picked up, a hand passing over the board); each step is rendered as a few motion frames
then held still. Every frame keeps its truth (which token is where), so an oracle detector can
stand in for the real one when a test is about the game rather than the vision.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from pathlib import Path

import cv2
import numpy as np

from knockcam.board.layout import Board
from knockcam.sides import SHAPES
from knockcam.synth import scene as sc
from knockcam.synth import occluders as occ
from knockcam.synth.camera import canvas_for
from knockcam.synth.scene import PlacedToken
from knockcam.synth.tokens import PLASTIC_BGR

Point = tuple[float, float]


@dataclass(frozen=True)
class Move:
    """Token ``key`` ("red:0") goes to ``to`` (board mm; None = picked up), from ``start`` (None = where it
    is, or behind GO! for a token not on the table)."""

    key: str
    to: Point | None
    start: Point | None = None


@dataclass(frozen=True)
class Step:
    moves: tuple[Move, ...] = ()
    hold: int | None = None  # still frames after the motion (None: the composer's default)
    hand: bool = False  # a hand passes over the board during this step


@dataclass
class Composed:
    """The frames (BGR), per-frame truth {key: (side, xy_mm)} and the camera's exact calibration."""

    frames: list[np.ndarray]
    truth: list[dict[str, tuple[str, Point]]]
    calibration: object
    fps: float
    empty: np.ndarray
    marks: list[int] = field(default_factory=list)  # index of the first still frame after each step

    def write(self, path: str | Path) -> Path:
        """An MJPG .avi any OpenCV reads; written to a temp name then renamed."""
        path = Path(path)
        tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
        h, w = self.frames[0].shape[:2]
        writer = cv2.VideoWriter(str(tmp), cv2.VideoWriter_fourcc(*"MJPG"), self.fps, (w, h))
        if not writer.isOpened():
            raise RuntimeError("cannot write an MJPG video here")
        for f in self.frames:
            writer.write(f)
        writer.release()
        tmp.replace(path)
        return path


def spot(board: Board, space_id: str, dx: float = 0.0, dy: float = 0.0) -> Point:
    """A point well inside a space (its polygon's vertex mean, shifted by dx, dy mm)."""
    poly = np.asarray(board.space(space_id).polygon, dtype=np.float64)
    c = poly.mean(axis=0)
    return (float(c[0] + dx), float(c[1] + dy))


def launch_point(board: Board) -> Point:
    """Where a slide starts: behind GO!, in the middle of the near end."""
    return (board.size_mm[0] / 2.0, -30.0)


def scene_config(size: tuple[int, int]) -> dict:
    """A tame synth configuration for game videos: near-overhead camera, no glare, no blur tricks."""
    cfg = copy.deepcopy(sc.config())
    cfg["image_size"] = [int(size[0]), int(size[1])]
    cfg["camera"]["tilt_deg"] = [0, 15]
    cfg["camera"]["board_fill"] = [0.85, 0.95]
    cfg["camera"]["strong_distortion_p"] = 0.0
    cfg["photo"].update(glare_p=0.0, motion_blur_p=0.0, defocus_p=0.0, noise_sigma=[1.5, 2.5],
                        blur_sigma_px=[0.3, 0.6], jpeg_quality=[90, 95], exposure=[0.95, 1.05])
    cfg["light"]["shadow_strength"] = [0.25, 0.4]
    cfg["tokens"]["fallen_p"] = 0.0
    return cfg


class Composer:
    """Renders steps of a game on one fixed scene (camera, board art, table, light)."""

    def __init__(self, board: Board, *, seed: int = 0, size: tuple[int, int] = (640, 360), fps: float = 30.0,
                 motion_frames: int = 5, hold_frames: int = 14):
        self.board = board
        self.cfg = scene_config(size)
        rng = np.random.default_rng(seed)
        self.spec = sc.sample_scene(board, rng, self.cfg, tokens=(), with_occluders=False)
        self.canvas = canvas_for(self.spec.camera)
        self.static = sc.render_static(self.spec, board, self.canvas)
        self.rng = np.random.default_rng(seed + 1)
        self.fps = fps
        self.motion_frames = motion_frames
        self.hold_frames = hold_frames
        self.tokens: dict[str, PlacedToken] = {}
        self.frames: list[np.ndarray] = []
        self.truth: list[dict] = []
        self.marks: list[int] = []
        h, w = size[1], size[0]
        nrng = np.random.default_rng(seed + 2)
        self.noise = [nrng.normal(0, 1.2, (h, w, 1)).astype(np.float32) for _ in range(4)]
        self.empty = self._render({})

    def _token(self, key: str, xy: Point) -> PlacedToken:
        side, number = key.split(":")
        shape = SHAPES[int(number) % len(SHAPES)]
        colour = tuple(float(v) for v in PLASTIC_BGR[side])
        return PlacedToken(side=side, shape=shape, xy_mm=(float(xy[0]), float(xy[1])),
                           yaw=float(self.rng.uniform(0, 2 * np.pi)), colour=colour, shine=0.4)

    def _render(self, tokens: dict[str, PlacedToken], hand: Point | None = None) -> np.ndarray:
        occluders = ()
        if hand is not None:  # a player's hand and sleeve reaching over the board (synth occluder)
            occluders = (occ.hand(hand, 0.0, 55.0, occ.SKIN_BGR[0], (60.0, 60.0, 140.0), spread=0.2),)
        spec = replace(self.spec, tokens=tuple(tokens.values()), occluders=occluders)
        rendered = sc.render(spec, self.board, static=self.static, canvas=self.canvas, compute_truth=False)
        return sc.finish_photo(rendered.image, spec.photo)

    def _emit(self, image: np.ndarray, still: bool) -> None:
        if still:  # a real camera's sensor noise: held frames are never byte-identical
            noise = self.noise[len(self.frames) % len(self.noise)]
            image = np.clip(image.astype(np.float32) + noise, 0, 255).astype(np.uint8)
        self.frames.append(image)
        self.truth.append({k: (t.side, t.xy_mm) for k, t in self.tokens.items()})

    def hold(self, frames: int | None = None) -> None:
        image = self._render(self.tokens)
        self.marks.append(len(self.frames))
        for _ in range(self.hold_frames if frames is None else frames):
            self._emit(image, still=True)

    def step(self, step: Step) -> None:
        """Render the motion of one step, then hold the result still."""
        paths = []
        for move in step.moves:
            if move.start is not None:
                a = move.start
            elif move.key in self.tokens:
                a = self.tokens[move.key].xy_mm
            else:
                a = launch_point(self.board)
            paths.append((move, np.asarray(a, dtype=np.float64)))
        n = self.motion_frames
        w, length = self.board.size_mm
        for i in range(1, n + 1):
            f = 1.0 - (1.0 - i / n) ** 2  # ease out: a slide slows down
            for move, a in paths:
                if move.to is None:
                    if i == n:
                        self.tokens.pop(move.key, None)
                    elif move.key in self.tokens:  # lifted: it drifts towards the player
                        b = a + np.array([0.0, -40.0]) * f
                        self.tokens[move.key] = replace(self.tokens[move.key], xy_mm=(float(b[0]), float(b[1])))
                    continue
                b = a + (np.asarray(move.to) - a) * f
                base = self.tokens.get(move.key) or self._token(move.key, a)
                self.tokens[move.key] = replace(base, xy_mm=(float(b[0]), float(b[1])))
            hand = None
            if step.hand:
                hand = (w * (0.2 + 0.6 * i / n), length * 0.5)
            self._emit(self._render(self.tokens, hand), still=False)
        for move, _ in paths:  # tokens that left the table (knocked far off) are not drawn any more
            t = self.tokens.get(move.key)
            if t is not None and not (-100 < t.xy_mm[0] < w + 100 and -100 < t.xy_mm[1] < length + 100):
                self.tokens.pop(move.key)
        self.hold(step.hold)

    def result(self) -> Composed:
        return Composed(frames=self.frames, truth=self.truth, calibration=self.spec.calibration(self.board),
                        fps=self.fps, empty=self.empty, marks=self.marks)


def oracle_detector(composed: Composed, board: Board):
    """A detector that reads the truth of each frame: tests of the game logic without vision error."""
    from knockcam.assign import assign
    from knockcam.detect.tokens import Token
    from knockcam.live.tracker import Still, seen_from_positions

    def detect(frame):
        truth = composed.truth[frame.index]
        tokens = [Token(side=side, xy_mm=xy, confidence=0.99, sigma_mm=0.5) for side, xy in truth.values()]
        positions = tuple(assign(tokens, board))
        return Still(seen_from_positions(positions), positions=positions)

    return detect


# A short two-side game (red, blue; 2 tokens a side) with every end-of-round step: a Chance re-slide (E1),
# a Railroad move (E2), a knock-off the board (S2), a paid jail re-slide (S4), Luxury Tax, Free Parking,
# a knocked token changing space, and a hand passing over the board.
DEMO_ORDER = ("red", "blue")
DEMO_TOKENS = 2
DEMO_ANSWERS = {"r1:railroad:blue:1": "yes", "r2:jail:blue:1": "yes"}


def demo_steps(board: Board) -> list[Step]:
    def at(space_id: str) -> Point:
        return spot(board, space_id)

    far_right = (board.size_mm[0] + 160.0, at("boardwalk")[1])
    return [
        # round 1: red, blue
        Step((Move("red:0", at("chance")),)),
        Step((Move("blue:0", at("railroad")),)),
        Step(hand=True),
        Step((Move("red:1", at("boardwalk")),)),
        Step((Move("blue:1", at("park_place")), Move("red:1", far_right))),  # knocks red off the board
        Step((Move("red:0", None),)),  # E1: red picks up its Chance token ...
        Step((Move("red:0", at("st_james_place")),)),  # ... and slides it again
        Step(tuple(Move(k, None) for k in ("red:0", "blue:0", "blue:1"))),  # N1: the board is cleared
        # round 2: blue, red
        Step((Move("blue:0", at("go_to_jail")),)),
        Step((Move("blue:0", None),)),  # S4: blue pays and takes it back ...
        Step((Move("blue:0", at("marvin_gardens")),)),  # ... and slides it again
        Step((Move("red:0", at("free_parking")),)),
        Step((Move("blue:1", at("luxury_tax")),)),
        Step((Move("red:1", at("marvin_gardens")), Move("blue:0", at("illinois_avenue")))),  # knocks blue on
    ]


def demo_expected(board: Board):
    """The demo game scored straight by the engine from its script: what the live mode must end with."""
    from knockcam.rules import Game, SlideEvent

    game = Game(DEMO_ORDER, board)
    game.play([("red", "st_james_place"), ("red", None), ("blue", "railroad"), ("blue", "park_place")],
              railroad_choice={"blue": ["boardwalk"]})
    game.play([("blue", "illinois_avenue"), ("blue", "luxury_tax"), ("red", "free_parking"),
               ("red", "marvin_gardens")], events=[SlideEvent("blue", "jail_fee")])
    return game


def demo_video(board: Board, *, seed: int = 5, size: tuple[int, int] = (640, 360), lead_in: int = 20) -> Composed:
    """The demo game as frames: an empty board first (the reference), then every step."""
    composer = Composer(board, seed=seed, size=size)
    composer.hold(lead_in)
    for step in demo_steps(board):
        composer.step(step)
    return composer.result()


def random_game(board: Board, seed: int, order: tuple[str, ...], tokens: int = 4, *, size=(640, 360),
                knock_p: float = 0.25, off_p: float = 0.3):
    """A random whole game as a video: every slide to a random free spot (clear of the space lines), a
    quarter of them knocking another token (a third of those off the board), tokens on Go to Jail taken to
    jail (the owner does not pay), Chance re-slides, the board cleared between rounds. Returns the video
    and the engine's Game scored from the script's truth (E2 choices left to the engine, as the live
    mode's default answer takes its suggestion)."""
    from knockcam.assign import assign
    from knockcam.detect.tokens import Token
    from knockcam.rules import Game

    rng = np.random.default_rng(seed)
    width, length = board.size_mm

    def where(xy):
        p = assign([Token(side="red", xy_mm=(float(xy[0]), float(xy[1])), confidence=1.0, sigma_mm=0.5)], board)[0]
        return (p.space if p.state == "on_space" else None), p.margin_mm

    def free_spot(now):
        for _ in range(1000):
            xy = (float(rng.uniform(20, width - 20)), float(rng.uniform(330, length - 20)))
            if where(xy)[1] >= 8 and all(np.hypot(xy[0] - p[0], xy[1] - p[1]) > 30 for p in now.values()):
                return xy
        raise RuntimeError("no free spot left on the board")

    composer = Composer(board, seed=seed, size=size)
    composer.hold(20)
    engine = Game(order, board)
    rounds = len(order)
    for _ in range(rounds):
        current = engine.order
        now: dict[str, Point] = {}
        out: list[str] = []

        def slide(key):
            xy = free_spot(now)
            moves = [Move(key, xy)]
            if now and rng.random() < knock_p:
                other = list(now)[int(rng.integers(len(now)))]
                if rng.random() < off_p:
                    moves.append(Move(other, (width + 200.0, now[other][1])))
                    now.pop(other)
                    out.append(other)
                else:
                    rest = {k: v for k, v in now.items() if k != other}
                    rest[key] = xy
                    now[other] = free_spot(rest)
                    moves.append(Move(other, now[other]))
            now[key] = xy
            composer.step(Step(tuple(moves)))
            for k in [k for k in now if where(now[k])[0] == "go_to_jail"]:  # S4: to the In Jail card
                composer.step(Step((Move(k, None),)))
                now.pop(k)
                out.append(k)

        for turn in range(tokens * len(current)):
            slide(f"{current[turn % len(current)]}:{turn // len(current)}")
        rank = {s: i for i, s in enumerate(current)}
        for k in sorted([k for k in now if where(now[k])[0] == "chance"], key=lambda k: (rank[k.split(":")[0]], k)):
            if k in now and where(now[k])[0] == "chance":  # E1, in turn order
                composer.step(Step((Move(k, None),)))
                now.pop(k)
                slide(k)
        engine.play([(k.split(":")[0], where(xy)[0]) for k, xy in now.items()] + [(k.split(":")[0], None) for k in out])
        composer.step(Step(tuple(Move(k, None) for k in now)))
    return composer.result(), engine
