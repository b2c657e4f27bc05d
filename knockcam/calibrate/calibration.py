"""The Calibration value: board millimetres <-> image pixels, with optional lens distortion.

``homography`` maps board millimetres to *undistorted* pixels; with ``camera_matrix`` and
``dist_coeffs`` set, points are distorted after it (and undistorted before its inverse). A board
that does not lie flat (``hump``) lifts its printed face, and what rests on it, towards the camera.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field, replace
from pathlib import Path

import cv2
import numpy as np
import yaml

from knockcam.errors import KnockcamError
from knockcam.files import parse_json_or_yaml, write_atomic


_MOST_HUMP_MM = 100.0  # a hump file's along_mm / across_mm beyond this is no board's (the fit's own bound is far below)


def _keeps_the_frame(camera_matrix: np.ndarray, dist_coeffs: np.ndarray, image_size: tuple[int, int]) -> bool:
    """Whether a lens keeps the image's corners and edge middles near the image: the rays through them, distorted,
    land within the image widened by its own size on every side. A real lens bends them by a fraction of that;
    an edited file's coefficients can throw them anywhere, and every later step with them."""
    w, h = image_size
    seen = _distorted(np.array([(x, y) for x in (0.0, w / 2, w) for y in (0.0, h / 2, h)]), camera_matrix, dist_coeffs)
    return bool(np.isfinite(seen).all() and np.all((seen > -np.array([w, h])) & (seen < 2 * np.array([w, h]))))


def _distorted(px: np.ndarray, camera_matrix: np.ndarray, dist_coeffs: np.ndarray) -> np.ndarray:
    """(N, 2) undistorted pixels -> (N, 2) where the lens shows them."""
    k = camera_matrix
    norm = (px - k[:2, 2]) / np.array([k[0, 0], k[1, 1]])
    obj = np.hstack([norm, np.ones((len(norm), 1))])
    return cv2.projectPoints(obj, np.zeros(3), np.zeros(3), k, dist_coeffs)[0].reshape(-1, 2)


def _number(value, digits: int, exact: bool) -> float:
    """``value`` as a calibration file writes it (rounded to ``digits``), or ``exact`` (the calibration cache)."""
    return float(value) if exact else round(float(value), digits)


@dataclass(frozen=True)
class Hump:
    """A board whose face is not flat: it rises ``along_mm`` at the middle of its length (a half sine,
    zero at both ends, where the corners are) and ``across_mm`` more along its middle line.

    ``up`` is the image of a 1 mm step up from the board, homogeneous and on the scale of the
    calibration's homography: a board point (x, y) at height z is seen at H (x, y, 1) + z up. Seen
    obliquely, a few mm of hump move a token by as much as a space's margin.
    """

    along_mm: float
    across_mm: float
    board_size_mm: tuple[float, float]  # (width, length): where the hump is zero
    up: tuple[float, float, float]

    def height_mm(self, points_mm) -> np.ndarray:
        """Height of the printed face above the corners' plane at board points (N, 2)."""
        pts = np.asarray(points_mm, dtype=np.float64).reshape(-1, 2)
        width, length = self.board_size_mm
        u = np.clip(pts[:, 0] / width, 0, 1)
        v = np.clip(pts[:, 1] / length, 0, 1)
        return np.sin(np.pi * v) * (self.along_mm + self.across_mm * np.sin(np.pi * u))

    def to_dict(self, exact: bool = False) -> dict:
        """As a calibration file writes it (rounded), or ``exact``."""
        return {"along_mm": _number(self.along_mm, 4, exact), "across_mm": _number(self.across_mm, 4, exact),
                "board_size_mm": [float(v) for v in self.board_size_mm],
                "up": [_number(v, 12, exact) for v in self.up]}

    @classmethod
    def from_dict(cls, data: dict) -> "Hump":
        up = tuple(float(v) for v in data["up"])
        size = tuple(float(v) for v in data["board_size_mm"])
        if len(up) != 3 or len(size) != 2 or min(size) <= 0 or not np.isfinite(up).all():
            raise ValueError("hump needs up (3 numbers) and board_size_mm (2 positive numbers)")
        along, across = float(data["along_mm"]), float(data["across_mm"])
        if not (abs(along) <= _MOST_HUMP_MM and abs(across) <= _MOST_HUMP_MM):
            raise ValueError(f"the hump's along_mm and across_mm must be numbers of mm, at most {_MOST_HUMP_MM:.0f}")
        return cls(along, across, size, up)

    def lifts_sensibly(self, homography: np.ndarray) -> bool:
        """Whether ``up`` is a 1 mm step up from the board under ``homography``: it moves each board corner by
        less than 5 mm of the board's own image there (a camera a few board lengths away: a fraction of 1 mm)."""
        width, length = self.board_size_mm
        corners = np.array([(0.0, 0.0), (width, 0.0), (width, length), (0.0, length)])

        def seen(points, lift=0.0):
            homog = np.column_stack([points, np.ones(len(points))]) @ homography.T + lift * np.asarray(self.up)
            return homog[:, :2] / homog[:, 2:3]

        with np.errstate(all="ignore"):
            at = seen(corners)
            step = np.hypot(*(seen(corners, 1.0) - at).T)
            mm = np.hypot(*(seen(corners + (1.0, 0.0)) - at).T)
        return bool(np.isfinite(step).all() and np.isfinite(mm).all() and np.all(step < 5.0 * mm))


