"""Procedural drawings for the demo world: flags, emblems, their "photographed" views, and scenes.

Everything is drawn with PIL's non-antialiased primitives and resized with NEAREST only, so every
pixel of a shape carries exactly one palette colour.  That is what lets the tests (and users) check
that an answer such as "the emblem is green" is truly visible: the generator records the colours it
drew and the test counts pixels of that exact RGB value.  No fonts are used (font rendering differs
between PIL builds and would break byte-identical output).
"""

from __future__ import annotations

import io
import math
from typing import Any

from PIL import Image, ImageDraw

RGB = tuple[int, int, int]

#: The shared palette.  Few, well-separated colours on purpose: flags and emblems of different
#: entities reuse them, which is what makes visual hard negatives (look-alike flags) exist.
PALETTE: dict[str, RGB] = {
    "red": (200, 30, 40),
    "orange": (240, 140, 20),
    "yellow": (245, 210, 40),
    "green": (30, 140, 60),
    "blue": (30, 70, 180),
    "purple": (120, 50, 150),
    "pink": (240, 130, 180),
    "brown": (130, 80, 40),
    "black": (20, 20, 20),
    "white": (250, 250, 250),
}
# Backgrounds are deliberately outside the palette so they are never confused with an answer colour.
SKY: RGB = (186, 214, 238)
POLE: RGB = (112, 112, 112)
PARCHMENT: RGB = (236, 230, 214)
WALL: RGB = (205, 190, 160)
FRAME: RGB = (84, 62, 42)
SCENE_BG: RGB = (232, 232, 226)

FLAG_SIZE = (96, 64)
EMBLEM_SIZE = (64, 64)
VIEW_SIZE = (128, 96)
SCENE_SIZE = (128, 128)


def png_bytes(img: Image.Image) -> bytes:
    """PNG bytes with fixed settings (no metadata, fixed compression) so output is reproducible."""
    buf = io.BytesIO()
    img.save(buf, format="PNG", compress_level=6)
    return buf.getvalue()


def _regular_polygon(cx: float, cy: float, r: float, n: int, rot: float = -math.pi / 2) -> list[tuple[int, int]]:
    return [
        (round(cx + r * math.cos(rot + 2 * math.pi * i / n)), round(cy + r * math.sin(rot + 2 * math.pi * i / n)))
        for i in range(n)
    ]


def _star(cx: float, cy: float, r: float) -> list[tuple[int, int]]:
    pts = []
    for i in range(10):
        rr = r if i % 2 == 0 else r * 0.45
        a = -math.pi / 2 + math.pi * i / 5
        pts.append((round(cx + rr * math.cos(a)), round(cy + rr * math.sin(a))))
    return pts


def draw_glyph(
    d: ImageDraw.ImageDraw, kind: str, cx: float, cy: float, r: float, colour: RGB, hole: RGB | None = None
) -> None:
    """Draw one simple glyph centred on (cx, cy) with "radius" r in a single colour.

    ``hole`` is the colour used to punch the inside of a ring (the colour beneath it)."""
    box = [round(cx - r), round(cy - r), round(cx + r), round(cy + r)]
    if kind in ("circle", "disc"):
        d.ellipse(box, fill=colour)
    elif kind == "ring":
        d.ellipse(box, fill=colour)
        ri = r * 0.5
        d.ellipse([round(cx - ri), round(cy - ri), round(cx + ri), round(cy + ri)], fill=hole or SCENE_BG)
    elif kind == "square":
        s = r * 0.85
        d.rectangle([round(cx - s), round(cy - s), round(cx + s), round(cy + s)], fill=colour)
    elif kind == "triangle":
        d.polygon(_regular_polygon(cx, cy + r * 0.15, r * 1.05, 3), fill=colour)
    elif kind == "star":
        d.polygon(_star(cx, cy, r * 1.1), fill=colour)
    elif kind == "diamond":
        d.polygon(
            [
                (round(cx), round(cy - r)),
                (round(cx + r * 0.75), round(cy)),
                (round(cx), round(cy + r)),
                (round(cx - r * 0.75), round(cy)),
            ],
            fill=colour,
        )
    elif kind == "cross":
        w = r * 0.34
        d.rectangle([round(cx - w), round(cy - r), round(cx + w), round(cy + r)], fill=colour)
        d.rectangle([round(cx - r), round(cy - w), round(cx + r), round(cy + w)], fill=colour)
    elif kind == "fish":
        d.ellipse([round(cx - r * 0.75), round(cy - r * 0.5), round(cx + r * 0.75), round(cy + r * 0.5)], fill=colour)
        d.polygon(
            [
                (round(cx + r * 0.55), round(cy)),
                (round(cx + r), round(cy - r * 0.5)),
                (round(cx + r), round(cy + r * 0.5)),
            ],
            fill=colour,
        )
    elif kind == "house":
        d.rectangle([round(cx - r * 0.7), round(cy - r * 0.1), round(cx + r * 0.7), round(cy + r * 0.9)], fill=colour)
        d.polygon(
            [
                (round(cx - r * 0.95), round(cy - r * 0.05)),
                (round(cx), round(cy - r)),
                (round(cx + r * 0.95), round(cy - r * 0.05)),
            ],
            fill=colour,
        )
    else:  # pragma: no cover - the generator only asks for known kinds
        raise ValueError(f"unknown glyph kind {kind!r}")


