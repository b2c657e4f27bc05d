"""Drawing helpers: dashes have gaps, densified outlines keep their corners, text boxes stay inside the picture."""

from __future__ import annotations

import numpy as np

from knockcam.report import draw as d


def test_dashes_alternate_with_gaps():
    img = np.zeros((20, 200, 3), np.uint8)
    d.dashed(img, np.array([[0.0, 10.0], [199.0, 10.0]]), (255, 255, 255), 1, dash=10, gap=10, closed=False)
    row = img[10, :, 0] > 128
    runs = np.flatnonzero(np.diff(row.astype(int)) != 0)
    assert row[:8].all() and not row[13:18].any()  # a dash, then a gap
    assert 15 <= len(runs) <= 22  # about ten dashes over 200 px


def test_densify_keeps_the_corners_and_spacing():
    square = [(0, 0), (10, 0), (10, 10), (0, 10)]
    pts = d.densify(square, step_mm=2.5)
    assert len(pts) == 16
    for corner in square:
        assert np.min(np.linalg.norm(pts - corner, axis=1)) < 1e-9
    gaps = np.linalg.norm(np.diff(np.vstack([pts, pts[:1]]), axis=0), axis=1)
    assert np.allclose(gaps, 2.5)


def test_labels_are_kept_inside_the_picture():
    img = np.zeros((50, 300, 3), np.uint8)
    x0, y0, x1, y1 = d.label(img, "#12 100% close 3.2mm", (290, 48), 0.5)
    assert x0 >= 0 and y0 >= 0 and x1 <= 299 and y1 <= 49
    assert (img[y0:y1 + 1, x0:x1 + 1] > 0).any()


def test_as_int_clamps_wild_points():
    out = d.as_int([[np.inf, -np.inf], [np.nan, 3.4]])
    assert out.dtype == np.int32 and out.tolist() == [[100000, -100000], [-100000, 3]]


def test_mono_block_writes_on_a_fixed_grid():
    img = np.full((60, 200, 3), 255, np.uint8)
    end = d.mono_block(img, ["ab", "cd"], (0, 0), char_w=10, line_h=20, scale=1.0)
    assert end == 40
    ink = np.flatnonzero((img < 128).any(axis=(0, 2)))
    assert ink.min() < 10 and ink.max() < 20  # two characters per line, 10 px each
