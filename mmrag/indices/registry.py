"""Encoder registry and query embedding.

``ENCODERS`` maps a short name to an encoder factory (third-party encoders register through the
entry-point group ``mmrag.encoders`` or a dotted path).  An index manifest stores the encoder's
``spec()`` (registry name + kwargs), so ``load_index(dir)`` can rebuild the encoder it was built
with, and ``mmrag index build --encoder NAME`` needs no if/elif on names.

:func:`encode_queries` turns queries (text, images, or both) into vectors for a given encoder:
parts the encoder cannot embed are dropped (a text-only MiniLM index ignores a query image; the
colour-layout index ignores the question text), several query images are averaged, and text +
image are summed then normalised — or fused by the :class:`FusionEncoder`'s own rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mmrag.errors import InputError
from mmrag.registry import Registry
from mmrag.schema import ImageRef

ENCODERS: Registry[Any] = Registry("encoder", group="mmrag.encoders")


@ENCODERS.register("sentence-transformers")
def _st(**kw: Any) -> Any:
    from mmrag.indices.encoders import SentenceTransformerEncoder

    return SentenceTransformerEncoder(**kw)


ENCODERS.register("minilm", _st)


@ENCODERS.register("open-clip")
def _clip(**kw: Any) -> Any:
    from mmrag.indices.encoders import OpenClipEncoder

    return OpenClipEncoder(**kw)


@ENCODERS.register("color-layout")
def _color(**kw: Any) -> Any:
    from mmrag.indices.features import ColorLayoutImageEncoder

    return ColorLayoutImageEncoder(**kw)


@ENCODERS.register("fusion")
def _fusion(text: dict[str, Any] | None = None, image: dict[str, Any] | None = None, **kw: Any) -> Any:
    from mmrag.indices.features import FusionEncoder

    t = create_encoder(text or {"name": "minilm"})
    i = create_encoder(image or {"name": "color-layout"})
    return FusionEncoder(t, i, **kw)


def create_encoder(spec: str | dict[str, Any]) -> Any:
    """``"minilm"`` or ``{"name": "open-clip", "kwargs": {"arch": "ViT-S-32-alt"}}`` -> encoder."""
    if isinstance(spec, str):
        return ENCODERS.create(spec)
    if "name" not in spec:
        raise InputError("an encoder spec needs 'name'", field="encoder.name")
    return ENCODERS.create(spec["name"], **dict(spec.get("kwargs") or {}))


def encoder_modalities(encoder: Any) -> tuple[str, ...]:
    return tuple(getattr(encoder, "modalities", ("text", "image")))


def encode_queries(encoder: Any, texts: Sequence[str | None], images: Sequence[Sequence[ImageRef]]) -> np.ndarray:
    """One L2-normalised row per query (see the module docstring for the rule)."""
    n = len(texts)
    if len(images) != n:
        raise InputError("encode_queries needs one image list per query")
    mods = encoder_modalities(encoder)
    t_rows = [q for q in range(n) if texts[q] and "text" in mods]
    i_rows = [q for q in range(n) if images[q] and "image" in mods]
    missing = sorted(set(range(n)) - set(t_rows) - set(i_rows))
    if missing:
        raise InputError(
            f"query {missing[0]} has no text or image that encoder {encoder.fingerprint} "
            f"can embed (it embeds: {', '.join(mods)})",
            field="query",
        )
    base = getattr(encoder, "text_encoder", None) if hasattr(encoder, "fuse") else None
    t_dim = base.dim if base is not None else encoder.dim
    i_dim = encoder.image_encoder.dim if base is not None else encoder.dim
    t_enc = encoder.text_encoder if base is not None else encoder
    i_enc = encoder.image_encoder if base is not None else encoder
    t_full = np.zeros((n, t_dim), dtype=np.float32)
    i_full = np.zeros((n, i_dim), dtype=np.float32)
    if t_rows:
        t_full[t_rows] = t_enc.encode_text([texts[q] for q in t_rows])
    if i_rows:
        flat = [im for q in i_rows for im in images[q]]
        vecs = i_enc.encode_image(flat)
        pos = 0
        for q in i_rows:
            m = len(images[q])
            v = vecs[pos : pos + m].mean(axis=0)
            i_full[q] = v / max(float(np.linalg.norm(v)), 1e-12)
            pos += m
    if base is not None:
        return encoder.fuse(t_full, i_full, n)
    out = t_full + i_full
    out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    return out.astype(np.float32)
