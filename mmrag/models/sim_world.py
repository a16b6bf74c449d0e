"""What the simulated VLM (``sim-vlm``) knows and sees of the demo world.

The simulator is a calibration tool: its *perception* is built from the demo world's own files, and
its *biases* (in :mod:`mmrag.models.sim_vlm`) are parameters.  This module is the perception half:

* **reading** — it understands the demo's question templates (which fact or visual attribute is
  asked, about which named entity or about "the country represented in the image") and reads which
  entity a document is about from its title or caption and whether a passage states the asked fact;
* **seeing** — images are compared with weight-free features: the colour-layout features of
  :class:`~mmrag.indices.features.ColorLayoutImageEncoder` computed on the crop of the image's
  palette-coloured pixels.  The crop removes the sky, pole, wall and frame of a "photographed" query
  view, so a view matches its own knowledge-base drawing (top-1 among the 300 entities: 99 % for
  emblems, 98 % for flags), while the uncropped features match it about 1 % of the time;
  recognition adds Gaussian noise to the similarity scores (how much is the model's ``vision``);
* **memory** — the world's ground truth (``entities.json``, ``scenes.json``), used only for what it
  recognises or reads in the prompt, and for the facts it "knows" parametrically.

It is the one model module that knows a benchmark: the simulator models a VLM trained on the demo
world, so the demo world is its training data.  Nothing here is imported unless a ``sim-vlm`` is
created.
"""

from __future__ import annotations

import json
import re
import threading
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from mmrag.errors import InputError
from mmrag.schema import ImageRef

#: The demo's visual questions (the fact questions come from mmrag.benchmarks.demo.questions.QUESTION).
VISUAL_QUESTIONS: dict[str, str] = {
    "emblem_colour": "What is the main colour of the emblem of {ref}?",
    "emblem_shape": "What shape is the outline of the emblem of {ref}?",
    "flag_charge_colour": "What colour is the {charge} on the flag of {ref}?",
}
#: visual slot -> (image view it needs, attribute path in entities.json)
VISUAL_SLOTS: dict[str, tuple[str, str]] = {
    "emblem_colour": ("emblem", "emblem.fill"),
    "emblem_shape": ("emblem", "emblem.shape"),
    "flag_charge_colour": ("flag", "flag.charge_colour"),
}
_UNNAMED = re.compile(r"^the (country|city|guild) (?:represented in|whose flag is shown in) the image$", re.I)
_WORLD_LOCK = threading.Lock()
_WORLDS: dict[str, World] = {}


def _template_regex(template: str) -> re.Pattern[str]:
    parts = re.split(r"(\{ref\}|\{charge\})", template)
    rx = "".join(
        "(?P<ref>.+)" if p == "{ref}" else "(?P<charge>\\w+)" if p == "{charge}" else re.escape(p) for p in parts
    )
    return re.compile("^" + rx + "$", re.I)


def _question_patterns() -> list[tuple[re.Pattern[str], str]]:
    from mmrag.benchmarks.demo.questions import QUESTION

    out: list[tuple[re.Pattern[str], str]] = []
    for slot, tpl in QUESTION.items():
        for t in tpl.values() if isinstance(tpl, dict) else [tpl]:
            out.append((_template_regex(t), slot))
    out += [(_template_regex(t), slot) for slot, t in VISUAL_QUESTIONS.items()]
    return out


def find_world(images: list[ImageRef], explicit: str | None) -> Path | None:
    """The demo world a prompt belongs to: the ``world`` option, else the folder above one of its
    images that holds ``entities.json``, else the default world (seed 0) under MMRAG_HOME if it has
    been generated (None otherwise: the model then knows nothing and deflects)."""
    if explicit:
        p = Path(explicit)
        if not (p / "entities.json").is_file():
            raise InputError("not a demo world folder (no entities.json)", path=p, field="options.world")
        return p
    for ref in images:
        for parent in list(Path(ref.path).resolve().parents)[:5]:
            if (parent / "entities.json").is_file() and (parent / "MANIFEST.json").is_file():
                return parent
    from mmrag.benchmarks.demo.world import MANIFEST, world_dir

    default = world_dir(0)
    return default if (default / MANIFEST).is_file() else None


def world_for(path: Path) -> World:
    key = str(path.resolve())
    with _WORLD_LOCK:
        if key not in _WORLDS:
            _WORLDS[key] = World(path)
        return _WORLDS[key]


