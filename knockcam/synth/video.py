"""Synthetic videos at 30 fps: a hand comes in, flicks a token from behind GO!, the token slides,
may knock another off or onto a space, everything comes to rest and the hand leaves.

Token motion is a small 2-D simulation (sliding friction, elastic knocks between bases), so every
frame has exact truth (positions at the end of the frame's exposure; a moving token is motion-blurred
over the shutter time before it); the events (hand in/out, slide starts, knocks, rests) are logged.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np

from knockcam.board.layout import Board
from knockcam.sides import SHAPES, SIDES
from knockcam.synth import occluders as occ
from knockcam.synth.camera import canvas_for
from knockcam.synth.output import write_bytes, write_json
from knockcam.synth.scene import (PlacedToken, config, encode_jpeg, finish_photo, plastic_colour, reference_spec,
                                  render, render_static, sample_scene)
from knockcam.synth.truth import resting

FPS = 30
FRICTION_MM_S2 = 2500.0  # sliding deceleration of a plastic base on a printed board
RESTITUTION = 0.85
SUBSTEPS = 8
SHUTTER = 0.5  # exposure as a fraction of the frame interval (1/60 s at 30 fps)
SUBFRAMES = 4  # renders averaged for a frame in which a token moves


def _initial_tokens(board: Board, rng: np.random.Generator, cfg: dict) -> list[PlacedToken]:
    width, length = board.size_mm
    r = board.token.base_diameter_mm / 2
    first_row = min(min(y for _, y in sp.polygon) for sp in board.spaces)
    combos = [(s, sh) for s in SIDES for sh in SHAPES]
    rng.shuffle(combos)
    placed: list[PlacedToken] = []
    for side, shape in combos[:int(rng.integers(2, 8))]:
        for _ in range(50):
            xy = (float(rng.uniform(r + 5, width - r - 5)), float(rng.uniform(first_row, length - r - 5)))
            if all(np.hypot(xy[0] - t.xy_mm[0], xy[1] - t.xy_mm[1]) > 2 * r + 2 for t in placed):
                placed.append(PlacedToken(side=side, shape=shape, xy_mm=xy, yaw=float(rng.uniform(0, 2 * np.pi)),
                                          colour=plastic_colour(rng, side, cfg["tokens"]["colour_jitter"]),
                                          shine=float(rng.uniform(0.2, 0.9))))
                break
    return placed


class Slide:
    """Discs on the board: positions, velocities, friction and elastic knocks, stepped frame by frame."""

    def __init__(self, xy: np.ndarray, radius: float):
        self.p = xy.astype(np.float64).copy()
        self.v = np.zeros_like(self.p)
        self.r = radius

    def moving(self) -> np.ndarray:
        return np.linalg.norm(self.v, axis=1) > 1e-3

    def step(self, dt: float) -> list[tuple[int, int]]:
        """Advance ``dt`` seconds; returns the (striker, struck) knocks that happened."""
        knocks = []
        h = dt / SUBSTEPS
        for _ in range(SUBSTEPS):
            speed = np.linalg.norm(self.v, axis=1)
            dec = np.minimum(speed, FRICTION_MM_S2 * h)
            unit = np.divide(self.v, speed[:, None], out=np.zeros_like(self.v), where=speed[:, None] > 0)
            self.v -= unit * dec[:, None]
            self.p += self.v * h
            n = len(self.p)
            for i in range(n):
                for j in range(i + 1, n):
                    d = self.p[j] - self.p[i]
                    dist = np.linalg.norm(d)
                    if dist >= 2 * self.r or dist < 1e-9:
                        continue
                    normal = d / dist
                    rel = np.dot(self.v[i] - self.v[j], normal)
                    overlap = 2 * self.r - dist
                    self.p[i] -= normal * overlap / 2
                    self.p[j] += normal * overlap / 2
                    if rel <= 0:
                        continue
                    striker, struck = (i, j) if np.linalg.norm(self.v[i]) >= np.linalg.norm(self.v[j]) else (j, i)
                    impulse = (1 + RESTITUTION) / 2 * rel
                    self.v[i] -= impulse * normal
                    self.v[j] += impulse * normal
                    knocks.append((striker, struck))
        return knocks


# the hand: comes in from the near end over this many frames, flicks the slider on FLICK_FRAME, and leaves
HAND_IN_FRAMES, FLICK_FRAME, HAND_OUT_FRAMES = 12, 15, 14
HAND_GONE_FRAME = FLICK_FRAME + 2 + HAND_OUT_FRAMES


def _slide_aim(board: Board, rng: np.random.Generator, tokens: list[PlacedToken],
               start: np.ndarray) -> tuple[np.ndarray, float]:
    """The slide's direction (a unit vector) and how far it would travel (mm): at a resting token, slightly
    off-centre, three slides in four when there is one; else to a point among the properties."""
    width, length = board.size_mm
    r = board.token.base_diameter_mm / 2
    if tokens and rng.random() < 0.75:
        target = np.asarray(tokens[rng.integers(len(tokens))].xy_mm)
        aim = target - start
        aim = aim / np.linalg.norm(aim)
        # hit off-centre by up to 0.8 of a base's width (a glancing or a full knock)
        off = float(np.arcsin(np.clip(rng.uniform(-0.8, 0.8) * 2 * r / np.linalg.norm(target - start), -1, 1)))
        aim = np.array([aim[0] * np.cos(off) - aim[1] * np.sin(off), aim[0] * np.sin(off) + aim[1] * np.cos(off)])
        return aim, float(np.linalg.norm(target - start) + rng.uniform(40, 250))
    goal = np.array([rng.uniform(30, width - 30), rng.uniform(320, length - 30)])
    return (goal - start) / np.linalg.norm(goal - start), float(np.linalg.norm(goal - start))


def _hand_xy(f: int, start: np.ndarray, aim: np.ndarray) -> np.ndarray | None:
    """Where the hand is on frame ``f`` (board mm), None once it has left: it comes from the near end to the
    slider (at ``start``, to be slid along ``aim``), follows through the flick, and goes back."""
    away = start - aim * 420 + np.array([0, -150])
    near = start - aim * 70
    if f < HAND_IN_FRAMES:
        t = f / HAND_IN_FRAMES
        return away + (near - away) * (1 - (1 - t) ** 2)
    if f <= FLICK_FRAME + 2:
        return near + aim * 25 * max(0, f - FLICK_FRAME + 2) / 4
    if f <= HAND_GONE_FRAME:
        t = (f - FLICK_FRAME - 2) / HAND_OUT_FRAMES
        return near + aim * 25 + (away - near) * t * t
    return None


def _motion_blurred(image: np.ndarray, frame_spec, board: Board, now: np.ndarray, before: np.ndarray,
                    static, canvas) -> np.ndarray:
    """``image`` (the frame rendered with the tokens at ``now``) averaged with renders of them further back
    towards ``before`` over the shutter time: a moving token's blur."""
    acc = image.astype(np.float32)
    for k in range(1, SUBFRAMES):
        back = SHUTTER * k / (SUBFRAMES - 1)
        sub = tuple(replace(t, xy_mm=(float(now[i, 0] + (before[i, 0] - now[i, 0]) * back),
                                      float(now[i, 1] + (before[i, 1] - now[i, 1]) * back)))
                    for i, t in enumerate(frame_spec.tokens))
        acc += render(replace(frame_spec, tokens=sub), board, static=static, canvas=canvas,
                      compute_truth=False).image
    return np.clip(acc / SUBFRAMES + 0.5, 0, 255).astype(np.uint8)