def resize_matrix(from_size: tuple[int, int], to_size: tuple[int, int]) -> np.ndarray:
    """Pixels of an image of ``from_size`` (width, height) -> pixels of it resized to ``to_size``
    (cv2.resize: pixel centres at +0.5)."""
    sx, sy = to_size[0] / from_size[0], to_size[1] / from_size[1]
    return np.array([[sx, 0.0, 0.5 * sx - 0.5], [0.0, sy, 0.5 * sy - 0.5], [0.0, 0.0, 1.0]])


def unscaled_px(points, scale: float) -> np.ndarray:
    """Pixel positions found in an image resized by ``scale`` (cv2.resize: pixel centres at +0.5), in the
    pixels of the image as it was: ``resize_matrix`` undone."""
    return (np.asarray(points, np.float64) + 0.5) / scale - 0.5


def tuned_px() -> int:
    """The long side (px) of the photos the automatic method is tuned on (calibrate.yaml photo.max_px): a
    larger photo is searched scaled down to it; in a smaller one the board is found less often."""
    from knockcam import settings

    return int(settings.load("calibrate")["photo"]["max_px"])


def smaller_than_tuned(size: tuple[int, int]) -> bool:
    """Whether a photo of ``size`` (width, height) is under ``tuned_px`` across: its refusal says to take it
    larger, and no --max-error is offered for it (knockcam.calibrate.choose)."""
    return max(size) < tuned_px()


def working_size(size: tuple[int, int], max_px: int | None = None) -> tuple[int, int]:
    """The size (width, height) a photo of ``size`` is searched at: its own, or scaled down to a long
    side of ``max_px`` (default ``tuned_px``). The automatic method's pixel thresholds
    and error estimate are tuned on 1280x720 photos: on 4032x3024 renders searched at full size it
    kept boards up to 205 mm off as good."""
    if max_px is None:
        max_px = tuned_px()
    w, h = size
    if max_px <= 0 or max(w, h) <= max_px:
        return (int(w), int(h))
    s = max_px / max(w, h)
    return (max(1, int(round(w * s))), max(1, int(round(h * s))))


def working_copy(image: np.ndarray) -> np.ndarray:
    """The photo at its ``working_size``: itself when it is small enough, else scaled down (INTER_AREA)."""
    size = (int(image.shape[1]), int(image.shape[0]))
    work = working_size(size)
    return image if work == size else cv2.resize(image, work, interpolation=cv2.INTER_AREA)