# ----------------------------------------------------------------------------------------- flags

FLAG_LAYOUTS = ("horizontal_triband", "vertical_triband", "horizontal_biband", "nordic_cross", "canton", "diagonal")
LAYOUT_COLOURS = {
    "horizontal_triband": 3,
    "vertical_triband": 3,
    "horizontal_biband": 2,
    "nordic_cross": 2,
    "canton": 2,
    "diagonal": 2,
}
CHARGES = ("none", "disc", "star", "diamond", "ring")


def flag_centre_colour(flag: dict[str, Any]) -> str:
    """The field colour under the flag's centre (the charge must differ from it to be visible)."""
    layout, cols = flag["layout"], flag["colours"]
    if layout in ("horizontal_triband", "vertical_triband"):
        return cols[1]
    if layout == "nordic_cross":
        return cols[0]  # the charge sits on the field, right of the cross (see draw_flag)
    if layout == "horizontal_biband":
        return cols[0]  # the charge sits in the upper band
    return cols[0]


def charge_centre(flag: dict[str, Any]) -> tuple[int, int]:
    w, h = FLAG_SIZE
    layout = flag["layout"]
    if layout == "horizontal_biband":
        return w // 2, h // 4
    if layout == "nordic_cross":
        return (w * 3) // 4 - 4, h // 4 - 2
    if layout == "canton":
        return (w * 3) // 4, (h * 3) // 4 - 4
    if layout == "diagonal":
        return w // 4, h // 4
    return w // 2, h // 2


