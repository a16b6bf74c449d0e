"""Will every configured backend accept every input?  Checked before the run directory exists.

Why: an input the loader accepts can still be refused by a backend — a TIFF query image cannot
travel as an OpenAI-style data URL — and found at send time it would stop a run half-way, hours in.  Each model
declares the image types it takes (:attr:`Capabilities.image_formats`, None = whatever PIL
decodes); this module sniffs the magic bytes of every distinct image a run will send (sample
images and knowledge-base images) and reports the first refusal naming the image, the record and
the model, before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mmrag.errors import InputError
from mmrag.models.render import sniff_mime
from mmrag.schema import ImageRef


def image_type(image: ImageRef) -> str:
    """The MIME type from an image's first bytes ("unknown" when it is none of the data-URL types)."""
    try:
        with open(image.path, "rb") as fh:
            head = fh.read(16)
    except OSError as exc:
        raise InputError(f"cannot read image ({exc.strerror})", path=image.path) from None
    try:
        return sniff_mime(head)
    except InputError:
        pass
    from PIL import Image

    try:
        with Image.open(image.path) as im:
            return Image.MIME.get(im.format or "", f"image/{(im.format or 'unknown').lower()}")
    except Exception:  # not an image at all: the loaders reject those; say what we saw
        return "unknown"


def check_images(images: Iterable[tuple[ImageRef, str]], models: Iterable[Any]) -> int:
    """``images``: (image, what it belongs to, e.g. "sample s1").  Raises InputError at the first
    image some model will not take; returns how many distinct images were checked."""
    picky = [m for m in models if getattr(getattr(m, "capabilities", None), "image_formats", None) is not None]
    if not picky:
        return 0
    seen: dict[str, str] = {}
    for image, owner in images:
        if image.path in seen:
            continue
        kind = seen[image.path] = image_type(image)
        for m in picky:
            ok = m.capabilities.image_formats
            if kind not in ok:
                raise InputError(
                    f"model {m.fingerprint} does not accept this image ({owner}; type {kind}); it takes "
                    f"{', '.join(ok)}: convert the image (e.g. to PNG) or drop the record",
                    path=image.path,
                )
    return len(seen)


def plan_images(plans: Iterable[Any]) -> Iterable[tuple[ImageRef, str]]:
    """Every image a run's plans can send: the samples' own and their knowledge base's."""
    for plan in plans:
        for s in plan.samples:
            for im in s.images:
                yield im, f"sample {s.id}"
        store = getattr(plan, "store", None)
        for doc in store if store is not None else ():
            if doc.image is not None:
                yield doc.image, f"document {doc.id}"


def check_plan_inputs(plans: Iterable[Any], models: Iterable[Any]) -> int:
    plans, models = list(plans), list(models)
    warn_unfit(plans, models)
    return check_images(plan_images(plans), models)


def warn_unfit(plans: list[Any], models: list[Any]) -> list[str]:
    """A model that cannot answer a benchmark at all (a baseline that reads only the prompt's
    contexts, given none; the simulated VLM, given questions about another world) says why before
    the run starts, instead of leaving a table of 0 % correct / 100 % deflection to be puzzled over.
    Models opt in with ``unfit(plan) -> str | None``; the lines go to stderr and are returned."""
    from mmrag.indices.progress import status

    lines = []
    for vlm in models:
        check = getattr(vlm, "unfit", None)
        if check is None:
            continue
        for plan in plans:
            why = check(plan)
            if why:
                lines.append(f"warning: {why}")
                status(lines[-1])
    return lines
