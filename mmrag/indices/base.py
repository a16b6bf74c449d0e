"""The Encoder protocol shared by text, image and multimodal indices."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from mmrag.schema import ImageRef


@runtime_checkable
class Encoder(Protocol):
    #: name + revision + normalisation; an index records it and refuses a different one at load.
    fingerprint: str
    dim: int

    def encode_text(self, texts: Sequence[str]) -> np.ndarray:
        """float32 (n, dim), L2-normalised."""

    def encode_image(self, images: Sequence[ImageRef]) -> np.ndarray:
        """float32 (n, dim), L2-normalised."""