def draw_flag(flag: dict[str, Any]) -> Image.Image:
    """Draw a flag from its recorded attributes: layout, colours (in layout order), charge."""
    w, h = FLAG_SIZE
    img = Image.new("RGB", (w, h), PALETTE[flag["colours"][0]])
    d = ImageDraw.Draw(img)
    c = [PALETTE[x] for x in flag["colours"]]
    layout = flag["layout"]
    if layout == "horizontal_triband":
        d.rectangle([0, h // 3, w, 2 * h // 3 - 1], fill=c[1])
        d.rectangle([0, 2 * h // 3, w, h], fill=c[2])
    elif layout == "vertical_triband":
        d.rectangle([w // 3, 0, 2 * w // 3 - 1, h], fill=c[1])
        d.rectangle([2 * w // 3, 0, w, h], fill=c[2])
    elif layout == "horizontal_biband":
        d.rectangle([0, h // 2, w, h], fill=c[1])
    elif layout == "nordic_cross":
        d.rectangle([26, 0, 37, h], fill=c[1])
        d.rectangle([0, 26, w, 37], fill=c[1])
    elif layout == "canton":
        d.rectangle([0, 0, w // 2 - 1, h // 2 - 1], fill=c[1])
    elif layout == "diagonal":
        d.polygon([(w, 0), (w, h), (0, h)], fill=c[1])
    if flag["charge"] != "none":
        cx, cy = charge_centre(flag)
        draw_glyph(d, flag["charge"], cx, cy, 9, PALETTE[flag["charge_colour"]], hole=PALETTE[flag_centre_colour(flag)])
    return img


# --------------------------------------------------------------------------------------- emblems

EMBLEM_SHAPES = ("circle", "triangle", "square", "diamond", "pentagon", "hexagon", "octagon")
EMBLEM_SYMBOLS = ("star", "ring", "cross", "disc", "diamond")
SYMBOL_POSITIONS = {
    "centre": (0, 0),
    "upper part": (0, -1),
    "lower part": (0, 1),
    "left side": (-1, 0),
    "right side": (1, 0),
}


def _emblem_outline(shape: str, cx: float, cy: float, r: float) -> list[tuple[int, int]] | None:
    sides = {"triangle": 3, "square": 4, "pentagon": 5, "hexagon": 6, "octagon": 8}
    if shape == "circle":
        return None
    if shape == "diamond":
        return [
            (round(cx), round(cy - r)),
            (round(cx + r * 0.8), round(cy)),
            (round(cx), round(cy + r)),
            (round(cx - r * 0.8), round(cy)),
        ]
    rot = -math.pi / 4 if shape == "square" else -math.pi / 2
    if shape == "octagon":
        rot = -math.pi / 2 + math.pi / 8
    return _regular_polygon(cx, cy, r, sides[shape], rot)


def symbol_centre(emblem: dict[str, Any]) -> tuple[int, int]:
    w, h = EMBLEM_SIZE
    dx, dy = SYMBOL_POSITIONS[emblem["symbol_position"]]
    # Triangles and diamonds are narrow at the top: keep their symbol offsets inside the outline.
    k = 8 if emblem["shape"] in ("triangle", "diamond") else 12
    base_y = h // 2 + (6 if emblem["shape"] == "triangle" else 0)
    return w // 2 + dx * k, base_y + dy * k


def draw_emblem(emblem: dict[str, Any]) -> Image.Image:
    """An emblem: an outline shape filled with one colour, one small symbol inside it."""
    w, h = EMBLEM_SIZE
    img = Image.new("RGB", (w, h), PARCHMENT)
    d = ImageDraw.Draw(img)
    fill = PALETTE[emblem["fill"]]
    cx, cy, r = w / 2, h / 2, 29
    if emblem["shape"] == "triangle":
        cy += 6
        r = 33
    pts = _emblem_outline(emblem["shape"], cx, cy, r)
    if pts is None:
        d.ellipse([round(cx - r), round(cy - r), round(cx + r), round(cy + r)], fill=fill)
    else:
        d.polygon(pts, fill=fill)
    sx, sy = symbol_centre(emblem)
    sr = 5 if emblem["shape"] in ("triangle", "diamond") else 7
    draw_glyph(d, emblem["symbol"], sx, sy, sr, PALETTE[emblem["symbol_colour"]], hole=fill)
    return img


# ----------------------------------------------------------------------------------------- views


def draw_flag_view(flag_img: Image.Image, phase: int) -> Image.Image:
    """The flag "photographed" on a pole against the sky, waving: a query image that is not in the
    knowledge base (like InfoSeek's query photos versus Wikipedia's images).  NEAREST resampling and
    whole-pixel column shifts keep the flag's colours exact."""
    W, H = VIEW_SIZE
    img = Image.new("RGB", (W, H), SKY)
    d = ImageDraw.Draw(img)
    d.rectangle([18, 6, 21, H - 1], fill=POLE)
    small = flag_img.resize((72, 48), Image.Resampling.NEAREST)
    for x in range(small.width):
        dy = round(3 * math.sin((x + phase) / 7.0))
        img.paste(small.crop((x, 0, x + 1, small.height)), (22 + x, 12 + dy))
    return img


def draw_emblem_view(emblem_img: Image.Image, dx: int, dy: int) -> Image.Image:
    """The emblem hanging in a frame on a wall, slightly off-centre: the emblem's query view."""
    W, H = VIEW_SIZE
    img = Image.new("RGB", (W, H), WALL)
    d = ImageDraw.Draw(img)
    x0, y0 = 36 + dx, 18 + dy
    d.rectangle([x0 - 4, y0 - 4, x0 + 56 + 3, y0 + 56 + 3], fill=FRAME)
    img.paste(emblem_img.resize((56, 56), Image.Resampling.NEAREST), (x0, y0))
    return img


# ---------------------------------------------------------------------------------------- scenes

SCENE_KINDS = ("circle", "square", "triangle", "star", "diamond", "cross", "ring", "fish", "house")
SIZE_RADIUS = {"small": 8, "large": 16}
GRID = 3


def cell_centre(row: int, col: int) -> tuple[int, int]:
    step = SCENE_SIZE[0] // GRID
    return step // 2 + col * step, step // 2 + row * step


def draw_scene(objects: list[dict[str, Any]]) -> Image.Image:
    """A HumbleBench-style scene: a few glyphs on a 3x3 grid, each with colour and size."""
    img = Image.new("RGB", SCENE_SIZE, SCENE_BG)
    d = ImageDraw.Draw(img)
    for o in objects:
        cx, cy = cell_centre(o["row"], o["col"])
        draw_glyph(
            d, o["kind"], cx + o["jx"], cy + o["jy"], SIZE_RADIUS[o["size"]], PALETTE[o["colour"]], hole=SCENE_BG
        )
    return img
