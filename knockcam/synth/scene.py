"""One synthetic photo: a sampled scene (camera, art, table, light, tokens) rendered with its truth.

Sampling (``sample_scene``) and rendering (``render``) are split so that a video can keep the
camera, board and light and move only the tokens and occluders between frames.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace

import cv2
import numpy as np

from knockcam import settings
from knockcam.board.layout import Board
from knockcam.calibrate.calibration import Calibration
from knockcam.errors import KnockcamError
from knockcam.sides import SHAPES, SIDES
from knockcam.synth import occluders as occ
from knockcam.synth.art import BoardArt, render_board_art
from knockcam.synth.camera import Camera, Canvas, canvas_for, random_camera
from knockcam.synth.table import Table, random_table
from knockcam.synth.tokens import PLASTIC_BGR, Solid, pose_token
from knockcam.synth.truth import resting_all


@dataclass(frozen=True)
class PlacedToken:
    """A token put on the table: side, shape, base centre (mm), heading and, if fallen, the fall direction."""

    side: str
    shape: str
    xy_mm: tuple[float, float]
    yaw: float
    colour: tuple[float, float, float]  # BGR plastic albedo
    fallen_dir: float | None = None
    shine: float = 0.5

    @property
    def fallen(self) -> bool:
        return self.fallen_dir is not None


@dataclass(frozen=True)
class Light:
    """A directional key light (unit vector towards it), ambient level and shadow look."""

    direction: np.ndarray
    ambient: float
    shadow_strength: float
    shadow_blur_px: float
    illumination_seed: int
    glare: tuple[float, float, float, float] | None  # (x_mm, y_mm, radius_mm, strength)


@dataclass(frozen=True)
class Photo:
    """The phone's processing: white balance, exposure, gamma, blur, noise, JPEG."""

    wb_gains: tuple[float, float, float]
    exposure: float
    gamma: float
    blur_sigma: float
    defocus_px: float
    motion: tuple[float, float] | None  # (length px, angle rad)
    noise_sigma: float
    jpeg_quality: int
    noise_seed: int


@dataclass(frozen=True)
class SceneSpec:
    """Everything needed to render one photo deterministically."""

    camera: Camera
    art: BoardArt
    table: Table
    board_thickness_mm: float
    edge_bgr: tuple[float, float, float]
    light: Light
    photo: Photo
    tokens: tuple[PlacedToken, ...]
    occluders: tuple = ()
    info: dict = field(default_factory=dict)
    bow_mm: tuple[float, float] = (0.0, 0.0)  # the board is not flat: hump along its length, and across
    marker_cards: bool = False  # the marker sheet's cards lie on the table at the board's corners

    def calibration(self, board: Board) -> Calibration:
        """The exact calibration of this scene: its camera, and the board's hump if it has one."""
        return self.camera.calibration(board, self.bow_mm)

    def surface_z(self, xy_mm, board: Board) -> np.ndarray:
        """Height (mm) of the printed face above the flat board plane at board points (N, 2); 0 at the corners."""
        pts = np.asarray(xy_mm, dtype=np.float64).reshape(-1, 2)
        by, bx = self.bow_mm
        if by == 0 and bx == 0:
            return np.zeros(len(pts))
        width, length = board.size_mm
        u = np.clip(pts[:, 0] / width, 0, 1)
        v = np.clip(pts[:, 1] / length, 0, 1)
        return np.sin(np.pi * v) * (by + bx * np.sin(np.pi * u))


@dataclass(frozen=True)
class TokenTruth:
    """Ground truth for one token (see issue 4): where its base is, in mm and pixels, and where it rests."""

    side: str
    shape: str
    xy_mm: tuple[float, float]
    xy_px: tuple[float, float]
    bbox_px: tuple[float, float, float, float]  # x0, y0, x1, y1 clipped to the image; all 0 when out of frame
    space: str | None
    coverage: float
    coverages: dict
    margin_mm: float | None
    visible: float
    fallen: bool
    state: str = "on_space"  # on_space | no_space | off_board (knockcam.board.geometry)
    runner_up: str = ""
    runner_up_share: float = 0.0
    z_mm: float = 0.0  # height of the base contact point above the flat board plane (a bowed board)
    lies_to_mm: tuple[float, float] | None = None  # a fallen token: where its top lies (its body runs from xy_mm to here)

    def to_dict(self) -> dict:
        return {"side": self.side, "shape": self.shape, "xy_mm": [round(v, 3) for v in self.xy_mm],
                "z_mm": round(self.z_mm, 4),
                "xy_px": [round(v, 3) for v in self.xy_px], "bbox_px": [round(v, 2) for v in self.bbox_px],
                "space": self.space, "coverage": self.coverage, "coverages": self.coverages,
                "margin_mm": self.margin_mm, "state": self.state, "runner_up": self.runner_up,
                "runner_up_share": self.runner_up_share, "visible": round(self.visible, 4), "fallen": self.fallen,
                "lies_to_mm": None if self.lies_to_mm is None else [round(v, 3) for v in self.lies_to_mm]}


