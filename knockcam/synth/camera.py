"""A true pinhole camera looking at the board: intrinsics, pose and lens distortion.

The board frame is right-handed: x across, y towards the far end, z up out of the printed face,
all in millimetres. The camera follows OpenCV: X_cam = R @ X_board + t, x right, y down, z forward.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import cv2
import numpy as np

from knockcam.board.layout import Board
from knockcam.calibrate.calibration import Calibration, Hump


@dataclass(frozen=True)
class Camera:
    """Intrinsics ``k``, pose ``r`` / ``t`` (board -> camera) and OpenCV distortion ``dist``."""

    k: np.ndarray  # 3x3
    r: np.ndarray  # 3x3 rotation, board -> camera
    t: np.ndarray  # (3,) translation, millimetres
    dist: np.ndarray  # (5,) k1 k2 p1 p2 k3
    image_size: tuple[int, int]  # (width, height)

    @property
    def center_mm(self) -> np.ndarray:
        """The camera's optical centre in board millimetres."""
        return -self.r.T @ self.t

    @property
    def has_distortion(self) -> bool:
        return bool(np.any(np.abs(self.dist) > 1e-12))

    @property
    def homography(self) -> np.ndarray:
        """Board plane (z = 0, mm) -> undistorted image pixels."""
        h = self.k @ np.column_stack([self.r[:, 0], self.r[:, 1], self.t])
        return h / h[2, 2]

    def to_camera(self, points_mm) -> np.ndarray:
        pts = np.asarray(points_mm, dtype=np.float64).reshape(-1, 3)
        return pts @ self.r.T + self.t

    def project(self, points_mm, distort: bool = True) -> np.ndarray:
        """(N, 3) board millimetres -> (N, 2) image pixels (through the lens unless ``distort`` is False)."""
        cam = self.to_camera(points_mm)
        z = np.maximum(cam[:, 2:3], 1e-6)
        norm = cam[:, :2] / z
        if distort and self.has_distortion:
            norm = distort_normalized(norm, self.dist)
        return norm * np.array([self.k[0, 0], self.k[1, 1]]) + self.k[:2, 2]

    @property
    def up(self) -> np.ndarray:
        """The image of a 1 mm step up from the board (homogeneous, on the scale of ``homography``)."""
        h = self.k @ np.column_stack([self.r[:, 0], self.r[:, 1], self.t])
        return self.k @ self.r[:, 2] / h[2, 2]

    def calibration(self, board: Board | None = None, bow_mm: tuple[float, float] = (0.0, 0.0)) -> Calibration:
        """The exact Calibration this camera implies (method 'truth'), for a board with this hump
        (along, across; knockcam.synth.scene.SceneSpec.bow_mm) if ``board`` is given."""
        distorted = self.has_distortion
        hump = None
        if board is not None and any(bow_mm):
            hump = Hump(float(bow_mm[0]), float(bow_mm[1]), tuple(board.size_mm), tuple(float(v) for v in self.up))
        return Calibration(method="truth", image_size=self.image_size, homography=self.homography,
                           camera_matrix=self.k.copy() if distorted else None,
                           dist_coeffs=self.dist.copy() if distorted else None, error_mm=0.0,
                           created="synthetic", hump=hump)

    def to_dict(self) -> dict:
        rvec, _ = cv2.Rodrigues(self.r)
        return {
            "image_size": list(self.image_size),
            "camera_matrix": self.k.round(6).tolist(),
            "rotation": self.r.round(9).tolist(),
            "rvec": rvec.ravel().round(9).tolist(),
            "tvec_mm": self.t.round(6).tolist(),
            "center_mm": self.center_mm.round(4).tolist(),
            "dist_coeffs": self.dist.round(9).tolist(),
            "homography": self.homography.round(10).tolist(),
        }


