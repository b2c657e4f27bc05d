"""Board checks beyond the file's shape: ids, required kinds, bonuses, polygon geometry.

Pure Python (like layout.py) so the rules engine can load a board without numpy. Each check
raises a KnockcamError naming the file, the space id and the field, saying what to fix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from knockcam.errors import KnockcamError

if TYPE_CHECKING:
    from knockcam.board.layout import Board, Point

REQUIRED_KINDS = ("property", "railroad", "chance", "house", "luxury_tax", "free_parking", "go_to_jail")

EDGE_TOLERANCE_MM = 1e-6  # points this close to the board edge count as on it
OVERLAP_TOLERANCE_MM2 = 1.0  # shared edges overlap by 0 mm²; hand-measured files get 1 mm² of slack


def validate_board(board: "Board") -> None:
    """Raise KnockcamError (file, space id, field) for the first thing wrong with the board."""
    src = board.source or board.name
    width, length = board.size_mm
    if not (width > 0 and length > 0):
        raise KnockcamError(f"{src}: size_mm must be two positive lengths in mm, not {list(board.size_mm)}")
    if not (board.token.base_diameter_mm > 0 and board.token.height_mm > 0):
        raise KnockcamError(f"{src}: token: base_diameter_mm and height_mm must be positive")
    if not 0 <= board.go_line_y_mm <= length:
        raise KnockcamError(f"{src}: go_line_y_mm {board.go_line_y_mm:g} is outside the board (0..{length:g} mm)")
    seen = set()
    for space in board.spaces:
        if space.id in seen:
            raise KnockcamError(f"{src}: space {space.id!r}: duplicate id (each space needs its own id)")
        seen.add(space.id)
    for kind in REQUIRED_KINDS:
        if not board.of_kind(kind):
            raise KnockcamError(f"{src}: no space of kind {kind!r}; the rules need one")
    for space in board.properties:
        if space.color_set not in board.set_bonus:
            raise KnockcamError(f"{src}: space {space.id!r}: color_set {space.color_set!r} has no entry in set_bonus")
    for space in board.spaces:
        _check_polygon(src, space.id, space.polygon, width, length)
    _check_overlaps(board, src)


def polygon_area(polygon) -> float:
    """Signed shoelace area in mm² (positive when counter-clockwise)."""
    n = len(polygon)
    return 0.5 * sum(polygon[i][0] * polygon[(i + 1) % n][1] - polygon[(i + 1) % n][0] * polygon[i][1]
                     for i in range(n))


def _fmt(point: "Point") -> str:
    return f"({point[0]:g}, {point[1]:g})"


def _check_polygon(src: str, sid: str, polygon, width: float, length: float) -> None:
    where = f"{src}: space {sid!r}: polygon"
    for point in polygon:
        x, y = point
        if not (-EDGE_TOLERANCE_MM <= x <= width + EDGE_TOLERANCE_MM
                and -EDGE_TOLERANCE_MM <= y <= length + EDGE_TOLERANCE_MM):
            raise KnockcamError(f"{where}: point {_fmt(point)} is outside the board "
                                f"(x 0..{width:g}, y 0..{length:g} mm)")
    n = len(polygon)
    for i in range(n):
        if polygon[i] == polygon[(i + 1) % n]:
            raise KnockcamError(f"{where}: not simple: point {_fmt(polygon[i])} is repeated (remove one)")
    for i in range(n):
        a, b = polygon[i], polygon[(i + 1) % n]
        for j in range(i + 1, n):
            c, d = polygon[j], polygon[(j + 1) % n]
            adjacent = j == i + 1 or (i == 0 and j == n - 1)
            if adjacent:
                # Neighbouring edges share one point; they must not fold back along each other.
                shared, other_ab, other_cd = (b, a, d) if j == i + 1 else (a, b, c)
                if _orient(shared, other_ab, other_cd) == 0 and _dot(other_ab, shared, other_cd) > 0:
                    raise KnockcamError(f"{where}: not simple: edges {i} and {j} fold back on each other "
                                        f"at {_fmt(shared)}")
            elif _segments_touch(a, b, c, d):
                raise KnockcamError(f"{where}: not simple: edge {_fmt(a)}-{_fmt(b)} crosses or touches "
                                    f"edge {_fmt(c)}-{_fmt(d)} (list the corners in order around the space)")
    if abs(polygon_area(polygon)) < 1e-9:
        raise KnockcamError(f"{where}: not simple: its points enclose no area")


def _orient(a, b, c) -> int:
    """Sign of the turn a -> b -> c (+1 left, -1 right, 0 collinear)."""
    v = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
    return (v > 1e-9) - (v < -1e-9)


def _dot(p, origin, q) -> float:
    return (p[0] - origin[0]) * (q[0] - origin[0]) + (p[1] - origin[1]) * (q[1] - origin[1])


def _on_segment(a, b, p) -> bool:
    return (min(a[0], b[0]) - 1e-12 <= p[0] <= max(a[0], b[0]) + 1e-12
            and min(a[1], b[1]) - 1e-12 <= p[1] <= max(a[1], b[1]) + 1e-12)


def _segments_touch(a, b, c, d) -> bool:
    """Whether closed segments ab and cd share any point."""
    o1, o2, o3, o4 = _orient(a, b, c), _orient(a, b, d), _orient(c, d, a), _orient(c, d, b)
    if o1 != o2 and o3 != o4 and 0 not in (o1, o2, o3, o4):
        return True
    return ((o1 == 0 and _on_segment(a, b, c)) or (o2 == 0 and _on_segment(a, b, d))
            or (o3 == 0 and _on_segment(c, d, a)) or (o4 == 0 and _on_segment(c, d, b)))


def _check_overlaps(board: "Board", src: str) -> None:
    spaces = board.spaces
    boxes = [(min(x for x, _ in s.polygon), min(y for _, y in s.polygon),
              max(x for x, _ in s.polygon), max(y for _, y in s.polygon)) for s in spaces]
    for i, first in enumerate(spaces):
        for j in range(i + 1, len(spaces)):
            a, b = boxes[i], boxes[j]
            if a[0] >= b[2] or b[0] >= a[2] or a[1] >= b[3] or b[1] >= a[3]:
                continue
            area = overlap_area(first.polygon, spaces[j].polygon)
            if area > OVERLAP_TOLERANCE_MM2:
                raise KnockcamError(f"{src}: space {first.id!r}: polygon overlaps space {spaces[j].id!r} by "
                                    f"{area:.0f} mm² (neighbouring spaces may share an edge, not cover each other)")


def overlap_area(first, second) -> float:
    """Area (mm²) common to two simple polygons, by Green's theorem on their clipped outlines.

    Each outline is cut where it meets the other; a piece inside the other polygon counts, a
    piece along the other's outline counts once if both run the same way (a shared edge with
    opposite directions -- two neighbours -- adds nothing).
    """
    a = _ccw(first)
    b = _ccw(second)
    total = 0.0
    for poly, other, count_shared in ((a, b, True), (b, a, False)):
        for start, end in _pieces(poly, other):
            mid = ((start[0] + end[0]) / 2, (start[1] + end[1]) / 2)
            where = _locate(other, mid, start, end)
            if where == "inside" or (where == "same" and count_shared):
                total += 0.5 * (start[0] * end[1] - end[0] * start[1])
    return max(total, 0.0)


def _ccw(polygon) -> list:
    points = [tuple(p) for p in polygon]
    return points if polygon_area(points) >= 0 else points[::-1]


def _pieces(poly, other):
    """The edges of ``poly`` cut at every point where they meet an edge of ``other``."""
    n, m = len(poly), len(other)
    for i in range(n):
        a, b = poly[i], poly[(i + 1) % n]
        dx, dy = b[0] - a[0], b[1] - a[1]
        length2 = dx * dx + dy * dy
        cuts = {0.0, 1.0}
        for k in range(m):
            c, d = other[k], other[(k + 1) % m]
            for p in (c, d):  # the other's corners lying on this edge
                if _orient(a, b, p) == 0 and _on_segment(a, b, p):
                    cuts.add(((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / length2)
            ex, ey = d[0] - c[0], d[1] - c[1]
            denom = dx * ey - dy * ex
            if abs(denom) > 1e-12:
                t = ((c[0] - a[0]) * ey - (c[1] - a[1]) * ex) / denom
                u = ((c[0] - a[0]) * dy - (c[1] - a[1]) * dx) / denom
                if 0 < t < 1 and 0 <= u <= 1:
                    cuts.add(t)
        ts = sorted(t for t in cuts if 0 <= t <= 1)
        for t0, t1 in zip(ts, ts[1:]):
            if t1 - t0 > 1e-12:
                yield (a[0] + t0 * dx, a[1] + t0 * dy), (a[0] + t1 * dx, a[1] + t1 * dy)


def _locate(poly, point, start, end) -> str:
    """'inside', 'outside', or, for a piece lying along poly's outline, 'same' / 'opposite' direction."""
    n = len(poly)
    for k in range(n):
        c, d = poly[k], poly[(k + 1) % n]
        if _orient(c, d, start) == 0 and _orient(c, d, end) == 0 and _on_segment(c, d, point):
            same = (d[0] - c[0]) * (end[0] - start[0]) + (d[1] - c[1]) * (end[1] - start[1]) > 0
            return "same" if same else "opposite"
    inside = False
    x, y = point
    for k in range(n):
        (x1, y1), (x2, y2) = poly[k], poly[(k + 1) % n]
        if (y1 > y) != (y2 > y) and x < x1 + (y - y1) * (x2 - x1) / (y2 - y1):
            inside = not inside
    return "inside" if inside else "outside"