@dataclass(frozen=True)
class Rendered:
    """A rendered photo (BGR, before JPEG) with its truth."""

    image: np.ndarray
    tokens: tuple[TokenTruth, ...]
    spec: SceneSpec
    covered: np.ndarray | None = None  # bool, photo pixels showing a hand or a cup (what covers the board)

    def truth(self, board: Board) -> dict:
        cam = self.spec.camera
        w, l = board.size_mm
        corners = cam.project(np.array([[0, 0, 0], [w, 0, 0], [w, l, 0], [0, l, 0]], dtype=np.float64))
        return {
            "image_size": list(cam.image_size),
            "board": board.name,
            "board_size_mm": list(board.size_mm),
            "camera": cam.to_dict(),
            "calibration": self.spec.calibration(board).to_dict(board.size_mm),
            "corners_px": corners.round(3).tolist(),
            "board_bow_mm": list(self.spec.bow_mm),
            "board_thickness_mm": round(self.spec.board_thickness_mm, 3),
            "tokens": [t.to_dict() for t in self.tokens],
            "occluders": [o.to_dict() for o in self.spec.occluders],
            "info": self.spec.info,
        }


def config(preset: str | None = None) -> dict:
    """The renderer's settings (data/synth.yaml), with the named ``preset`` (its ``presets`` section) merged in."""
    cfg = settings.load("synth")
    if preset is None:
        return cfg
    presets = cfg.get("presets", {})
    if preset not in presets:
        raise KnockcamError(f"no synth preset {preset!r} (knockcam/data/synth.yaml presets: {', '.join(presets) or 'none'})")
    return merge(cfg, presets[preset])


def merge(base: dict, over: dict) -> dict:
    """``base`` with ``over``'s values in, nested dicts merged (a placement table is replaced whole)."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and key != "placement":
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


# ---------------------------------------------------------------------------------------------
# sampling

def sample_scene(board: Board, rng: np.random.Generator, cfg: dict | None = None, *,
                 tokens: tuple[PlacedToken, ...] | None = None, with_occluders: bool = True) -> SceneSpec:
    """Draw a random scene: camera, print style, table, light, photo processing, tokens, occluders."""
    cfg = cfg or config()
    size = tuple(cfg["image_size"])
    camera = random_camera(rng, board, cfg["camera"], size)
    art = board_art(board, rng, cfg)
    table = random_table(rng, board.size_mm)
    light = sample_light(rng, board, cfg)
    photo = sample_photo(rng, cfg)
    if tokens is None:
        tokens = sample_tokens(board, rng, cfg)
    occluders = occ.sample_occluders(rng, board, camera, cfg.get("occluders"), tokens) if with_occluders else ()
    keep_out = [o.footprint for o in occluders if o.footprint is not None]
    if keep_out:
        tokens = tuple(t for t in tokens
                       if all(np.hypot(t.xy_mm[0] - x, t.xy_mm[1] - y) > r for x, y, r in keep_out))
    edge = tuple(float(v) for v in (rng.uniform(20, 240, 3) if rng.random() < 0.5 else np.full(3, rng.uniform(20, 240))))
    bow = (0.0, 0.0)
    if rng.random() < cfg.get("bow_p", 0.0):
        bow = (float(rng.uniform(*cfg["bow_mm"])), float(rng.uniform(0, cfg["bow_mm"][1] / 2)))
    cards = bool(cfg.get("marker_cards", False))
    return SceneSpec(camera=camera, art=art, table=table, board_thickness_mm=float(rng.uniform(1.5, 6)), bow_mm=bow,
                     edge_bgr=edge, light=light, photo=photo, tokens=tuple(tokens), occluders=tuple(occluders),
                     info={"table": table.kind, **({"marker_cards": True} if cards else {})}, marker_cards=cards)


_ART_BANK: dict = {}


def board_art(board: Board, rng: np.random.Generator, cfg: dict) -> BoardArt:
    """Fresh art per scene, or with ``art_bank: N`` one of N cached print styles (drawing art is slow)."""
    bank = int(cfg.get("art_bank", 0))
    if bank <= 0:
        return render_board_art(board, rng, float(cfg["art_px_per_mm"]), float(cfg.get("crease_p", 0.35)))
    key = (board.source, board.name, int(rng.integers(bank)), float(cfg["art_px_per_mm"]))
    if key not in _ART_BANK:
        if len(_ART_BANK) >= bank:
            _ART_BANK.pop(next(iter(_ART_BANK)))
        _ART_BANK[key] = render_board_art(board, np.random.default_rng([104729, key[2]]), key[3],
                                          float(cfg.get("crease_p", 0.35)))
    return _ART_BANK[key]


def sample_light(rng: np.random.Generator, board: Board, cfg: dict) -> Light:
    lc = cfg["light"]
    el = np.radians(rng.uniform(*lc["elevation_deg"]))
    az = rng.uniform(0, 2 * np.pi)
    direction = np.array([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)])
    glare = None
    if rng.random() < cfg["photo"]["glare_p"]:
        w, l = board.size_mm
        glare = (float(rng.uniform(0, w)), float(rng.uniform(0, l)), float(rng.uniform(40, 200)), float(rng.uniform(0.15, 0.6)))
    return Light(direction=direction, ambient=float(rng.uniform(*lc["ambient"])),
                 shadow_strength=float(rng.uniform(*lc["shadow_strength"])),
                 shadow_blur_px=float(rng.uniform(*lc["shadow_blur_px"])),
                 illumination_seed=int(rng.integers(2**31)), glare=glare)


def sample_photo(rng: np.random.Generator, cfg: dict) -> Photo:
    pc = cfg["photo"]
    wb = tuple(float(v) for v in np.exp(rng.normal(0, pc["white_balance_sigma"], 3)))
    defocus = float(rng.uniform(1.5, 4.5)) if rng.random() < pc["defocus_p"] else 0.0
    motion = (float(rng.uniform(3, 12)), float(rng.uniform(0, np.pi))) if rng.random() < pc["motion_blur_p"] else None
    return Photo(wb_gains=wb, exposure=float(rng.uniform(*pc["exposure"])), gamma=float(rng.uniform(*pc["gamma"])),
                 blur_sigma=float(rng.uniform(*pc["blur_sigma_px"])), defocus_px=defocus, motion=motion,
                 noise_sigma=float(rng.uniform(*pc["noise_sigma"])),
                 jpeg_quality=int(rng.integers(pc["jpeg_quality"][0], pc["jpeg_quality"][1] + 1)),
                 noise_seed=int(rng.integers(2**31)))


def plastic_colour(rng: np.random.Generator, side: str, jitter: float) -> tuple[float, float, float]:
    base = np.asarray(PLASTIC_BGR[side], dtype=np.float64)
    c = base * rng.uniform(0.8, 1.15) + rng.normal(0, jitter, 3)
    return tuple(float(v) for v in np.clip(c, 5, 250))


def _footprint(token: PlacedToken, board: Board) -> tuple[np.ndarray, float]:
    """A circle covering the token's footprint on the board: centre (mm) and radius."""
    r = board.token.base_diameter_mm / 2
    if not token.fallen:
        return np.asarray(token.xy_mm), r
    h = board.token.height_mm
    d = np.array([np.cos(token.fallen_dir), np.sin(token.fallen_dir)])
    return np.asarray(token.xy_mm) + d * h / 2, max(r, h / 2 + 1)


