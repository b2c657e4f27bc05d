"""3-D tokens: a round base with a figure on top (cat, car, top hat, dog) as small quad meshes.

Meshes are built once per shape in a unit frame (base centre at the origin, z up, millimetres for
the board's TokenSize) and posed per token; the scene projects, shades and paints them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from knockcam.board.layout import TokenSize

# Plastic colours (BGR) of the four sides; each token jitters its own.
PLASTIC_BGR = {"red": (45, 40, 205), "yellow": (35, 205, 245), "green": (65, 165, 45), "blue": (200, 95, 30)}


@dataclass(frozen=True)
class Mesh:
    """Vertices (V, 3) and quad faces (F, 4) as vertex indices; triangles repeat their last index."""

    verts: np.ndarray
    faces: np.ndarray

    def posed(self, rotation: np.ndarray, translation) -> "Mesh":
        return Mesh(self.verts @ rotation.T + np.asarray(translation, dtype=np.float64), self.faces)


def _merge(meshes: list[Mesh]) -> Mesh:
    verts, faces, off = [], [], 0
    for m in meshes:
        verts.append(m.verts)
        faces.append(m.faces + off)
        off += len(m.verts)
    return Mesh(np.vstack(verts), np.vstack(faces))


def ellipsoid(center, radii, nu: int = 12, nv: int = 7) -> Mesh:
    """A lat-long ellipsoid: outward-wound quads, poles as repeated vertices."""
    th = np.linspace(0, np.pi, nv + 1)
    ph = np.linspace(0, 2 * np.pi, nu + 1)[:-1]
    t, p = np.meshgrid(th, ph, indexing="ij")
    pts = np.stack([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)], axis=-1).reshape(-1, 3)
    verts = pts * np.asarray(radii, dtype=np.float64) + np.asarray(center, dtype=np.float64)
    faces = []
    for i in range(nv):
        for j in range(nu):
            a, b = i * nu + j, i * nu + (j + 1) % nu
            c, d = (i + 1) * nu + (j + 1) % nu, (i + 1) * nu + j
            faces.append((a, d, c, b))
    return Mesh(verts, np.array(faces))


def cylinder(center_bottom, r_bottom: float, r_top: float, height: float, n: int = 16,
             top: bool = True, bottom: bool = False) -> Mesh:
    """A (possibly tapered) z-axis cylinder with optional caps."""
    ang = np.linspace(0, 2 * np.pi, n + 1)[:-1]
    ring = np.stack([np.cos(ang), np.sin(ang), np.zeros(n)], axis=1)
    lo = ring * [r_bottom, r_bottom, 0]
    hi = ring * [r_top, r_top, 0] + [0, 0, height]
    verts = [lo, hi, np.array([[0, 0, 0.0], [0, 0, height]])]
    faces = [(j, (j + 1) % n, n + (j + 1) % n, n + j) for j in range(n)]
    if top:
        faces += [(2 * n + 1, n + j, n + (j + 1) % n, n + (j + 1) % n) for j in range(n)]
    if bottom:
        faces += [(2 * n, (j + 1) % n, j, j) for j in range(n)]
    return Mesh(np.vstack(verts) + np.asarray(center_bottom, dtype=np.float64), np.array(faces))


def box(center, size) -> Mesh:
    """An axis-aligned box, outward-wound."""
    sx, sy, sz = np.asarray(size, dtype=np.float64) / 2
    v = np.array([[-sx, -sy, -sz], [sx, -sy, -sz], [sx, sy, -sz], [-sx, sy, -sz],
                  [-sx, -sy, sz], [sx, -sy, sz], [sx, sy, sz], [-sx, sy, sz]]) + np.asarray(center, dtype=np.float64)
    faces = np.array([(0, 3, 2, 1), (4, 5, 6, 7), (0, 1, 5, 4), (2, 3, 7, 6), (1, 2, 6, 5), (3, 0, 4, 7)])
    return Mesh(v, faces)


def _rot_x(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def _rot_y(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def rot_z(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


@lru_cache(maxsize=16)
def token_mesh(shape: str, base_diameter_mm: float, height_mm: float) -> Mesh:
    """The figure on its base, designed at 25 mm x 28 mm and scaled to the board's token size."""
    r = 12.5
    hb = 4.5  # base thickness
    parts = [cylinder((0, 0, 0), r, r * 0.96, hb, n=20)]
    if shape == "cat":  # sitting cat: body, head, ears, tail
        parts += [ellipsoid((0, -1.0, hb + 7.5), (6.0, 6.5, 8.0)),
                  ellipsoid((0, 1.5, hb + 17.5), (4.8, 4.5, 4.6), nu=10, nv=6),
                  cylinder((-2.6, 1.5, hb + 20.5), 1.8, 0.2, 4.0, n=5),
                  cylinder((2.6, 1.5, hb + 20.5), 1.8, 0.2, 4.0, n=5),
                  ellipsoid((4.5, -5.5, hb + 2.5), (2.0, 4.5, 1.8), nu=6, nv=4)]
    elif shape == "car":  # vintage roadster: body, cabin, wheels
        parts += [box((0, 0, hb + 5.5), (11.0, 21.0, 5.0)),
                  box((0, -2.5, hb + 10.0), (9.0, 8.5, 4.5)),
                  ellipsoid((0, 6.0, hb + 7.5), (5.0, 4.5, 2.0), nu=8, nv=4)]
        for wx in (-5.8, 5.8):
            for wy in (-6.5, 6.5):
                wheel = cylinder((0, 0, -1.2), 3.0, 3.0, 2.4, n=10, top=True, bottom=True)
                parts.append(wheel.posed(_rot_y(np.pi / 2), (wx, wy, hb + 3.0)))
    elif shape == "top_hat":  # brim and crown
        parts += [cylinder((0, 0, hb), 10.5, 10.5, 1.6, n=20),
                  cylinder((0, 0, hb + 1.6), 6.8, 7.2, 17.5, n=16),
                  cylinder((0, 0, hb + 4.0), 7.1, 7.1, 2.2, n=16, top=False)]
    elif shape == "dog":  # standing terrier: legs, body, head, snout, ears, tail
        for lx in (-2.8, 2.8):
            for ly in (-5.5, 5.0):
                parts.append(cylinder((lx, ly, hb), 1.8, 1.6, 8.0, n=6, top=False))
        parts += [ellipsoid((0, 0, hb + 11.0), (4.6, 9.5, 4.6)),
                  ellipsoid((0, 8.5, hb + 17.0), (3.8, 4.2, 4.2), nu=10, nv=6),
                  ellipsoid((0, 12.0, hb + 15.5), (2.2, 3.0, 2.0), nu=6, nv=4),
                  cylinder((-2.0, 7.5, hb + 20.0), 1.5, 0.2, 3.5, n=5),
                  cylinder((2.0, 7.5, hb + 20.0), 1.5, 0.2, 3.5, n=5),
                  cylinder((0, -8.5, hb + 13.0), 1.0, 0.5, 6.0, n=5).posed(_rot_x(-0.5), (0, 0, 0))]
    else:
        raise ValueError(f"unknown token shape {shape!r}")
    mesh = _merge(parts)
    sx = base_diameter_mm / 25.0
    sz = height_mm / 28.0
    return Mesh(mesh.verts * [sx, sx, sz], mesh.faces)


