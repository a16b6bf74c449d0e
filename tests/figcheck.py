"""Is a matplotlib figure readable?  No two drawn texts overlap and nothing lies outside the canvas.

The check records every text matplotlib actually draws (``Text.draw`` is wrapped while the canvas
renders: tick labels of ticks outside the view, hidden labels of shared axes and empty titles are
never drawn, so they are never counted) with its window extent, then compares the boxes with each
other and with the figure's box.  It also checks that every axes and legend lies inside the
canvas and that a drawn label does not sit on a bar (:func:`text_over_bars`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.text import Text
from matplotlib.transforms import Bbox

#: pixels two boxes may share (anti-aliasing, a glyph's side bearing) before they count as overlapping
TOLERANCE_PX = 1.0


@contextmanager
def _recording() -> Iterator[list[Text]]:
    drawn: list[Text] = []
    original = Text.draw

    def draw(self, renderer):
        original(self, renderer)
        if self.get_visible() and self.get_text().strip():
            drawn.append(self)

    Text.draw = draw  # type: ignore[method-assign]
    try:
        yield drawn
    finally:
        Text.draw = original  # type: ignore[method-assign]


def render(fig: Figure):
    """Draw ``fig`` on an Agg canvas; returns the renderer and the texts drawn, with their boxes."""
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    with _recording() as drawn:
        canvas.draw()
    renderer = canvas.get_renderer()
    return renderer, [(t, t.get_window_extent(renderer)) for t in drawn]


def _shrink(b: Bbox, px: float) -> Bbox:
    return Bbox.from_extents(b.x0 + px, b.y0 + px, b.x1 - px, b.y1 - px)


def _name(t: Text) -> str:
    return repr(t.get_text()[:40])


def layout_problems(fig: Figure) -> list[str]:
    """Every overlap of two drawn texts and everything drawn outside the canvas, as sentences."""
    renderer, texts = render(fig)
    canvas = fig.bbox
    problems = []
    for t, box in texts:
        if not _inside(box, canvas):
            problems.append(f"text {_name(t)} at {box.bounds} lies outside the canvas {canvas.bounds}")
    for i, (a, ba) in enumerate(texts):
        for b, bb in texts[i + 1 :]:
            if _shrink(ba, TOLERANCE_PX).overlaps(_shrink(bb, TOLERANCE_PX)):
                problems.append(f"texts {_name(a)} and {_name(b)} overlap ({ba.bounds} / {bb.bounds})")
    for ax in fig.axes:
        box = ax.get_window_extent(renderer)
        if not _inside(box, canvas):
            problems.append(f"axes {ax.get_title()[:30]!r} at {box.bounds} lies outside the canvas")
    for leg in [*fig.legends, *(ax.get_legend() for ax in fig.axes)]:
        if leg is not None and not _inside(leg.get_window_extent(renderer), canvas):
            problems.append(f"a legend lies outside the canvas ({leg.get_window_extent(renderer).bounds})")
    tight = fig.get_tightbbox(renderer)  # inches: every artist of the figure
    if not _inside(tight, fig.bbox_inches, tol=TOLERANCE_PX / fig.dpi):
        problems.append(f"something is drawn outside the canvas: tight box {tight.bounds} vs {fig.bbox_inches.bounds}")
    return problems


def _inside(box: Bbox, outer: Bbox, tol: float = TOLERANCE_PX) -> bool:
    return (
        box.x0 >= outer.x0 - tol and box.y0 >= outer.y0 - tol and box.x1 <= outer.x1 + tol and box.y1 <= outer.y1 + tol
    )


def text_over_bars(fig: Figure) -> list[str]:
    """Drawn texts inside an axes that cover one of its bars (a label over the data it labels)."""
    renderer, texts = render(fig)
    problems = []
    for ax in fig.axes:
        bars = [p.get_window_extent(renderer) for p in ax.patches if isinstance(p, Rectangle) and p.get_height()]
        for t, box in texts:
            if t not in ax.texts:  # tick labels and titles sit outside the data area
                continue
            for bar in bars:
                if _shrink(box, TOLERANCE_PX).overlaps(bar):
                    problems.append(f"text {_name(t)} covers a bar in {ax.get_title()[:30]!r}")
                    break
    return problems


def assert_readable(fig: Figure, what: str = "figure") -> None:
    problems = layout_problems(fig)
    assert not problems, (
        f"{what}: " + "; ".join(problems[:8]) + (f" (+{len(problems) - 8} more)" if len(problems) > 8 else "")
    )