def _free(candidate: PlacedToken, placed: list[PlacedToken], board: Board, gap: float = 0.0) -> bool:
    c, r = _footprint(candidate, board)
    for other in placed:
        oc, orad = _footprint(other, board)
        if np.linalg.norm(c - oc) < r + orad + gap - 1e-6:
            return False
    return True


def sample_position(board: Board, rng: np.random.Generator, cfg: dict, placed: list[PlacedToken],
                    side: str | None = None) -> tuple[float, float]:
    """A base centre drawn from the placement mixture (spaces, near lines, touching, GO! area, table; for a
    ``side``, also its camouflage: a space printed in its own colour, or touching a token of its own side)."""
    pc = cfg["tokens"]["placement"]
    kinds = list(pc)
    p = np.array([pc[k] for k in kinds], dtype=np.float64)
    kind = kinds[rng.choice(len(kinds), p=p / p.sum())]
    width, length = board.size_mm
    r = board.token.base_diameter_mm / 2
    if kind == "touching_own_side":
        placed = [t for t in placed if t.side == side]
        kind = "touching"
    if kind == "touching" and placed:
        other = placed[rng.integers(len(placed))]
        if not other.fallen:
            a = rng.uniform(0, 2 * np.pi)
            dist = 2 * r + rng.uniform(0.05, 0.8)
            return (other.xy_mm[0] + dist * np.cos(a), other.xy_mm[1] + dist * np.sin(a))
        kind = "space"
    if kind == "near_line":
        space = board.spaces[rng.integers(len(board.spaces))]
        poly = np.asarray(space.polygon)
        i = rng.integers(len(poly))
        a, b = poly[i], poly[(i + 1) % len(poly)]
        t = rng.uniform(0, 1)
        edge = b - a
        normal = np.array([edge[1], -edge[0]]) / max(np.linalg.norm(edge), 1e-9)
        pt = a + t * edge + normal * rng.normal(0, 4.0)
        return (float(pt[0]), float(pt[1]))
    if kind == "go_area":
        first_row = min(min(y for _, y in sp.polygon) for sp in board.spaces)
        return (float(rng.uniform(r, width - r)), float(rng.uniform(r, first_row - r * 0.3)))
    if kind == "off_board":
        for _ in range(100):
            x = rng.uniform(-90, width + 90)
            y = rng.uniform(-90, length + 90)
            if not (0 < x < width and 0 < y < length):
                return (float(x), float(y))
    spaces = board.spaces
    if kind == "own_colour":
        printed = set(cfg["tokens"]["own_colour"].get(side, ()))
        spaces = [sp for sp in board.spaces if sp.color_set in printed or sp.kind in printed] or board.spaces
    space = spaces[rng.integers(len(spaces))]
    poly = np.asarray(space.polygon)
    lo, hi = poly.min(axis=0), poly.max(axis=0)
    return (float(rng.uniform(lo[0], hi[0])), float(rng.uniform(lo[1], hi[1])))


def sample_tokens(board: Board, rng: np.random.Generator, cfg: dict) -> tuple[PlacedToken, ...]:
    """A random subset of each side's tokens (up to four a side) placed without overlapping bases."""
    tc = cfg["tokens"]
    placed: list[PlacedToken] = []
    if rng.random() < tc.get("empty_p", 0.0):  # a few empty boards: background images for the detector
        return ()
    for side in SIDES:
        if rng.random() > tc["side_present_p"]:
            continue
        n = int(rng.integers(tc.get("per_side_min", 1), tc["per_side_max"] + 1))
        for shape in rng.choice(SHAPES, size=n, replace=False):
            for _ in range(60):
                fallen = float(rng.uniform(0, 2 * np.pi)) if rng.random() < tc["fallen_p"] else None
                cand = PlacedToken(side=side, shape=str(shape), xy_mm=sample_position(board, rng, cfg, placed, side),
                                   yaw=float(rng.uniform(0, 2 * np.pi)), fallen_dir=fallen,
                                   colour=plastic_colour(rng, side, tc["colour_jitter"]),
                                   shine=float(rng.uniform(0.2, 0.9)))
                if _free(cand, placed, board):
                    placed.append(cand)
                    break
    order = rng.permutation(len(placed))
    return tuple(placed[i] for i in order)


# ---------------------------------------------------------------------------------------------
# rendering