@dataclass(frozen=True)
class Calibration:
    method: str  # corners | click | markers | reference | auto | truth
    image_size: tuple[int, int]  # (width, height) in pixels
    homography: np.ndarray  # 3x3, board mm -> undistorted image px
    camera_matrix: np.ndarray | None = None  # 3x3 K, when the lens is calibrated
    dist_coeffs: np.ndarray | None = None  # OpenCV distortion coefficients
    error_mm: float | None = None  # residual / estimated error in board millimetres
    error_source: str | None = None  # how error_mm was obtained (residual of N points, or an estimate from what)
    created: str = field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    hump: Hump | None = None  # the board's face is not flat (None: it is)
    grid_share: float | None = None  # where the printed grid placed the board: share of its samples on a line (0..1)
    # a saved file used as given because this photo could not check it: why (never saved; None: checked)
    unchecked: str | None = None

    def mm_to_px(self, points_mm) -> np.ndarray:
        """(N, 2) board millimetres (on the board's face) -> (N, 2) image pixels (distorted if a lens model is set)."""
        pts = np.asarray(points_mm, dtype=np.float64).reshape(-1, 2)
        hom = np.column_stack([pts, np.ones(len(pts))]) @ np.asarray(self.homography, np.float64).T
        if self.hump is not None:
            hom += self.hump.height_mm(pts)[:, None] * np.asarray(self.hump.up)[None, :]
        px = hom[:, :2] / hom[:, 2:3]
        if self.camera_matrix is not None and self.dist_coeffs is not None:
            px = _distorted(px, self.camera_matrix, self.dist_coeffs)
        return px

    def view_maps(self, view, grid_px: int = 8) -> tuple[np.ndarray, np.ndarray]:
        """``cv2.remap`` maps from a top-down raster of the board (``view``: a TopDown) to this photo's
        pixels, lens and hump included: computed every ``grid_px`` raster pixels and interpolated
        between (the lens and the hump bend slowly; every pixel exactly costs ~75 ms)."""
        w, h = view.size
        gw, gh = w // grid_px + 2, h // grid_px + 2
        gy, gx = np.mgrid[0:gh, 0:gw].astype(np.float64) * grid_px
        px = self.mm_to_px(view.to_mm(np.stack([gx.ravel(), gy.ravel()], axis=1))).astype(np.float32)
        px = px.reshape(gh, gw, 2)
        mx, my = np.meshgrid(np.arange(w, dtype=np.float32) / grid_px, np.arange(h, dtype=np.float32) / grid_px)
        return cv2.remap(px[..., 0], mx, my, cv2.INTER_LINEAR), cv2.remap(px[..., 1], mx, my, cv2.INTER_LINEAR)

    def top_down(self, image: np.ndarray, view, grid_px: int = 8) -> tuple[np.ndarray, np.ndarray]:
        """``image`` (a photo this calibration is for) seen from straight above in ``view`` (a TopDown),
        and a mask of the raster pixels that fall inside the photo."""
        map_x, map_y = self.view_maps(view, grid_px)
        h, w = image.shape[:2]
        seen = (map_x >= 0) & (map_y >= 0) & (map_x <= w - 1) & (map_y <= h - 1)
        return cv2.remap(image, map_x, map_y, cv2.INTER_LINEAR), seen

    def px_to_mm(self, points_px) -> np.ndarray:
        """(N, 2) image pixels -> (N, 2) board millimetres."""
        pts = np.asarray(points_px, dtype=np.float64).reshape(-1, 1, 2)
        if self.camera_matrix is not None and self.dist_coeffs is not None:
            pts = cv2.undistortPoints(pts, self.camera_matrix, self.dist_coeffs, P=self.camera_matrix)
        flat = cv2.perspectiveTransform(pts, np.linalg.inv(self.homography)).reshape(-1, 2)
        if self.hump is None:
            return flat
        return self._off_the_hump(pts.reshape(-1, 2), flat)

    def _off_the_hump(self, px: np.ndarray, mm: np.ndarray, iterations: int = 8) -> np.ndarray:
        """Board points (on the humped face) seen at undistorted pixels ``px``, starting from ``mm``:
        H (x, y, 1) + z(x, y) up = s (px, 1) is solved for x, y, s with z held, then z updated (the
        hump changes slowly, so a few rounds settle it far below a hundredth of a millimetre)."""
        h = np.asarray(self.homography, np.float64)
        up = np.asarray(self.hump.up, np.float64)
        pix = np.column_stack([px, np.ones(len(px))])
        for _ in range(iterations):
            z = self.hump.height_mm(mm)
            a = np.broadcast_to(np.column_stack([h[:, 0], h[:, 1]]), (len(px), 3, 2))
            a = np.concatenate([a, -pix[:, :, None]], axis=2)  # unknowns x, y, s
            b = -(h[:, 2][None, :] + z[:, None] * up[None, :])
            mm = np.linalg.solve(a, b[:, :, None])[:, :2, 0]
        return mm

    def corners_px(self, size_mm: tuple[float, float]) -> np.ndarray:
        """The board's corners in pixels: near-left, near-right, far-right, far-left."""
        w, l = size_mm
        return self.mm_to_px([(0, 0), (w, 0), (w, l), (0, l)])

    def moved(self, g: np.ndarray, **changes) -> "Calibration":
        """This calibration after the picture moved by ``g`` (undistorted pixels -> undistorted pixels:
        the camera was bumped), with ``changes`` to other fields; a hump moves with it."""
        hom = np.asarray(g, np.float64) @ np.asarray(self.homography, np.float64)
        scale = hom[2, 2]
        hump = self.hump
        if hump is not None:
            hump = replace(hump, up=tuple(float(v) for v in np.asarray(g, np.float64) @ np.asarray(hump.up) / scale))
        return replace(self, homography=hom / scale, hump=hump, **changes)

    def resized(self, image_size: tuple[int, int], **changes) -> "Calibration":
        """This calibration for the same photo resized to ``image_size`` (cv2.resize's pixel-centre
        convention): the homography, the hump and the lens's camera matrix scale with the pixels;
        the distortion coefficients, in normalised coordinates, do not change."""
        g = resize_matrix(self.image_size, image_size)
        k = None if self.camera_matrix is None else g @ np.asarray(self.camera_matrix, np.float64)
        return self.moved(g, image_size=(int(image_size[0]), int(image_size[1])), camera_matrix=k, **changes)

    def with_error(self, error_mm: float | None, error_source: str | None = None) -> "Calibration":
        return replace(self, error_mm=error_mm, error_source=error_source or self.error_source)

    # --- files -------------------------------------------------------------------------
    def to_dict(self, size_mm: tuple[float, float] | None = None, exact: bool = False) -> dict:
        """As a calibration file writes it (some numbers rounded), or ``exact`` (knockcam.calibrate.cache)."""
        homography = np.asarray(self.homography, dtype=float)
        data = {
            "method": self.method,
            "image_size": [int(v) for v in self.image_size],
            "homography": (homography if exact else homography.round(10)).tolist(),
            "camera_matrix": None if self.camera_matrix is None else np.asarray(self.camera_matrix).tolist(),
            "dist_coeffs": None if self.dist_coeffs is None else np.asarray(self.dist_coeffs).ravel().tolist(),
            "error_mm": None if self.error_mm is None else _number(self.error_mm, 3, exact),
            "error_source": self.error_source,
            "created": self.created,
            "hump": None if self.hump is None else self.hump.to_dict(exact),
            "grid_share": None if self.grid_share is None else _number(self.grid_share, 3, exact),
        }
        if size_mm is not None:
            data["corners_px"] = self.corners_px(size_mm).round(2).tolist()
        return data

    def save(self, path: str | Path, size_mm: tuple[float, float] | None = None) -> None:
        """Write the calibration as YAML, atomically (never a half-written file)."""
        write_atomic(path, yaml.safe_dump(self.to_dict(size_mm), sort_keys=False))

    @classmethod
    def load(cls, path: str | Path, lens: bool = False) -> "Calibration":
        """The calibration file at ``path``: a board's (where the board is in a camera's images), or with
        ``lens`` a lens calibration (``knockcam calibrate camera``); a one-line KnockcamError for a file that is
        not one, or is the other kind."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            made_by = "knockcam calibrate camera" if lens else "knockcam calibrate"
            raise KnockcamError(f"{'lens ' if lens else ''}calibration file not found: {path} (run '{made_by}' "
                                "first)") from None
        except IsADirectoryError:
            raise KnockcamError(f"calibration file {path} is a folder: give the .yaml file in it") from None
        except OSError as exc:
            raise KnockcamError(f"cannot read calibration file {path}: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise KnockcamError(f"{path} is not a calibration file (not text: a photo?); give the .yaml file "
                                "'knockcam calibrate' wrote") from None
        data = parse_json_or_yaml(text, path, "calibration file")
        redo = "run 'knockcam calibrate camera' again" if lens else "run 'knockcam calibrate' again"
        if not isinstance(data, dict):
            raise KnockcamError(f"{path}: not a knockcam calibration file (it holds no fields such as homography "
                                f"and image_size); {redo}")
        try:
            calibration = cls.from_dict(data)
        except KeyError as exc:
            raise KnockcamError(f"{path}: not a knockcam calibration file (no {exc.args[0]} field); {redo}") from None
        except (TypeError, ValueError, IndexError, OverflowError) as exc:  # OverflowError: an infinite image_size
            reason = str(exc).split(". ")[0]  # numpy's own explanation goes on for lines
            raise KnockcamError(f"{path}: not a knockcam calibration file ({reason}); {redo}") from None
        if lens and calibration.camera_matrix is None:
            raise KnockcamError(f"{path} holds no lens (camera_matrix): give --camera the file 'knockcam calibrate "
                                "camera' wrote")
        if not lens and calibration.method == "lens":
            raise KnockcamError(f"{path} is a lens calibration ('knockcam calibrate camera'), not where the board is: "
                                "give it as --camera to 'knockcam calibrate', and a board calibration here")
        return calibration

    @classmethod
    def from_dict(cls, data: dict) -> "Calibration":
        """The calibration a ``to_dict`` (a calibration file, a scene's truth) describes; KeyError,
        TypeError or ValueError when it does not describe one."""
        h = np.array(data["homography"], dtype=np.float64)
        if h.shape != (3, 3) or not np.isfinite(h).all() or abs(np.linalg.det(h)) < 1e-12:
            raise ValueError("homography must be an invertible 3x3 matrix")
        k = data.get("camera_matrix")
        k = None if k is None else np.array(k, dtype=np.float64).reshape(3, 3)
        if k is not None and not (np.isfinite(k).all() and k[0, 0] > 0 and k[1, 1] > 0 and k[1, 0] == 0
                                  and tuple(k[2]) == (0.0, 0.0, 1.0)):
            raise ValueError("camera_matrix must be [[fx, 0, cx], [0, fy, cy], [0, 0, 1]] with positive focal lengths")
        d = data.get("dist_coeffs")
        d = None if d is None else np.array(d, dtype=np.float64).ravel()
        if d is not None and not (np.isfinite(d).all() and len(d) in (4, 5, 8, 12, 14)):
            raise ValueError("dist_coeffs must be 4, 5, 8, 12 or 14 finite numbers")
        size = (int(data["image_size"][0]), int(data["image_size"][1]))
        if min(size) < 1:
            raise ValueError("image_size must be [width, height] in pixels")
        if k is not None and d is not None and not _keeps_the_frame(k, d, size):
            raise ValueError("dist_coeffs throw the image's own corners far off it, as no lens does")
        hump = None if data.get("hump") is None else Hump.from_dict(data["hump"])
        if hump is not None and not hump.lifts_sensibly(h):
            raise ValueError("the hump's up is no 1 mm step up from the board")
        error_mm = None if data.get("error_mm") is None else float(data["error_mm"])
        if error_mm is not None and not error_mm >= 0:
            raise ValueError("error_mm must be a number of mm, at least 0")
        return cls(
            method=str(data["method"]),
            image_size=size,
            homography=h,
            camera_matrix=k,
            dist_coeffs=d,
            error_mm=error_mm,
            error_source=None if data.get("error_source") is None else str(data["error_source"]),
            created=str(data.get("created", "")),
            hump=hump,
            grid_share=None if data.get("grid_share") is None else float(data["grid_share"]),
        )
