"""Things over and around the board that hide it: hands and arms, cups, cards and banknotes.

Hands and cups are 3-D solids painted with the tokens (a hand hovers above every token, so it is
painted last); cards and banknotes are flat decals lying on the board or table, painted with the art.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from knockcam.board.layout import Board
from knockcam.synth.tokens import Mesh, Solid, cylinder, ellipsoid, flipped, merge_solids, rot_y, rot_z

KINDS = ("hand", "cup", "card", "banknote")
SKIN_BGR = ((150, 180, 225), (120, 160, 210), (95, 135, 190), (70, 105, 160), (45, 70, 115), (35, 50, 80))
NOTE_BGR = {"1": (245, 245, 245), "5": (200, 190, 245), "10": (170, 235, 250), "20": (170, 230, 170),
            "50": (240, 200, 150), "100": (180, 220, 240), "500": (120, 190, 250)}


@dataclass(frozen=True)
class Decal:
    """A flat printed thing on the board plane: texture and where its corners lie (mm, texture order)."""

    image: np.ndarray
    corners_mm: np.ndarray  # (4, 2): texture's top-left, top-right, bottom-right, bottom-left
    height_mm: float = 0.3


@dataclass(frozen=True)
class Occluder:
    """One occluder: solids (painted in 3-D) or a decal, whether it hovers above all tokens, its footprint."""

    kind: str
    solids: tuple[Solid, ...] = ()
    decal: Decal | None = None
    above: bool = False
    anchor_mm: tuple[float, float, float] = (0.0, 0.0, 0.0)  # for depth ordering with the tokens
    footprint: tuple[float, float, float] | None = None  # (x, y, radius) tokens must keep out of

    def to_dict(self) -> dict:
        return {"kind": self.kind, "anchor_mm": [round(float(v), 2) for v in self.anchor_mm]}


def hand(xy_mm, heading: float, height_mm: float, skin, sleeve, spread: float = 0.3) -> Occluder:
    """A hand hovering at ``height_mm`` over ``xy_mm`` (palm centre), the arm reaching back along ``heading``."""
    parts: list[tuple[Mesh, tuple]] = []
    palm = ellipsoid((0, 0, 0), (48, 42, 14), nu=12, nv=6)
    parts.append((palm, skin))
    for i, off in enumerate((-27, -9, 9, 27)):
        length = (34, 40, 38, 30)[i]
        ang = off / 27 * spread * 0.5
        finger = ellipsoid((0, 0, 0), (length, 8.5, 7.5), nu=8, nv=4).posed(rot_z(ang), (42 + length * 0.8, off, -3))
        parts.append((finger, skin))
    thumb = ellipsoid((0, 0, 0), (26, 9, 8), nu=8, nv=4).posed(rot_z(-1.0), (10, -48, -2))
    parts.append((thumb, skin))
    wrist = ellipsoid((0, 0, 0), (70, 34, 26), nu=10, nv=6).posed(rot_y(0.25), (-85, 0, 16))
    parts.append((wrist, skin))
    sleeve_m = ellipsoid((0, 0, 0), (170, 48, 40), nu=12, nv=6).posed(rot_y(0.35), (-270, 0, 75))
    parts.append((sleeve_m, sleeve))
    meshes = [(m.posed(rot_z(heading), (xy_mm[0], xy_mm[1], height_mm)), c) for m, c in parts]
    solid = merge_solids(meshes, shine=0.15)
    return Occluder(kind="hand", solids=(solid,), above=True, anchor_mm=(float(xy_mm[0]), float(xy_mm[1]), height_mm))


def cup(xy_mm, radius: float, height: float, colour, drink) -> Occluder:
    """A mug standing on the board or table: outer wall, inner wall, drink surface and handle."""
    x, y = xy_mm
    outer = cylinder((x, y, 0), radius, radius * 1.04, height, n=24, top=False)
    inner = flipped(cylinder((x, y, height * 0.75), radius * 0.9, radius * 0.94, height * 0.25, n=24, top=False))
    surface = cylinder((x, y, height * 0.75 - 0.5), radius * 0.9, radius * 0.9, 0.5, n=24, top=True)
    a = np.random.default_rng(int(abs(x * 1000 + y))).uniform(0, 2 * np.pi)
    handle = ellipsoid((0, 0, 0), (6, 16, height * 0.28), nu=8, nv=5).posed(rot_z(a), (x + np.cos(a) * (radius + 10),
                                                                                      y + np.sin(a) * (radius + 10),
                                                                                      height * 0.5))
    solid = merge_solids([(outer, colour), (inner, colour), (surface, drink), (handle, colour)], shine=0.7)
    return Occluder(kind="cup", solids=(solid,), anchor_mm=(float(x), float(y), 0.0),
                    footprint=(float(x), float(y), float(radius * 1.05 + 12)))


def _label_texture(rng: np.random.Generator, size_px: tuple[int, int], fill, lines: list[str], border) -> np.ndarray:
    w, h = size_px
    img = np.empty((h, w, 3), np.uint8)
    img[:] = fill
    cv2.rectangle(img, (4, 4), (w - 5, h - 5), border, 2, cv2.LINE_AA)
    y = h // (len(lines) + 1)
    for i, text in enumerate(lines):
        scale = 0.9 if i == 0 else 0.5
        (tw, th), _ = cv2.getTextSize(text, cv2.FONT_HERSHEY_DUPLEX, scale, 1)
        cv2.putText(img, text, ((w - tw) // 2, y * (i + 1) + th // 2), cv2.FONT_HERSHEY_DUPLEX, scale, border, 1,
                    cv2.LINE_AA)
    return img


def flat(kind: str, rng: np.random.Generator, xy_mm, angle: float) -> Occluder:
    """A card (63 x 88 mm) or a banknote (130 x 65 mm) lying flat at ``xy_mm``."""
    if kind == "card":
        w, h = 63.0, 88.0
        fill = (40, 150, 245) if rng.random() < 0.5 else (80, 215, 250)
        tex = _label_texture(rng, (126, 176), fill, ["?", "CHANCE"] if rng.random() < 0.5 else ["CARD", "M100"], (30, 30, 30))
    else:
        w, h = 130.0, 65.0
        value = str(rng.choice(list(NOTE_BGR)))
        tex = _label_texture(rng, (260, 130), NOTE_BGR[value], [f"M{value}", "MONOPOLY"], (60, 90, 60))
    c, s = np.cos(angle), np.sin(angle)
    half = np.array([[-w / 2, h / 2], [w / 2, h / 2], [w / 2, -h / 2], [-w / 2, -h / 2]])
    corners = half @ np.array([[c, s], [-s, c]]) + np.asarray(xy_mm, dtype=np.float64)
    return Occluder(kind=kind, decal=Decal(tex, corners), anchor_mm=(float(xy_mm[0]), float(xy_mm[1]), 0.0))


def random_hand(rng: np.random.Generator, board: Board, xy_mm=None, height_mm: float | None = None) -> Occluder:
    width, length = board.size_mm
    if xy_mm is None:
        xy_mm = (rng.uniform(-40, width + 40), rng.uniform(-40, length + 40))
    # the arm comes from the nearest long side or end, roughly
    toward = np.array([xy_mm[0] - width / 2, (xy_mm[1] - length / 2) * 0.4])
    heading = float(np.arctan2(toward[1], toward[0]) + np.pi + rng.normal(0, 0.4))
    skin = SKIN_BGR[rng.integers(len(SKIN_BGR))]
    skin = tuple(float(v) for v in np.clip(np.asarray(skin) + rng.normal(0, 8, 3), 0, 255))
    sleeve = tuple(float(v) for v in rng.uniform(20, 230, 3))
    h = float(rng.uniform(45, 140)) if height_mm is None else height_mm
    return hand(xy_mm, heading, h, skin, sleeve, spread=float(rng.uniform(0, 0.8)))


def sample_occluders(rng: np.random.Generator, board: Board, camera, cfg: dict | None = None,
                     tokens=()) -> tuple[Occluder, ...]:
    """Zero or more occluders, mostly none (settings: synth.yaml occluders); a hand is often over a token."""
    cfg = cfg or {"hand_p": 0.15, "cup_p": 0.1, "card_p": 0.12, "banknote_p": 0.12}
    width, length = board.size_mm
    out: list[Occluder] = []

    def near_edge() -> tuple[float, float]:
        side = rng.integers(4)
        if side == 0:
            return (rng.uniform(-50, 20), rng.uniform(0, length))
        if side == 1:
            return (rng.uniform(width - 20, width + 50), rng.uniform(0, length))
        return (rng.uniform(0, width), rng.uniform(-50, 20) if side == 2 else rng.uniform(length - 20, length + 50))

    if rng.random() < cfg["card_p"]:
        out.append(flat("card", rng, near_edge(), float(rng.uniform(0, np.pi))))
    if rng.random() < cfg["banknote_p"]:
        for _ in range(int(rng.integers(1, 4))):
            out.append(flat("banknote", rng, near_edge(), float(rng.uniform(0, np.pi))))
    if rng.random() < cfg["cup_p"]:
        r = float(rng.uniform(35, 45))
        c = near_edge()
        colour = tuple(float(v) for v in rng.uniform(30, 240, 3))
        drink = (20.0, 40.0, 70.0) if rng.random() < 0.7 else (200.0, 200.0, 210.0)
        out.append(cup(c, r, float(rng.uniform(80, 115)), colour, drink))
    if rng.random() < cfg["hand_p"]:
        if tokens and rng.random() < cfg.get("hand_over_token_p", 0.6):
            t = tokens[rng.integers(len(tokens))]
            xy = (t.xy_mm[0] + rng.normal(0, 30), t.xy_mm[1] + rng.normal(0, 30))
            out.append(random_hand(rng, board, xy_mm=xy))
        else:
            out.append(random_hand(rng, board))
    return tuple(out)