def render_static(spec: SceneSpec, board: Board, canvas: Canvas | None = None) -> np.ndarray:
    """Table, board edge and printed face with glare, as uint8 BGR on the canvas (before lens, light, shadow)."""
    cam = (canvas or canvas_for(spec.camera)).camera
    w, h = cam.image_size
    thk = spec.board_thickness_mm
    r, t, k = cam.r, cam.t, cam.k
    h_table = k @ np.column_stack([r[:, 0], r[:, 1], t - thk * r[:, 2]])
    half = np.diag([0.5, 0.5, 1.0])  # the table is soft anyway: warp it at half size, then enlarge
    img = cv2.warpPerspective(spec.table.image, half @ h_table @ spec.table.px_to_mm, (w // 2, h // 2),
                              flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
    img = cv2.resize(img, (w, h), interpolation=cv2.INTER_LINEAR)
    if spec.marker_cards:
        _draw_marker_cards(img, board, h_table)
    # the board's edge, where the camera sees it
    width, length = board.size_mm
    top = np.array([[0, 0, 0], [width, 0, 0], [width, length, 0], [0, length, 0]], dtype=np.float64)
    bottom = top - [0, 0, thk]
    centre = cam.center_mm
    for i in range(4):
        j = (i + 1) % 4
        mid = (top[i] + top[j]) / 2
        outward = np.array([mid[0] - width / 2, mid[1] - length / 2, 0])
        if np.dot(outward, centre - mid) <= 0:
            continue
        quad = cam.project(np.array([top[i], top[j], bottom[j], bottom[i]]), distort=False)
        shade = 0.55 + 0.45 * max(0.0, float(np.dot(outward / np.linalg.norm(outward), spec.light.direction)))
        cv2.fillConvexPoly(img, np.round(quad * 16).astype(np.int32), [c * shade for c in spec.edge_bgr],
                           cv2.LINE_AA, shift=4)
    art_to_img = cam.homography @ np.linalg.inv(spec.art.view.mm_to_px)
    if spec.bow_mm == (0.0, 0.0):
        cv2.warpPerspective(spec.art.image, art_to_img, (w, h), dst=img, flags=cv2.INTER_LINEAR,
                            borderMode=cv2.BORDER_TRANSPARENT)
    else:
        mx, my = _bowed_art_maps(spec, board, cam)
        cv2.remap(spec.art.image, mx, my, cv2.INTER_LINEAR, dst=img, borderMode=cv2.BORDER_TRANSPARENT)
    for o in spec.occluders:
        if o.decal is not None:
            _draw_decal(img, o.decal, cam)
    if spec.light.glare is not None:
        gx, gy, gr, gs = spec.light.glare
        ctr = cam.project(np.array([[gx, gy, 0.0], [gx + gr, gy, 0.0]]), distort=False)
        rad = max(4.0, float(np.linalg.norm(ctr[1] - ctr[0])))
        x0, y0 = np.clip(np.floor(ctr[0] - 2.2 * rad), 0, [w, h]).astype(int)
        x1, y1 = np.clip(np.ceil(ctr[0] + 2.2 * rad), 0, [w, h]).astype(int)
        if x1 > x0 and y1 > y0:
            glare = np.zeros((y1 - y0, x1 - x0), np.float32)
            cv2.circle(glare, (int(ctr[0, 0] - x0), int(ctr[0, 1] - y0)), int(rad), 1.0, -1, cv2.LINE_AA)
            glare = cv2.GaussianBlur(glare, (0, 0), rad * 0.6)
            mask = np.zeros((y1 - y0, x1 - x0), np.float32)
            corners = cam.project(top, distort=False) - [x0, y0]
            cv2.fillConvexPoly(mask, np.round(corners * 16).astype(np.int32), 1.0, cv2.LINE_AA, shift=4)
            g = (glare * mask * gs)[..., None]
            roi = img[y0:y1, x0:x1].astype(np.float32)
            img[y0:y1, x0:x1] = np.clip(roi * (1 - g) + 255 * g, 0, 255).astype(np.uint8)
    return img


def _draw_marker_cards(img: np.ndarray, board: Board, h_table: np.ndarray, px_per_mm: float = 6.0) -> None:
    """The marker sheet's four cards (knockcam.calibrate.markers) on the table at the board's corners,
    through ``h_table`` (table mm -> pixels): on the table, a board's thickness below its printed face."""
    from knockcam.calibrate.markers import CARD_MM, card_image, marker_corners_mm

    h, w = img.shape[:2]
    for marker_id, quad in marker_corners_mm(board).items():
        card = cv2.cvtColor(card_image(marker_id, px_per_mm), cv2.COLOR_GRAY2BGR)
        cx, cy = quad.mean(axis=0)
        card_to_mm = np.array([[1 / px_per_mm, 0, cx - CARD_MM / 2 + 0.5 / px_per_mm],
                               [0, -1 / px_per_mm, cy + CARD_MM / 2 - 0.5 / px_per_mm], [0, 0, 1.0]])
        cv2.warpPerspective(card, h_table @ card_to_mm, (w, h), dst=img, flags=cv2.INTER_LINEAR,
                            borderMode=cv2.BORDER_TRANSPARENT)


def _bowed_art_maps(spec: SceneSpec, board: Board, cam: Camera) -> tuple[np.ndarray, np.ndarray]:
    """remap maps (image px -> art px) for a board whose face is bowed: each camera ray meets the
    curved face. Solved on an 8 px grid (one cell beyond every image edge) by fixed-point
    iteration, then interpolated up: the map is smooth, so the error is far below a pixel."""
    w, h = cam.image_size
    step = 8
    gw, gh = -(-w // step) + 2, -(-h // step) + 2
    # grid samples at the pixel centres cv2.resize assumes, starting one cell before the image
    gy, gx = (np.mgrid[0:gh, 0:gw].astype(np.float64) + 0.5) * step - 0.5 - step
    px = np.stack([gx.ravel(), gy.ravel(), np.ones(gx.size)], axis=0)
    rays = cam.r.T @ (np.linalg.inv(cam.k) @ px)  # board-frame directions
    c = cam.center_mm
    with np.errstate(divide="ignore", invalid="ignore"):
        xy = c[:2, None] + (-c[2] / rays[2]) * rays[:2]
        for _ in range(6):
            z = spec.surface_z(xy.T, board)
            xy = c[:2, None] + ((z - c[2]) / rays[2]) * rays[:2]
    xy[:, rays[2] > -1e-9] = -1e4  # rays at or above the horizon never meet the board
    art = spec.art.view.to_px(np.nan_to_num(xy.T, nan=-1e4, posinf=-1e4, neginf=-1e4))
    grid = art.reshape(gh, gw, 2).astype(np.float32)
    full = cv2.resize(grid, (gw * step, gh * step), interpolation=cv2.INTER_LINEAR)[step:step + h, step:step + w]
    return np.ascontiguousarray(full[..., 0]), np.ascontiguousarray(full[..., 1])


def _draw_decal(img: np.ndarray, decal, cam: Camera) -> None:
    """Warp a flat card or banknote onto the image where it lies (undistorted pixels)."""
    h_img, w_img = img.shape[:2]
    z = decal.height_mm
    corners = cam.project(np.hstack([decal.corners_mm, np.full((4, 1), z)]), distort=False)
    x0, y0 = np.clip(np.floor(corners.min(axis=0)) - 2, 0, [w_img, h_img]).astype(int)
    x1, y1 = np.clip(np.ceil(corners.max(axis=0)) + 2, 0, [w_img, h_img]).astype(int)
    if x1 <= x0 or y1 <= y0:
        return
    th, tw = decal.image.shape[:2]
    src = np.array([[0, 0], [tw, 0], [tw, th], [0, th]], np.float32)
    m = cv2.getPerspectiveTransform(src, (corners - [x0, y0]).astype(np.float32))
    roi = img[y0:y1, x0:x1]
    cv2.warpPerspective(decal.image, m, (x1 - x0, y1 - y0), dst=roi, flags=cv2.INTER_LINEAR,
                        borderMode=cv2.BORDER_TRANSPARENT)


def illumination(spec: SceneSpec, size: tuple[int, int]) -> np.ndarray:
    """Uneven light over the frame: a smooth random field plus a gradient, at the given (w, h)."""
    lrng = np.random.default_rng(spec.light.illumination_seed)
    small = lrng.normal(0, 1, (5, 8)).astype(np.float32)
    yy, xx = np.mgrid[0:5, 0:8].astype(np.float32)
    grad = lrng.normal(0, 0.07) * (xx / 7 - 0.5) + lrng.normal(0, 0.07) * (yy / 4 - 0.5)
    field = 1 + lrng.uniform(0.02, 0.12) * small + grad
    return cv2.resize(field.astype(np.float32), size, interpolation=cv2.INTER_CUBIC)


def _posed_tokens(spec: SceneSpec, board: Board):
    meshes, centres = [], []
    if not spec.tokens:
        return meshes, centres
    lift = spec.surface_z([t.xy_mm for t in spec.tokens], board)
    lift = np.where(_on_board(np.array([t.xy_mm for t in spec.tokens]), board), lift, 0.0)
    for tok, z in zip(spec.tokens, lift):
        mesh, centre = pose_token(tok.shape, board.token, tok.xy_mm, tok.yaw, tok.fallen_dir)
        if z:
            mesh = mesh.posed(np.eye(3), (0.0, 0.0, float(z)))
            centre = centre + [0.0, 0.0, float(z)]
        meshes.append(mesh)
        centres.append(centre)
    return meshes, centres


def _on_board(xy: np.ndarray, board: Board) -> np.ndarray:
    width, length = board.size_mm
    return (xy[:, 0] >= 0) & (xy[:, 0] <= width) & (xy[:, 1] >= 0) & (xy[:, 1] <= length)


def base_point(spec: SceneSpec, board: Board, xy_mm) -> np.ndarray:
    """The 3-D point (mm) where a base centre at ``xy_mm`` touches the printed face (or the table)."""
    xy = np.asarray(xy_mm, dtype=np.float64).reshape(1, 2)
    z = spec.surface_z(xy, board)[0] if _on_board(xy, board)[0] else 0.0
    return np.array([xy[0, 0], xy[0, 1], z])


def render(spec: SceneSpec, board: Board, static: np.ndarray | None = None, canvas: Canvas | None = None,
           compute_truth: bool = True) -> Rendered:
    """Render the photo (uint8 BGR, before the phone's processing) and, per token, its truth.

    Drawing happens on the undistorted canvas; the lens then resamples it into the photo. A video
    passes the same ``static`` and ``canvas`` for every frame.
    """
    canvas = canvas or canvas_for(spec.camera)
    static = render_static(spec, board, canvas) if static is None else static
    meshes, centres = _posed_tokens(spec, board)
    img, unshadowed = _lit(spec, board, static, canvas.camera, meshes)
    ids, token_polys = _paint_objects(img, spec, meshes, centres, canvas.camera, unshadowed)

    # lens distortion: resample the canvas as the lens sees it
    covered = (ids == OCCLUDER_ID).astype(np.uint8)
    if canvas.maps is not None:
        img = cv2.remap(img, canvas.maps[0], canvas.maps[1], cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        covered = cv2.remap(covered, canvas.maps[0], canvas.maps[1], cv2.INTER_NEAREST, borderMode=cv2.BORDER_REPLICATE)
    truths = _truths(spec, board, meshes, ids, token_polys, canvas) if compute_truth else ()
    return Rendered(image=img, tokens=tuple(truths), spec=spec, covered=covered.astype(bool))


def _shadow_px(verts: np.ndarray, ldir: np.ndarray, cam: Camera) -> np.ndarray:
    """Where the light casts ``verts`` (mm) onto the board plane, in canvas pixels."""
    on_plane = verts[:, :2] - (verts[:, 2:3] / max(ldir[2], 0.05)) * ldir[None, :2]
    return cam.project(np.hstack([on_plane, np.zeros((len(verts), 1))]), distort=False)


def _lit(spec: SceneSpec, board: Board, static: np.ndarray, cam: Camera, meshes) -> tuple[np.ndarray, np.ndarray]:
    """The static scene under the light with the shadows the tokens and occluders cast (and the tokens'
    contact shadows), worked on the board plane at half resolution; and the light field without the
    shadows (half resolution), which lights each object as a whole."""
    w, h = cam.image_size
    light = spec.light
    ldir = light.direction
    hw, hh = w // 2, h // 2
    shadow = np.zeros((hh, hw), np.float32)
    contact = np.zeros((hh, hw), np.float32)
    for mesh, tok in zip(meshes, spec.tokens):
        hull = cv2.convexHull(np.round(_shadow_px(mesh.verts, ldir, cam) * 8).astype(np.int32))
        cv2.fillConvexPoly(shadow, hull, 1.0, cv2.LINE_AA, shift=4)
        ring = cam.project(_ring(tok, board, 1.06), distort=False)
        cv2.fillConvexPoly(contact, np.round(ring * 8).astype(np.int32), 1.0, cv2.LINE_AA, shift=4)
    for o in spec.occluders:
        for solid in o.solids:
            pts = _shadow_px(solid.mesh.verts, ldir, cam)
            if np.isfinite(pts).all() and np.abs(pts).max() < 1e5:
                cv2.fillConvexPoly(shadow, cv2.convexHull(np.round(pts * 8).astype(np.int32)), 1.0, cv2.LINE_AA, shift=4)
    light_field = illumination(spec, (hw, hh))
    unshadowed = light_field.copy()
    if meshes or spec.occluders:
        shadow = cv2.GaussianBlur(shadow, (0, 0), light.shadow_blur_px / 2)
        contact = cv2.GaussianBlur(contact, (0, 0), 0.8)
        light_field *= 1 - np.maximum(shadow * light.shadow_strength, contact * 0.55)
    field = cv2.resize(light_field, (w, h), interpolation=cv2.INTER_LINEAR)
    return cv2.multiply(static, cv2.merge([field, field, field]), dtype=cv2.CV_8U), unshadowed


def _paint_objects(img: np.ndarray, spec: SceneSpec, meshes, centres, cam: Camera,
                   unshadowed: np.ndarray) -> tuple[np.ndarray, list]:
    """Tokens and solid occluders painted into ``img``, object by object from far to near (hands hover above
    everything), each lit by the light field where it stands. Returns the id buffer (token index + 1, or
    OCCLUDER_ID) and each token's painted polygons."""
    w, h = cam.image_size
    hw, hh = w // 2, h // 2
    ids = np.zeros((h, w), np.uint8)
    objects = []  # (ident, solid, anchor, layer)
    for idx, (mesh, tok, centre) in enumerate(zip(meshes, spec.tokens, centres)):
        objects.append((idx + 1, Solid(mesh=mesh, colour=tok.colour, shine=tok.shine), centre, 0))
    for o in spec.occluders:
        for solid in o.solids:
            objects.append((OCCLUDER_ID, solid, np.asarray(o.anchor_mm, dtype=np.float64), 1 if o.above else 0))
    token_polys: list = [np.zeros((0, 4, 2), np.int32)] * len(meshes)
    if objects:
        depth = cam.to_camera(np.array([ob[2] for ob in objects]))[:, 2]
        order = sorted(range(len(objects)), key=lambda i: (objects[i][3], -depth[i]))
        for i in order:
            ident, solid, anchor, _ = objects[i]
            apx = cam.project(anchor[None, :], distort=False)[0]
            lit = float(unshadowed[int(np.clip(apx[1] / 2, 0, hh - 1)), int(np.clip(apx[0] / 2, 0, hw - 1))])
            polys = _paint(img, ids, int(ident), solid, cam, spec.light, lit)
            if ident != OCCLUDER_ID:
                token_polys[ident - 1] = polys
    return ids, token_polys


def _truths(spec: SceneSpec, board: Board, meshes, ids: np.ndarray, token_polys: list,
            canvas: Canvas) -> list[TokenTruth]:
    """Each token's truth: where its base rests (space, coverage, margin), its box and base in the photo, and
    how much of it is in view (its pixels left uncovered and inside the photo, over its whole silhouette)."""
    shown = ids if canvas.footprint is None else ids[canvas.footprint]
    counts = np.bincount(shown.ravel(), minlength=256)
    rests = resting_all(board, [tok.xy_mm for tok in spec.tokens])
    truths = []
    for idx, (mesh, tok) in enumerate(zip(meshes, spec.tokens)):
        full = _silhouette_area(token_polys[idx])
        base3d = base_point(spec, board, tok.xy_mm)
        xy_px = spec.camera.project(base3d[None, :])[0]
        vp = spec.camera.project(mesh.verts)
        pw, ph = spec.camera.image_size
        x0, y0 = np.clip(vp.min(axis=0), 0, [pw, ph])
        x1, y1 = np.clip(vp.max(axis=0), 0, [pw, ph])
        bbox = (float(x0), float(y0), float(x1), float(y1)) if x1 > x0 and y1 > y0 else (0.0, 0.0, 0.0, 0.0)
        rest = rests[idx]
        vis = min(1.0, counts[idx + 1] / full) if full > 0 else 0.0
        truths.append(TokenTruth(side=tok.side, shape=tok.shape, xy_mm=(float(tok.xy_mm[0]), float(tok.xy_mm[1])),
                                 xy_px=(float(xy_px[0]), float(xy_px[1])), bbox_px=bbox, space=rest.space,
                                 coverage=rest.coverage, coverages=rest.coverages, margin_mm=rest.margin_mm,
                                 visible=float(vis), fallen=tok.fallen, state=rest.state,
                                 runner_up=rest.runner_up, runner_up_share=rest.runner_up_share,
                                 z_mm=float(base3d[2]), lies_to_mm=_lies_to(tok, board)))
    return truths


OCCLUDER_ID = 255  # id-buffer value of anything that is not a token


def _paint(img: np.ndarray, ids: np.ndarray, ident: int, solid: Solid, cam: Camera, light: Light,
           lit: float) -> np.ndarray:
    """Flat-shade and paint one solid's camera-facing quads far to near, marking them ``ident`` in the
    id buffer; returns them (1/16 px, int32). Quads go one by one: cv2.fillPoly would leave
    overlapping parts unfilled (even-odd rule)."""
    v = solid.mesh.verts
    f = solid.mesh.faces
    q = v[f]  # (F, 4, 3)
    n = np.cross(q[:, 2] - q[:, 0], q[:, 3] - q[:, 1])
    norm = np.linalg.norm(n, axis=1)
    n = n / np.maximum(norm, 1e-12)[:, None]
    ctr = q.mean(axis=1)
    view = cam.center_mm[None, :] - ctr
    view /= np.linalg.norm(view, axis=1)[:, None]
    front = (norm > 1e-9) & ((n * view).sum(axis=1) > 0)
    cam_pts = cam.to_camera(v)
    if (cam_pts[:, 2] < 1.0).any():
        front &= (cam_pts[f, 2] > 1.0).all(axis=1)
    if not front.any():
        return np.zeros((0, 4, 2), np.int32)
    px = cam.project(v, distort=False)
    fp = np.round(px[f[front]] * 16).astype(np.int32)
    nf = n[front]
    ldir = light.direction
    diffuse = np.clip(nf @ ldir, 0, None)
    half = view[front] + ldir[None, :]
    half /= np.linalg.norm(half, axis=1)[:, None]
    spec_l = np.clip((nf * half).sum(axis=1), 0, None) ** (10 + 50 * solid.shine) * (0.25 + 0.6 * solid.shine)
    albedo = (np.asarray(solid.colour)[None, :] if solid.face_colours is None else solid.face_colours[front]) * lit
    cols = albedo * (light.ambient + (1 - light.ambient) * diffuse)[:, None] + 255 * lit * spec_l[:, None]
    cols = np.clip(cols, 0, 255).tolist()
    depth = cam_pts[f[front]].mean(axis=1)[:, 2]
    for i in np.argsort(-depth):
        cv2.fillConvexPoly(img, fp[i], cols[i], cv2.LINE_8, shift=4)
        cv2.fillConvexPoly(ids, fp[i], ident, cv2.LINE_8, shift=4)
    return fp


def _lies_to(tok: PlacedToken, board: Board) -> tuple[float, float] | None:
    """Where a fallen token's top lies on the board (it rolled over its base rim in ``fallen_dir``); None if upright."""
    if not tok.fallen:
        return None
    d = np.array([np.cos(tok.fallen_dir), np.sin(tok.fallen_dir)])
    end = np.asarray(tok.xy_mm) + d * board.token.height_mm
    return (float(end[0]), float(end[1]))


def _ring(tok: PlacedToken, board: Board, scale: float, n: int = 24) -> np.ndarray:
    """The base's outline on the board (an upright token) or its fallen footprint outline."""
    r = board.token.base_diameter_mm / 2 * scale
    a = np.linspace(0, 2 * np.pi, n, endpoint=False)
    if not tok.fallen:
        return np.stack([tok.xy_mm[0] + r * np.cos(a), tok.xy_mm[1] + r * np.sin(a), np.zeros(n)], axis=1)
    d = np.array([np.cos(tok.fallen_dir), np.sin(tok.fallen_dir)])
    e = np.array([-d[1], d[0]])
    c = np.asarray(tok.xy_mm) + d * board.token.height_mm * 0.5
    pts = c[None, :] + np.outer(np.cos(a), d) * board.token.height_mm * 0.5 + np.outer(np.sin(a), e) * r * 0.6
    return np.hstack([pts, np.zeros((n, 1))])


def _silhouette_area(polys) -> int:
    """Pixels covered by a token's front faces, counted without clipping to the image."""
    if not len(polys):
        return 0
    allp = np.asarray(polys)
    lo = allp.reshape(-1, 2).min(axis=0) // 16 - 2
    hi = allp.reshape(-1, 2).max(axis=0) // 16 + 2
    size = hi - lo + 1
    if size[0] * size[1] > 4_000_000:
        return 0
    mask = np.zeros((int(size[1]), int(size[0])), np.uint8)
    for poly in allp - lo * 16:  # one by one: fillPoly's even-odd rule would leave overlaps empty
        cv2.fillConvexPoly(mask, poly, 1, cv2.LINE_8, shift=4)
    return int(np.count_nonzero(mask))


def finish_photo(img: np.ndarray, photo: Photo) -> np.ndarray:
    """The phone's pipeline on the linear render: white balance, exposure, gamma, blur, noise -> uint8 BGR."""
    gains = np.asarray(photo.wb_gains) * photo.exposure
    x = np.arange(256, dtype=np.float64) / 255.0
    lut = np.stack([np.clip((np.clip(x * g, 0, 1) ** photo.gamma) * 255, 0, 255) for g in gains], axis=1)
    img8 = cv2.LUT(img, lut.astype(np.uint8).reshape(256, 1, 3))
    if photo.defocus_px > 0:
        rad = photo.defocus_px
        ksz = int(2 * np.ceil(rad) + 1)
        kern = np.zeros((ksz, ksz), np.float32)
        cv2.circle(kern, (ksz // 2, ksz // 2), int(round(rad)), 1.0, -1, cv2.LINE_AA)
        img8 = cv2.filter2D(img8, -1, kern / kern.sum())
    if photo.motion is not None:
        length, ang = photo.motion
        ksz = int(np.ceil(length)) | 1
        kern = np.zeros((ksz, ksz), np.float32)
        c = ksz // 2
        dx, dy = np.cos(ang) * length / 2, np.sin(ang) * length / 2
        cv2.line(kern, (int(round(c - dx)), int(round(c - dy))), (int(round(c + dx)), int(round(c + dy))), 1.0, 1,
                 cv2.LINE_AA)
        img8 = cv2.filter2D(img8, -1, kern / kern.sum())
    if photo.blur_sigma > 0.35:
        img8 = cv2.GaussianBlur(img8, (0, 0), photo.blur_sigma)
    if photo.noise_sigma > 0:  # luminance noise per pixel, colour noise coarser (as after demosaicing)
        h, w = img8.shape[:2]
        nrng = np.random.default_rng(photo.noise_seed)
        tile = _noise_tile(w + 64, h + 64)
        dx, dy = nrng.integers(0, 64, 2)
        luma = tile[dy:dy + h, dx:dx + w]
        chroma = nrng.normal(0, photo.noise_sigma * 0.6, (h // 8, w // 8, 3)).astype(np.float32)
        chroma = cv2.resize(chroma, (w, h), interpolation=cv2.INTER_LINEAR)
        noise = cv2.scaleAdd(cv2.merge([luma, luma, luma]), photo.noise_sigma, chroma)
        img8 = cv2.add(img8, noise, dtype=cv2.CV_8U)
    return img8


_NOISE: dict = {}


def _noise_tile(w: int, h: int) -> np.ndarray:
    """A fixed field of unit Gaussian noise, cropped at a random offset per photo (drawing fresh noise is slow)."""
    if (w, h) not in _NOISE:
        _NOISE[(w, h)] = np.random.default_rng(12345).standard_normal((h, w), dtype=np.float32)
    return _NOISE[(w, h)]


def encode_jpeg(img8: np.ndarray, quality: int) -> bytes:
    ok, buf = cv2.imencode(".jpg", img8, [int(cv2.IMWRITE_JPEG_QUALITY), int(quality)])
    if not ok:
        raise RuntimeError("JPEG encoding failed")
    return buf.tobytes()


def reference_spec(spec: SceneSpec, rng: np.random.Generator) -> SceneSpec:
    """The empty board from the same camera a little earlier: no tokens or occluders, slightly other light."""
    light = spec.light
    glare = light.glare
    if glare is not None:
        glare = (glare[0], glare[1], glare[2], float(np.clip(glare[3] * rng.uniform(0.7, 1.2), 0, 0.8)))
    light = replace(light, ambient=float(np.clip(light.ambient + rng.normal(0, 0.04), 0.3, 0.85)),
                    illumination_seed=int(rng.integers(2**31)), glare=glare)
    wb = tuple(float(g * np.exp(rng.normal(0, 0.02))) for g in spec.photo.wb_gains)
    photo = replace(spec.photo, wb_gains=wb, exposure=float(spec.photo.exposure * rng.uniform(0.92, 1.08)),
                    noise_seed=int(rng.integers(2**31)), jpeg_quality=int(rng.integers(80, 96)))
    return replace(spec, tokens=(), occluders=(), light=light, photo=photo, info={**spec.info, "reference": True})


def make_photo(board: Board, seed: int, index: int, cfg: dict | None = None,
               reference: bool = False) -> tuple[bytes, dict, Rendered] | tuple[bytes, dict, Rendered, bytes]:
    """Scene ``index`` of run ``seed``: JPEG bytes, truth dict and the render (deterministic per seed, index).

    With ``reference`` also the JPEG of the empty-board reference frame (same camera, other light).
    """
    rng = np.random.default_rng([seed, index])
    spec = sample_scene(board, rng, cfg)
    spec = replace(spec, info={**spec.info, "seed": seed, "index": index})
    rendered = render(spec, board)
    jpeg = encode_jpeg(finish_photo(rendered.image, spec.photo), spec.photo.jpeg_quality)
    truth = rendered.truth(board)
    if not reference:
        return jpeg, truth, rendered
    ref = reference_spec(spec, np.random.default_rng([seed, index, 2]))
    ref_img = render(ref, board, compute_truth=False).image
    return jpeg, truth, rendered, encode_jpeg(finish_photo(ref_img, ref.photo), ref.photo.jpeg_quality)