class World:
    """The demo world as the simulator knows it (loaded once per folder and process)."""

    def __init__(self, root: Path) -> None:
        from mmrag.benchmarks.demo.draw import PALETTE

        self.root = Path(root)
        self.entities: list[dict[str, Any]] = json.loads((self.root / "entities.json").read_text("utf-8"))
        self.by_id = {e["id"]: e for e in self.entities}
        self.by_name = {e["name"].lower(): e for e in self.entities}
        names = sorted((re.escape(e["name"]) for e in self.entities), key=len, reverse=True)
        self._name_rx = re.compile(r"\b(" + "|".join(names) + r")\b")
        self.patterns = _question_patterns()
        packed = [(r << 16) | (g << 8) | b for r, g, b in PALETTE.values()]
        self._palette = np.array(packed, dtype=np.int64)
        self._feat_memo: dict[str, np.ndarray | None] = {}
        self._lock = threading.Lock()

    # -- reading -------------------------------------------------------------------------------
    def parse_question(self, question: str) -> tuple[str, dict[str, Any] | None, bool] | None:
        """``(slot, entity or None, named)`` for a demo question, else None.  ``named`` is False
        when the entity is only in the query image ("the country represented in the image")."""
        q = " ".join(question.strip().split())
        for rx, slot in self.patterns:
            m = rx.match(q)
            if not m:
                continue
            ref = m.group("ref").strip()
            if _UNNAMED.match(ref):
                return slot, None, False
            name = re.sub(r"^the\s+|\s+guild$", "", ref, flags=re.I).lower()
            if name in self.by_name:
                return slot, self.by_name[name], True
        return None

    def entity_named_in(self, *texts: str) -> dict[str, Any] | None:
        """The first world entity named in the first text that names one (titles before bodies)."""
        for t in texts:
            m = self._name_rx.search(t or "")
            if m:
                return self.by_name[m.group(1).lower()]
        return None

    def value(self, entity: dict[str, Any], slot: str) -> str | None:
        """The true answer to ``slot`` for ``entity`` as the demo writes it (None if it has no such slot)."""
        from mmrag.benchmarks.demo.entities import fact_text

        if slot in VISUAL_SLOTS:
            part, key = VISUAL_SLOTS[slot][1].split(".")
            v = entity[part].get(key)
            return None if v is None else str(v)
        return fact_text(entity, slot) if slot in entity["facts"] else None

    def domain(self, slot: str) -> list[str]:
        """Plausible answers to ``slot`` (what a guess is drawn from)."""
        vals = {v for e in self.entities if (v := self.value(e, slot)) is not None}
        return sorted(vals)

    # -- seeing --------------------------------------------------------------------------------
    def features(self, ref: ImageRef) -> np.ndarray | None:
        """Colour-layout features of the palette-coloured crop, unit length; None when the image
        holds no palette colour at all (e.g. a noise image)."""
        key = ref.content_hash()
        with self._lock:
            if key in self._feat_memo:
                return self._feat_memo[key]
        from PIL import Image

        from mmrag.indices.features import ColorLayoutImageEncoder

        im = ref.load().convert("RGB")
        a = np.asarray(im, dtype=np.int64)
        mask = np.isin((a[..., 0] << 16) | (a[..., 1] << 8) | a[..., 2], self._palette)
        out = None
        if mask.sum() >= 16:
            ys, xs = np.nonzero(mask)
            crop = im.crop((int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1))
            enc = ColorLayoutImageEncoder(grid=4, bins=4, size=32)
            f = enc._features(
                crop if crop.width >= 4 and crop.height >= 4 else im.resize((32, 32), Image.Resampling.NEAREST)
            )
            out = (f / max(float(np.linalg.norm(f)), 1e-12)).astype(np.float32)
        with self._lock:
            self._feat_memo[key] = out
        return out

    @cached_property
    def galleries(self) -> dict[str, np.ndarray]:
        """view -> features of every entity's knowledge-base drawing of that view (the visual memory)."""
        out = {}
        for view in ("flag", "emblem"):
            rows = [
                self.features(ImageRef(path=str(self.root / f"images/entities/{e['id']}_{view}.png")))
                for e in self.entities
            ]
            if any(r is None for r in rows):  # every drawing is in palette colours: a damaged world
                raise RuntimeError(f"a {view} drawing of the demo world has no palette colour; regenerate it")
            out[view] = np.stack([r for r in rows if r is not None])
        return out

    @cached_property
    def scenes(self) -> dict[str, dict[str, Any]]:
        """sha256 of a HumbleBench scene image -> its scene graph and questions."""
        from mmrag.schema import sha256_file

        data = json.loads((self.root / "scenes.json").read_text("utf-8"))
        return {sha256_file(self.root / "humblebench" / sc["file_name"]): sc for sc in data}


def recognise(query: np.ndarray | None, candidates: np.ndarray, sigma: float, rng: np.random.Generator) -> int:
    """Index of the candidate the model takes ``query`` to be: the highest cosine after adding
    N(0, sigma) noise to every score (sigma 0 = exact feature matching).  With no usable query
    features the model has nothing to go on: a uniform pick."""
    noise = rng.standard_normal(len(candidates))
    if query is None:
        return int(np.argmax(noise))
    return int(np.argmax(candidates @ query + sigma * noise))
