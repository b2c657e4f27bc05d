"""Calibration by a reference photo: one calibrated photo of the user's board registers any later one.

SIFT features on and around the board in the reference are matched into the new photo (ratio
test), a homography between the two photos is fitted with MAGSAC, and the reference's calibration
is carried over through it. Works with any board art that has texture to match.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import cv2
import numpy as np

from knockcam import settings
from knockcam.board.layout import Board
from knockcam.calibrate.calibration import Calibration, resize_matrix, working_copy
from knockcam.calibrate.quality import plausible
from knockcam.errors import KnockcamError


@dataclass(frozen=True)
class Reference:
    """A calibrated photo of the board (ideally empty) and its SIFT features on the board."""

    image: np.ndarray
    calibration: Calibration
    keypoints: np.ndarray  # (N, 2) undistorted pixels
    descriptors: np.ndarray


def _gray(image: np.ndarray) -> np.ndarray:
    return image if image.ndim == 2 else cv2.cvtColor(image[..., :3], cv2.COLOR_BGR2GRAY)


def _undistort(image: np.ndarray, calibration: Calibration | None) -> np.ndarray:
    if calibration is not None and calibration.camera_matrix is not None and calibration.dist_coeffs is not None:
        return cv2.undistort(image, calibration.camera_matrix, calibration.dist_coeffs)
    return image


def _features(gray: np.ndarray, mask: np.ndarray | None, n: int, scaled: bool = False):
    """SIFT keypoints (pixels of ``gray``) and descriptors; with ``scaled``, found on the photo scaled
    down to its working size (a 12 MP photo: 15 s for a registration at full size, 2.3 s so)."""
    size = (gray.shape[1], gray.shape[0])
    if scaled:
        gray = working_copy(gray)
    work = (gray.shape[1], gray.shape[0])
    if work != size and mask is not None:
        mask = cv2.resize(mask, work, interpolation=cv2.INTER_NEAREST)
    sift = cv2.SIFT_create(nfeatures=n)
    kps, desc = sift.detectAndCompute(gray, mask)
    if desc is None or len(kps) == 0:
        return np.zeros((0, 2)), np.zeros((0, 128), np.float32)
    pts = np.array([k.pt for k in kps], np.float64)
    if work != size:
        pts = cv2.perspectiveTransform(pts.reshape(-1, 1, 2), resize_matrix(work, size)).reshape(-1, 2)
    return pts, desc


def make_reference(image: np.ndarray, calibration: Calibration, board: Board) -> Reference:
    """Features of a calibrated photo, taken on the board and a margin around it."""
    cfg = settings.load("calibrate")["reference"]
    if (image.shape[1], image.shape[0]) != tuple(calibration.image_size):
        raise KnockcamError(f"reference photo is {image.shape[1]}x{image.shape[0]} but its calibration is for "
                            f"{calibration.image_size[0]}x{calibration.image_size[1]}: calibrate that photo again")
    und = _undistort(image, calibration)
    m = float(cfg["board_margin_mm"])
    w, l = board.size_mm
    quad = cv2.perspectiveTransform(np.array([[[-m, -m]], [[w + m, -m]], [[w + m, l + m]], [[-m, l + m]]], np.float64),
                                    calibration.homography)
    mask = np.zeros(und.shape[:2], np.uint8)
    cv2.fillPoly(mask, [np.round(quad.reshape(-1, 2)).astype(np.int32)], 255)
    kps, desc = _features(_gray(und), mask, int(cfg["features"]), scaled=True)
    if len(kps) < int(cfg["min_inliers"]):
        raise KnockcamError(f"reference photo: only {len(kps)} features on the board; use a sharper, better lit photo")
    return Reference(image=image, calibration=calibration, keypoints=kps, descriptors=desc)


def _match(ref_kps, ref_desc, kps, desc, cfg):
    """Ratio-test matches and a MAGSAC homography ref -> new, polished on its inliers; (G, src, dst, inliers) or None."""
    if len(kps) < int(cfg["min_inliers"]) or len(ref_kps) < int(cfg["min_inliers"]):
        return None
    pairs = cv2.BFMatcher(cv2.NORM_L2).knnMatch(ref_desc, desc, k=2)
    ratio = float(cfg["ratio"])
    good = [p[0] for p in pairs if len(p) == 2 and p[0].distance < ratio * p[1].distance]
    if len(good) < int(cfg["min_inliers"]):
        return None
    src = ref_kps[[g.queryIdx for g in good]]
    dst = kps[[g.trainIdx for g in good]]
    g, inl = cv2.findHomography(src, dst, cv2.USAC_MAGSAC, float(cfg["ransac_px"]), maxIters=10000, confidence=0.9999)
    if g is None or inl is None or int(inl.sum()) < int(cfg["min_inliers"]):
        return None
    inl = inl.ravel().astype(bool)
    g2, _ = cv2.findHomography(src[inl], dst[inl], 0)
    if g2 is not None and np.isfinite(g2).all():
        g = g2
    return g, src, dst, inl


def _topdown(board: Board, ppm: float) -> np.ndarray:
    """Board mm -> top-down raster pixels (far end at the top)."""
    return np.array([[ppm, 0, 0], [0, -ppm, board.size_mm[1] * ppm], [0, 0, 1.0]])


def register(image: np.ndarray, reference: Reference, board: Board, method: str = "reference") -> Calibration:
    """This photo's calibration, carried over from the reference through matched features.

    Features are matched between the photos directly; when the views differ too much for that, both
    are first rectified top-down (the new photo by the automatic outline finder, whose orientation
    and small errors the matching then corrects). error_mm is the RMS distance, in board mm, between
    where the reference and the new photo put each matched inlier point, combined with the
    reference's own error.
    """
    cfg = settings.load("calibrate")["reference"]
    ref_cal = reference.calibration
    und = _undistort(image, ref_cal)
    size = (image.shape[1], image.shape[0])
    hint = "take the photo from closer, or calibrate with --corners or --markers"
    kps, desc = _features(_gray(und), None, int(cfg["features"]) * 2, scaled=True)
    found = _match(reference.keypoints, reference.descriptors, kps, desc, cfg)
    hom = None
    if found is not None:
        g, src, dst, inl = found
        hom = g @ ref_cal.homography
        hom = hom / hom[2, 2]
        if plausible(hom, board, size):
            hom = None
        else:
            a = cv2.perspectiveTransform(src[inl].reshape(-1, 1, 2), np.linalg.inv(ref_cal.homography)).reshape(-1, 2)
            b = cv2.perspectiveTransform(dst[inl].reshape(-1, 1, 2), np.linalg.inv(hom)).reshape(-1, 2)
            how = "matched feature points"
    # the fine step: both photos rectified top-down (by the first match, or else by the outline
    # finder) look alike, so many more features match, and match precisely
    fine = _register_topdown(und, reference, board, cfg, initial=hom)
    if fine[0] is not None:
        hom, a, b, inl = fine
        how = "feature points matched top-down"
    if hom is None:
        raise KnockcamError(f"reference: the board was not recognised in this photo; {hint}")
    rms = float(np.sqrt(np.mean(np.sum((a - b) ** 2, axis=1))))
    ref_err = ref_cal.error_mm or 0.0
    hump = None
    if ref_cal.hump is not None:  # the same board, as humped as before, seen from this camera
        from knockcam.calibrate.edges import up_px

        hump = replace(ref_cal.hump, up=tuple(float(v) for v in up_px(hom / hom[2, 2], board, size)))
    return Calibration(method=method, image_size=size, homography=hom / hom[2, 2], camera_matrix=ref_cal.camera_matrix,
                       dist_coeffs=ref_cal.dist_coeffs, error_mm=float(np.hypot(rms, ref_err)),
                       error_source=f"residual: RMS of {int(inl.sum())} {how} in board mm, "
                                    f"combined with the reference's own {ref_err:.2f} mm", hump=hump)


def _register_topdown(und: np.ndarray, reference: Reference, board: Board, cfg: dict, initial=None):
    """Both photos rectified top-down (the new one by ``initial`` or the outline finder), matched, composed back."""
    from knockcam.calibrate.auto import find_outline
    from knockcam.calibrate.quality import board_corners_mm, homography_from_points

    if initial is not None:
        h_auto = initial
    else:
        try:
            outline = find_outline(und, board)
        except KnockcamError:
            return None, None, None, None
        h_auto = homography_from_points(board_corners_mm(board), outline.corners_px)
    ppm = float(cfg.get("topdown_px_per_mm", 1.5))
    t = _topdown(board, ppm)
    w, l = board.size_mm
    td_size = (int(round(w * ppm)), int(round(l * ppm)))
    ref_und = _undistort(reference.image, reference.calibration)
    td_ref = cv2.warpPerspective(ref_und, t @ np.linalg.inv(reference.calibration.homography), td_size)
    td_new = cv2.warpPerspective(und, t @ np.linalg.inv(h_auto), td_size)
    k1, d1 = _features(_gray(td_ref), None, int(cfg["features"]))
    k2, d2 = _features(_gray(td_new), None, int(cfg["features"]))
    found = _match(k1, d1, k2, d2, cfg)
    if found is None:
        return None, None, None, None
    g, src, dst, inl = found
    hom = h_auto @ np.linalg.inv(t) @ g @ t
    hom = hom / hom[2, 2]
    if plausible(hom, board, (und.shape[1], und.shape[0])):
        return None, None, None, None
    a = cv2.perspectiveTransform(src[inl].reshape(-1, 1, 2), np.linalg.inv(t)).reshape(-1, 2)
    to_mm = np.linalg.inv(hom) @ h_auto @ np.linalg.inv(t)
    b = cv2.perspectiveTransform(dst[inl].reshape(-1, 1, 2), to_mm).reshape(-1, 2)
    return hom, a, b, inl


def calibrate_reference(image: np.ndarray, ref_image: np.ndarray, ref_calibration: Calibration,
                        board: Board) -> Calibration:
    """One call: features of the reference, then registration of ``image`` to it."""
    return register(image, make_reference(ref_image, ref_calibration, board), board)