def pose_token(shape: str, token: TokenSize, xy_mm, yaw: float, fallen_dir: float | None) -> tuple[Mesh, np.ndarray]:
    """The token's mesh in board mm and its base centre (x, y, z).

    A fallen token lies on its side, rolled over in direction ``fallen_dir`` about its base rim;
    its base centre is then the centre of the (now upright) base disc.
    """
    mesh = token_mesh(shape, token.base_diameter_mm, token.height_mm)
    rot = rot_z(yaw)
    if fallen_dir is None:
        return mesh.posed(rot, (xy_mm[0], xy_mm[1], 0.0)), np.array([xy_mm[0], xy_mm[1], 0.0])
    # roll over about the horizontal axis across ``fallen_dir`` (the top goes that way), then drop onto the board
    tip = rot_z(fallen_dir) @ _rot_y(np.pi / 2 - 0.12) @ rot_z(-fallen_dir)
    full = tip @ rot
    v = mesh.verts @ full.T
    lift = -v[:, 2].min()
    offset = np.array([xy_mm[0], xy_mm[1], lift])
    return Mesh(v + offset, mesh.faces), offset.copy()


@dataclass(frozen=True)
class Solid:
    """Something 3-D the scene paints: a mesh, its plastic/skin colour (BGR) and shininess.

    ``face_colours`` (F, 3) overrides ``colour`` per face (a cup's coffee, a hand's sleeve).
    """

    mesh: Mesh
    colour: tuple[float, float, float]
    shine: float = 0.3
    face_colours: np.ndarray | None = None


def merge_solids(parts: list[tuple[Mesh, tuple[float, float, float]]], shine: float) -> Solid:
    """One solid from several coloured meshes (painted as one object)."""
    mesh = _merge([m for m, _ in parts])
    cols = np.vstack([np.tile(np.asarray(c, dtype=np.float64), (len(m.faces), 1)) for m, c in parts])
    return Solid(mesh=mesh, colour=tuple(float(v) for v in cols[0]), shine=shine, face_colours=cols)


def flipped(mesh: Mesh) -> Mesh:
    """The same surface seen from the inside (faces wound the other way)."""
    return Mesh(mesh.verts, mesh.faces[:, ::-1].copy())


def rot_y(a: float) -> np.ndarray:
    return _rot_y(a)