def distort_normalized(norm: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """OpenCV's radial-tangential model applied to normalised image coordinates (N, 2)."""
    k1, k2, p1, p2, k3 = (list(np.ravel(dist)) + [0.0] * 5)[:5]
    x, y = norm[:, 0], norm[:, 1]
    r2 = x * x + y * y
    radial = 1 + k1 * r2 + k2 * r2 * r2 + k3 * r2 * r2 * r2
    xd = x * radial + 2 * p1 * x * y + p2 * (r2 + 2 * x * x)
    yd = y * radial + p1 * (r2 + 2 * y * y) + 2 * p2 * x * y
    return np.column_stack([xd, yd])


def look_at(center: np.ndarray, target: np.ndarray, up_hint: np.ndarray, roll_rad: float) -> tuple[np.ndarray, np.ndarray]:
    """Rotation and translation of a camera at ``center`` looking at ``target``; ``up_hint`` points up in the image."""
    z = target - center
    z = z / np.linalg.norm(z)
    up = up_hint - np.dot(up_hint, z) * z
    if np.linalg.norm(up) < 1e-9:
        up = np.array([0.0, 1.0, 0.0]) - z[1] * z
    y = -up / np.linalg.norm(up)
    x = np.cross(y, z)
    c, s = np.cos(roll_rad), np.sin(roll_rad)
    x, y = c * x + s * y, -s * x + c * y
    r = np.vstack([x, y, z])
    return r, -r @ center


def random_camera(rng: np.random.Generator, board: Board, cfg: dict, image_size=(1280, 720)) -> Camera:
    """A phone-like camera: overhead to ``tilt_deg`` oblique, any heading, the whole board in frame (and
    ``frame_margin_mm`` of the table around it)."""
    w, h = image_size
    width, length = board.size_mm
    hfov = np.radians(rng.uniform(*cfg["hfov_deg"]))
    f = (w / 2) / np.tan(hfov / 2)
    aspect = rng.uniform(0.998, 1.002)
    k = np.array([[f, 0, w / 2 + rng.normal(0, 6)], [0, f * aspect, h / 2 + rng.normal(0, 6)], [0, 0, 1.0]])
    tilt = np.radians(rng.uniform(*cfg["tilt_deg"]))
    heading = rng.uniform(0, 2 * np.pi)
    roll = np.radians(rng.normal(0, cfg["roll_sigma_deg"]))
    target = np.array([width / 2 + rng.normal(0, 15), length / 2 + rng.normal(0, 40), 0.0])
    look = np.array([np.cos(heading), np.sin(heading), 0.0])
    if rng.random() < cfg["strong_distortion_p"]:
        dist = np.array([rng.uniform(-0.25, 0.15), rng.uniform(-0.1, 0.1), rng.normal(0, 0.002), rng.normal(0, 0.002), 0.0])
    else:
        dist = np.array([rng.normal(0, 0.03), rng.normal(0, 0.02), 0.0, 0.0, 0.0])
    if rng.random() < cfg["no_distortion_p"]:
        dist = np.zeros(5)
    a = float(cfg.get("frame_margin_mm", 0.0))  # the table this far around the board is framed too
    corners = np.array([[-a, -a, 0], [width + a, -a, 0], [width + a, length + a, 0], [-a, length + a, 0]],
                       dtype=np.float64)
    fill = rng.uniform(*cfg["board_fill"])
    up = np.array([0, 0, 1.0])
    d = 1500.0
    for _ in range(6):
        r, t = look_at(target - d * np.sin(tilt) * look + d * np.cos(tilt) * up, target, look, roll)
        px = Camera(k=k, r=r, t=t, dist=dist, image_size=(w, h)).project(corners, distort=False)
        span = max(np.ptp(px[:, 0]) / w, np.ptp(px[:, 1]) / h)
        d *= span / fill
    for _ in range(40):  # back off until every corner is inside the frame
        r, t = look_at(target - d * np.sin(tilt) * look + d * np.cos(tilt) * up, target, look, roll)
        cam = Camera(k=k, r=r, t=t, dist=dist, image_size=(w, h))
        px = cam.project(corners)
        if px.min() >= 6 and (px[:, 0] <= w - 6).all() and (px[:, 1] <= h - 6).all():
            break
        d *= 1.04
    return cam


def distortion_maps(camera: Camera) -> tuple[np.ndarray, np.ndarray] | None:
    """cv2.remap maps turning an undistorted render into what the lens would see (None if no distortion).

    For every distorted output pixel the lens model is inverted to find its undistorted source. The
    displacement field is smooth, so it is solved on a coarse grid and interpolated up.
    """
    if not camera.has_distortion:
        return None
    w, h = camera.image_size
    step = 8
    gw, gh = -(-w // step), -(-h // step)
    # grid samples at the pixel centres cv2.resize assumes: x = (i + 0.5) * step - 0.5
    gy, gx = (np.mgrid[0:gh, 0:gw].astype(np.float64) + 0.5) * step - 0.5
    pts = np.stack([gx.ravel(), gy.ravel()], axis=1).reshape(-1, 1, 2)
    und = cv2.undistortPoints(pts, camera.k, camera.dist, R=None, P=camera.k,
                              criteria=(cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 40, 1e-8)).reshape(gh, gw, 2)
    disp = (und - np.stack([gx, gy], axis=-1)).astype(np.float32)
    disp = cv2.resize(disp, (gw * step, gh * step), interpolation=cv2.INTER_LINEAR)[:h, :w]
    ix, iy = _identity(w, h)
    return ix + disp[..., 0], iy + disp[..., 1]


_IDENTITY: dict = {}


def _identity(w: int, h: int) -> tuple[np.ndarray, np.ndarray]:
    if (w, h) not in _IDENTITY:
        iy, ix = np.mgrid[0:h, 0:w].astype(np.float32)
        _IDENTITY[(w, h)] = (ix, iy)
    return _IDENTITY[(w, h)]


@dataclass(frozen=True)
class Canvas:
    """Where a photo is rendered before the lens: an undistorted pinhole view big enough that the
    lens remap never samples outside it. ``maps`` (None without distortion) take it to the photo;
    ``footprint`` marks the canvas pixels that end up in the photo."""

    camera: Camera
    maps: tuple[np.ndarray, np.ndarray] | None
    footprint: np.ndarray | None


def canvas_for(camera: Camera, max_pad: int = 480) -> Canvas:
    """The render canvas of a camera: itself without a lens, padded where the lens pulls pixels in."""
    maps = distortion_maps(camera)
    if maps is None:
        return Canvas(camera=camera, maps=None, footprint=None)
    w, h = camera.image_size
    mx, my = maps
    pad_l = int(np.clip(np.ceil(-mx.min()) + 2, 0, max_pad))
    pad_t = int(np.clip(np.ceil(-my.min()) + 2, 0, max_pad))
    pad_r = int(np.clip(np.ceil(mx.max() - (w - 1)) + 2, 0, max_pad))
    pad_b = int(np.clip(np.ceil(my.max() - (h - 1)) + 2, 0, max_pad))
    k = camera.k.copy()
    k[0, 2] += pad_l
    k[1, 2] += pad_t
    size = (w + pad_l + pad_r, h + pad_t + pad_b)
    cam = replace(camera, k=k, dist=np.zeros(5), image_size=size)
    mx, my = mx + pad_l, my + pad_t
    # the photo's outline traced through the lens model into the canvas
    edge = np.concatenate([np.stack([mx[0, :], my[0, :]], 1), np.stack([mx[:, -1], my[:, -1]], 1),
                           np.stack([mx[-1, ::-1], my[-1, ::-1]], 1), np.stack([mx[::-1, 0], my[::-1, 0]], 1)])
    footprint = np.zeros((size[1], size[0]), np.uint8)
    cv2.fillPoly(footprint, [np.round(edge[::4] * 16).astype(np.int32)], 1, cv2.LINE_8, shift=4)
    return Canvas(camera=cam, maps=(mx, my), footprint=footprint.astype(bool))