def _slider(board: Board, rng: np.random.Generator, tokens: list[PlacedToken]) -> PlacedToken:
    """The token to be slid: a side and shape not on the board yet, behind the GO! line."""
    width = board.size_mm[0]
    r = board.token.base_diameter_mm / 2
    used = {(t.side, t.shape) for t in tokens}
    free = [(s, sh) for s in SIDES for sh in SHAPES if (s, sh) not in used]
    side, shape = free[rng.integers(len(free))]
    start = (rng.uniform(r + 20, width - r - 20), rng.uniform(r + 10, board.go_line_y_mm - r - 5))
    return PlacedToken(side=side, shape=shape, xy_mm=(float(start[0]), float(start[1])),
                       yaw=float(rng.uniform(0, 2 * np.pi)), colour=plastic_colour(rng, side, 14), shine=0.6)


def make_video(board: Board, seed: int, index: int, cfg: dict | None = None, max_frames: int = 150):
    """Frames (uint8 BGR, after the phone's processing), per-frame truth, events and the reference frame."""
    cfg = cfg or config()
    rng = np.random.default_rng([seed, index, 77])
    tokens = _initial_tokens(board, rng, cfg)
    spec = sample_scene(board, rng, cfg, tokens=tuple(tokens), with_occluders=False)
    spec = replace(spec, info={**spec.info, "seed": seed, "index": index, "video": True})
    slider = _slider(board, rng, tokens)
    start = np.asarray(slider.xy_mm)
    all_tokens = tokens + [slider]
    s_idx = len(all_tokens) - 1
    aim, travel = _slide_aim(board, rng, tokens, start)
    v0 = np.sqrt(2 * FRICTION_MM_S2 * travel)
    sim = Slide(np.array([t.xy_mm for t in all_tokens]), board.token.base_diameter_mm / 2)
    yaw = np.array([t.yaw for t in all_tokens])
    spin = rng.normal(0, 3.0)

    hand_rng = np.random.default_rng([seed, index, 78])
    skin = occ.SKIN_BGR[hand_rng.integers(len(occ.SKIN_BGR))]
    sleeve = tuple(float(v) for v in hand_rng.uniform(20, 230, 3))
    heading = float(np.arctan2(aim[1], aim[0]))  # fingers towards the slide, arm behind

    canvas = canvas_for(spec.camera)
    static = render_static(spec, board, canvas)
    events = [{"frame": 0, "type": "hand_enters"}]
    frames, per_frame = [], []
    was_moving = np.zeros(len(all_tokens), bool)
    knocked: set[int] = set()
    settled_at = None
    for f in range(max_frames):
        if f == FLICK_FRAME:
            sim.v[s_idx] = aim * v0
            events.append({"frame": f, "type": "slide_starts", "token": s_idx})
        prev = sim.p.copy()
        if f > FLICK_FRAME:
            for striker, struck in sim.step(1.0 / FPS):
                if struck not in knocked and struck != s_idx:
                    knocked.add(struck)
                    events.append({"frame": f, "type": "knocked", "token": int(struck), "by": int(striker)})
        moving = sim.moving()
        yaw += spin * np.linalg.norm(sim.v, axis=1) / max(v0, 1) / FPS
        for i in np.flatnonzero(was_moving & ~moving):
            rest = resting(board, sim.p[i])
            kind = "rests"
            if i in knocked and rest.state == "off_board":
                kind = "knocked_off"
            events.append({"frame": f, "type": kind, "token": int(i), "space": rest.space, "state": rest.state})
        if f == HAND_GONE_FRAME:
            events.append({"frame": f, "type": "hand_leaves"})
        hand_xy = _hand_xy(f, start, aim)
        hand = occ.hand(hand_xy, heading, 55.0, skin, sleeve, spread=0.2) if hand_xy is not None else None
        toks = tuple(replace(t, xy_mm=(float(sim.p[i, 0]), float(sim.p[i, 1])), yaw=float(yaw[i]))
                     for i, t in enumerate(all_tokens))
        frame_spec = replace(spec, tokens=toks, occluders=(hand,) if hand is not None else (),
                             photo=replace(spec.photo, noise_seed=spec.photo.noise_seed + f))
        rendered = render(frame_spec, board, static=static, canvas=canvas)
        image = rendered.image
        if np.linalg.norm(sim.p - prev, axis=1).max() > 2.0:  # motion blur over the shutter time before the frame
            image = _motion_blurred(image, frame_spec, board, sim.p, prev, static, canvas)
        frames.append(finish_photo(image, frame_spec.photo))
        per_frame.append({"frame": f, "time_s": round(f / FPS, 4), "hand": hand is not None,
                          "tokens": [dict(t.to_dict(), moving=bool(moving[i])) for i, t in enumerate(rendered.tokens)]})
        was_moving = moving
        if f > HAND_GONE_FRAME and not moving.any():
            settled_at = f if settled_at is None else settled_at
            if f - settled_at >= 10:
                break
    truth = rendered.truth(board)
    truth.pop("tokens")
    truth.update({"fps": FPS, "frames": per_frame, "events": events, "slider": s_idx})
    ref = reference_spec(spec, np.random.default_rng([seed, index, 79]))
    ref_img = finish_photo(render(ref, board, canvas=canvas, compute_truth=False).image, ref.photo)
    return frames, truth, ref_img


def video_name(seed: int, index: int) -> str:
    return f"video_s{seed}_{index:04d}"


def write_video(out: Path, board: Board, seed: int, index: int, cfg: dict | None = None) -> Path:
    """Render video ``index`` of run ``seed``: NAME.mp4, NAME.json (per-frame truth, events), NAME_ref.jpg."""
    out = Path(out)
    frames, truth, ref_img = make_video(board, seed, index, cfg)
    name = video_name(seed, index)
    h, w = frames[0].shape[:2]
    tmp = out / f".{name}.tmp.mp4"
    writer = cv2.VideoWriter(str(tmp), cv2.VideoWriter_fourcc(*"mp4v"), FPS, (w, h))
    if not writer.isOpened():
        raise RuntimeError("OpenCV cannot write mp4v video here")
    for fr in frames:
        writer.write(fr)
    writer.release()
    tmp.replace(out / f"{name}.mp4")
    truth["video"] = f"{name}.mp4"
    truth["reference_image"] = f"{name}_ref.jpg"
    write_bytes(out / f"{name}_ref.jpg", encode_jpeg(ref_img, 92))
    write_json(out / f"{name}.json", truth)
    return out / f"{name}.mp4"
