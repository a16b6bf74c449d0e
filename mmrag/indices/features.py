"""Weight-free image features and the multimodal fusion encoder.

:class:`ColorLayoutImageEncoder` is a *baseline* encoder: it needs no download, is deterministic
and fast, and finds images that look alike (same palette, same coarse layout) — exactly what the
demo world's look-alike flags and emblems need to yield visual hard negatives.  It knows nothing
about semantics; real knowledge bases should use a CLIP-type encoder.

:class:`FusionEncoder` embeds image+text documents for the multimodal index.  Two rules:

* ``"concat"`` (default for the weight-free demo pair, MiniLM text + colour-layout image): the
  normalised text and image vectors are weighted by sqrt(w) and sqrt(1-w) and concatenated, so the
  inner product of two fused vectors is ``w * cos(text) + (1-w) * cos(image)``.  A query with only
  one part gets zeros for the other and is re-normalised (rank-equivalent to scoring that part).
* ``"mean"`` (for encoders that share one joint space, e.g. CLIP): ``normalise(w*t + (1-w)*i)``.
  Both parts must have the same dimension; it is the caller's job to pick a joint-space pair.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from mmrag.errors import InputError
from mmrag.indices.encoders import _normalise, load_images
from mmrag.indices.progress import progress_bar
from mmrag.schema import ImageRef

FusionRule = Literal["concat", "mean"]


class ColorLayoutImageEncoder:
    """Colour histogram + spatial layout of mean colours, L2-normalised (a baseline encoder).

    The image is resized to ``size``×``size``.  Part 1: a joint RGB histogram with ``bins`` levels
    per channel, square-rooted (Hellinger) so a large uniform background does not swamp small
    coloured marks.  Part 2: the mean colour of each cell of a ``grid``×``grid`` layout, centred
    on mid-grey so that dark and bright regions pull in opposite directions.  Each part is
    normalised and weighted (``layout_weight`` for part 2), then the whole vector is normalised.
    """

    modalities = ("image",)

    def __init__(
        self,
        grid: int = 4,
        bins: int = 4,
        size: int = 64,
        layout_weight: float = 1.0,
        batch_size: int = 256,
        progress: bool | None = None,
    ) -> None:
        if grid < 1 or bins < 2 or size < grid:
            raise InputError("ColorLayoutImageEncoder needs grid >= 1, bins >= 2, size >= grid", field="encoder")
        self.grid, self.bins, self.size = int(grid), int(bins), int(size)
        self.layout_weight = float(layout_weight)
        self.batch_size = int(batch_size)
        self.progress = progress
        self.dim = self.bins**3 + 3 * self.grid * self.grid
        self.fingerprint = f"color-layout:v1:g{self.grid}:b{self.bins}:s{self.size}:w{self.layout_weight:g}:l2"

    def spec(self) -> dict[str, Any]:
        return {
            "name": "color-layout",
            "kwargs": {"grid": self.grid, "bins": self.bins, "size": self.size, "layout_weight": self.layout_weight},
        }

    def encode_text(self, texts: Sequence[str]) -> np.ndarray:
        raise InputError(f"encoder {self.fingerprint} embeds images only", field="encoder")

    def _features(self, im: Any) -> np.ndarray:
        from PIL import Image

        arr = np.asarray(im.resize((self.size, self.size), Image.Resampling.BILINEAR), dtype=np.float32) / 255.0
        q = np.minimum((arr * self.bins).astype(np.int64), self.bins - 1)
        codes = (q[..., 0] * self.bins + q[..., 1]) * self.bins + q[..., 2]
        hist = np.bincount(codes.ravel(), minlength=self.bins**3).astype(np.float32)
        hist = np.sqrt(hist / hist.sum())
        cell = self.size // self.grid
        crop = arr[: cell * self.grid, : cell * self.grid]
        layout = crop.reshape(self.grid, cell, self.grid, cell, 3).mean(axis=(1, 3)).ravel() - 0.5
        ln = np.linalg.norm(layout)
        layout = layout / ln if ln > 1e-12 else layout
        return np.concatenate([hist / max(np.linalg.norm(hist), 1e-12), self.layout_weight * layout])

    def encode_image(self, images: Sequence[ImageRef]) -> np.ndarray:
        images = list(images)
        out = np.zeros((len(images), self.dim), dtype=np.float32)
        with progress_bar("encoding images", len(images), self.progress, 1024) as bar:
            for i in range(0, len(images), self.batch_size):
                for j, im in enumerate(load_images(images[i : i + self.batch_size])):
                    out[i + j] = self._features(im)
                bar.advance(min(self.batch_size, len(images) - i))
        return _normalise(out) if len(images) else out


class FusionEncoder:
    """Image+text encoder for the multimodal index (see the module docstring for the rules)."""

    modalities = ("text", "image")

    def __init__(
        self, text_encoder: Any, image_encoder: Any, rule: FusionRule = "concat", text_weight: float = 0.5
    ) -> None:
        if rule not in ("concat", "mean"):
            raise InputError(f"unknown fusion rule '{rule}' (concat | mean)", field="fusion")
        if not 0.0 <= text_weight <= 1.0:
            raise InputError("text_weight must lie in [0, 1]", field="text_weight")
        if rule == "mean" and text_encoder.dim != image_encoder.dim:
            raise InputError(
                f"fusion 'mean' needs one joint space; dims differ ({text_encoder.dim} vs {image_encoder.dim})",
                field="fusion",
            )
        self.text_encoder, self.image_encoder = text_encoder, image_encoder
        self.rule, self.text_weight = rule, float(text_weight)
        self.dim = text_encoder.dim + image_encoder.dim if rule == "concat" else text_encoder.dim
        self.fingerprint = (
            f"fusion:{rule}:w{self.text_weight:g}[{text_encoder.fingerprint}]+[{image_encoder.fingerprint}]"
        )

    def spec(self) -> dict[str, Any]:
        return {
            "name": "fusion",
            "kwargs": {
                "text": self.text_encoder.spec(),
                "image": self.image_encoder.spec(),
                "rule": self.rule,
                "text_weight": self.text_weight,
            },
        }

    def fuse(self, t: np.ndarray | None, i: np.ndarray | None, n: int) -> np.ndarray:
        """Fuse per-row text and image vectors; either may be None (that part is absent)."""
        w = self.text_weight
        if self.rule == "concat":
            out = np.zeros((n, self.dim), dtype=np.float32)
            if t is not None:
                out[:, : self.text_encoder.dim] = np.sqrt(w) * t
            if i is not None:
                out[:, self.text_encoder.dim :] = np.sqrt(1.0 - w) * i
        else:
            out = np.zeros((n, self.dim), dtype=np.float32)
            if t is not None:
                out += w * t
            if i is not None:
                out += (1.0 - w) * i
        return _normalise(out)

    def encode_pairs(self, texts: Sequence[str], images: Sequence[ImageRef]) -> np.ndarray:
        if len(texts) != len(images):
            raise InputError("encode_pairs needs as many texts as images")
        return self.fuse(self.text_encoder.encode_text(texts), self.image_encoder.encode_image(images), len(texts))

    def encode_text(self, texts: Sequence[str]) -> np.ndarray:
        return self.fuse(self.text_encoder.encode_text(texts), None, len(texts))

    def encode_image(self, images: Sequence[ImageRef]) -> np.ndarray:
        return self.fuse(None, self.image_encoder.encode_image(images), len(images))
