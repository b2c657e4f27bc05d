"""Sharpening a blurred photo for the automatic calibration: the blur is read off the photo itself and
undone, so that the thin printed lines the grid registers on are thin again.

A shaken phone smears every point along a short line (motion blur), a missed focus spreads it over a
disc (defocus). Both leave their mark in the photo's cepstrum (the inverse Fourier transform of the
log spectrum): a motion blur L px long at angle a puts a deep minimum L px from the centre in
direction a; a defocus of radius R a dark ring about 2R px out. Each reading gives a candidate blur,
which a Wiener filter undoes. Whether it helped is the calibration's call: a wrong reading leaves
ghosts of the printed lines, on which the grid can settle, so knockcam.calibrate.auto keeps a board
found in a sharpened photo only when most of the grid sits on a line again and its estimated error
is lower.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from knockcam import settings


@dataclass(frozen=True)
class Blur:
    """One reading of how the photo is blurred (pixels of the photo searched)."""

    kind: str  # "motion" | "defocus"
    length_px: float = 0.0  # motion: how far each point is smeared
    angle_deg: float = 0.0  # motion: its direction in the image (0 = along x, 90 = along y)
    radius_px: float = 0.0  # defocus: the blur disc's radius

    def describe(self) -> str:
        if self.kind == "motion":
            return f"a motion blur of {self.length_px:.0f} px at {self.angle_deg:.0f} deg"
        return f"a defocus blur of {self.radius_px:.1f} px radius"


def cepstrum(gray: np.ndarray) -> np.ndarray:
    """The photo's (grey, float) real cepstrum, centred: zero quefrency at (h // 2, w // 2)."""
    g = np.asarray(gray, np.float32)
    h, w = g.shape
    window = np.outer(np.hanning(h), np.hanning(w)).astype(np.float32)  # no seam where the photo wraps round
    spectrum = np.abs(np.fft.rfft2((g - g.mean()) * window))
    return np.fft.fftshift(np.fft.irfft2(np.log(spectrum + 1e-3), s=(h, w)))


def blur_readings(image: np.ndarray, cfg: dict | None = None) -> list[Blur]:
    """Candidate blurs of ``image`` (BGR or grey) from its cepstrum: the motion blur its deepest minimum
    implies (when at least ``min_motion_px`` long), and the defocus its darkest ring implies (only when
    that ring is dark at all, and the radius under ``max_defocus_px``: a motion-blurred photo can read one
    that large, and the grid settles on the ghost lines that undoing it leaves)."""
    cfg = cfg or settings.load("calibrate")["sharpen"]
    gray = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY) if image.ndim == 3 else image
    reach = int(cfg["reach_px"])
    c = cepstrum(gray)
    cy, cx = c.shape[0] // 2, c.shape[1] // 2
    near = c[cy - reach:cy + reach + 1, cx - reach:cx + reach + 1]
    yy, xx = np.mgrid[-reach:reach + 1, -reach:reach + 1]
    r = np.hypot(xx, yy)
    band = (r >= float(cfg["min_px"])) & (r <= reach)
    # JPEG's 8 x 8 blocks repeat every 8 px: the cepstrum dips at points of the 8 px lattice (chiefly
    # along the axes) in any JPEG photo, blurred or not; readings near any lattice point are not taken
    block = int(cfg["jpeg_block_px"])
    lattice = np.hypot(xx - block * np.round(xx / block), yy - block * np.round(yy / block))
    band &= lattice > float(cfg["jpeg_mask_px"])
    values = np.where(band, near, np.inf)
    y, x = np.unravel_index(int(np.argmin(values)), values.shape)
    dx, dy = float(x - reach), float(y - reach)
    length = float(np.hypot(dx, dy))
    out = []
    if length >= float(cfg["min_motion_px"]):  # shorter: hardly a blur, more likely the photo's texture
        out.append(Blur("motion", length_px=length, angle_deg=float(np.degrees(np.arctan2(dy, dx)) % 180.0)))
    radii = np.arange(int(np.ceil(float(cfg["min_px"]))), reach)
    ring = np.array([near[band & (np.abs(r - k) < 0.5)].mean() for k in radii])
    darkest = int(np.argmin(ring))
    radius = float(radii[darkest]) / 2.0  # a disc blur's first dark ring lies about twice its radius out
    if ring[darkest] < 0 and radius < float(cfg["max_defocus_px"]):
        out.append(Blur("defocus", radius_px=radius))
    return out


def kernel(blur: Blur, cfg: dict | None = None) -> np.ndarray:
    """The blur's point spread function (float32, odd square, sums to 1), with the photo's own mild
    softness (``soft_sigma_px``) added; a motion blur's reading is shortened by ``motion_shorten_px``,
    since that softness lengthens the cepstrum's reading of it."""
    cfg = cfg or settings.load("calibrate")["sharpen"]
    size = 2 * int(cfg["reach_px"]) + 1
    k = np.zeros((size, size), np.float32)
    c = size // 2
    if blur.kind == "motion":
        half = max(0.0, blur.length_px - float(cfg["motion_shorten_px"])) / 2.0
        a = np.radians(blur.angle_deg)
        dx, dy = half * np.cos(a), half * np.sin(a)
        cv2.line(k, (int(round(c - dx)), int(round(c - dy))), (int(round(c + dx)), int(round(c + dy))), 1.0, 1,
                 cv2.LINE_AA)
    else:
        cv2.circle(k, (c, c), max(1, int(round(blur.radius_px))), 1.0, -1, cv2.LINE_AA)
    k = cv2.GaussianBlur(k, (0, 0), float(cfg["soft_sigma_px"]))
    return k / k.sum()


def sharpened(image: np.ndarray, blur: Blur, cfg: dict | None = None) -> np.ndarray:
    """``image`` (uint8) with ``blur`` undone by a Wiener filter (noise-to-signal ``noise_to_signal``);
    the photo is mirrored at its borders first so that the filter does not ring there."""
    cfg = cfg or settings.load("calibrate")["sharpen"]
    k = kernel(blur, cfg)
    pad = k.shape[0]
    src = cv2.copyMakeBorder(image, pad, pad, pad, pad, cv2.BORDER_REFLECT).astype(np.float32)
    h, w = src.shape[:2]
    psf = np.zeros((h, w), np.float32)
    psf[:k.shape[0], :k.shape[1]] = k
    psf = np.roll(psf, (-(k.shape[0] // 2), -(k.shape[1] // 2)), axis=(0, 1))  # centred on pixel (0, 0)
    f = np.fft.rfft2(psf)
    wiener = np.conj(f) / (np.abs(f) ** 2 + float(cfg["noise_to_signal"]))
    channels = src.reshape(h, w, -1)
    out = np.stack([np.fft.irfft2(np.fft.rfft2(channels[..., i]) * wiener, s=(h, w)) for i in range(channels.shape[2])],
                   axis=2)
    out = np.clip(out[pad:-pad, pad:-pad], 0, 255).astype(np.uint8)
    return out.reshape(image.shape)
