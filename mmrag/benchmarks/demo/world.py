"""Generate the demo world on disk, once per (generator version, seed), atomically.

Layout of ``mmrag_home()/demo/world-v<GENERATOR_VERSION>-seed<seed>/``::

    MANIFEST.json          counts, seed, version and the sha256 of every other file (written last)
    entities.json          every entity: facts, flag and emblem attributes as drawn
    scenes.json            every HumbleBench scene graph and the truth of every option
    kb.jsonl               knowledge base (KBRecord lines)
    deflection.jsonl       knowledge questions (DeflectionRecord lines, source "demo")
    knowhal.jsonl          KnowHal-style pairs (KnowHalRecord lines)
    images/entities/       <id>_flag.png, <id>_emblem.png (in the KB), <id>_flag_view.png,
                           <id>_emblem_view.png (query views, not in the KB)
    humblebench/           a Hugging Face imagefolder: metadata.jsonl + images/scene_NNNN.png

The folder is built in a temporary sibling and renamed into place, so a reader never sees half a
world; a complete world (its MANIFEST.json exists) is reused.  Bump GENERATOR_VERSION whenever the
output of the same seed changes, so old caches are never mistaken for new ones.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from mmrag.benchmarks.demo.draw import draw_emblem, draw_emblem_view, draw_flag, draw_flag_view, draw_scene, png_bytes
from mmrag.benchmarks.demo.entities import make_entities
from mmrag.benchmarks.demo.knowhal_pairs import knowhal_records
from mmrag.benchmarks.demo.questions import deflection_records, image_path, kb_records
from mmrag.benchmarks.demo.scenes import humblebench_items
from mmrag.indices.progress import status
from mmrag.schema import sha256_bytes
from mmrag.util import mmrag_home

GENERATOR_VERSION = 3
MANIFEST = "MANIFEST.json"


def world_dir(seed: int = 0, root: Path | None = None) -> Path:
    return Path(root or (mmrag_home() / "demo")) / f"world-v{GENERATOR_VERSION}-seed{seed}"


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows).encode("utf-8")


def _json(obj: Any) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, indent=1, sort_keys=True) + "\n").encode("utf-8")


def generate_world(
    seed: int, out_dir: Path, *, n_entities: int = 300, n_scenes: int = 120, knowhal_every: int = 5
) -> dict[str, Any]:
    """Write a complete world for ``seed`` into ``out_dir`` (which must be empty or absent).

    Byte-identical for the same seed and arguments.  Returns the manifest.  Writes in place: use
    :func:`ensure_world` for the atomic, cached version."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    files: dict[str, bytes] = {}

    entities = make_entities(seed, n_entities)
    for i, e in enumerate(entities):
        flag = draw_flag(e["flag"])
        emblem = draw_emblem(e["emblem"])
        files[image_path(e["id"], "flag")] = png_bytes(flag)
        files[image_path(e["id"], "emblem")] = png_bytes(emblem)
        files[image_path(e["id"], "flag_view")] = png_bytes(draw_flag_view(flag, phase=i % 11))
        files[image_path(e["id"], "emblem_view")] = png_bytes(
            draw_emblem_view(emblem, dx=(i * 7) % 13 - 6, dy=(i * 5) % 9 - 4)
        )
    kb = kb_records(entities)
    questions = deflection_records(entities, seed)
    pairs = knowhal_records(entities, seed, every=knowhal_every)

    scenes, mcqs = humblebench_items(seed, n_scenes)
    for sc in scenes:
        files[f"humblebench/{sc['file_name']}"] = png_bytes(draw_scene(sc["objects"]))
    hb_meta = [
        {
            "file_name": q["file_name"],
            "question_id": q["question_id"],
            "question": q["question"],
            "label": q["label"],
            "type": q["type"],
        }
        for q in mcqs
    ]
    by_scene: dict[str, list[dict[str, Any]]] = {}
    for q in mcqs:
        by_scene.setdefault(q["scene_id"], []).append(
            {k: q[k] for k in ("question_id", "type", "stem", "options", "option_truth", "label", "generator")}
        )
    scenes_out = [{**sc, "questions": by_scene.get(sc["scene_id"], [])} for sc in scenes]

    files["entities.json"] = _json(entities)
    files["scenes.json"] = _json(scenes_out)
    files["kb.jsonl"] = _jsonl(kb)
    files["deflection.jsonl"] = _jsonl(questions)
    files["knowhal.jsonl"] = _jsonl(pairs)
    files["humblebench/metadata.jsonl"] = _jsonl(hb_meta)

    for rel, data in files.items():
        p = out_dir / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    manifest = {
        "generator_version": GENERATOR_VERSION,
        "seed": seed,
        "counts": {
            "entities": len(entities),
            "kb_documents": len(kb),
            "deflection_samples": len(questions),
            "deflection_questions": len({q["question_id"] for q in questions}),
            "humblebench_questions": len(mcqs),
            "humblebench_scenes": len(scenes),
            "knowhal_records": len(pairs),
            "knowhal_pairs": len({p["pair_id"] for p in pairs}),
        },
        "files": {rel: sha256_bytes(data) for rel, data in sorted(files.items())},
    }
    (out_dir / MANIFEST).write_bytes(_json(manifest))
    return manifest


def ensure_world(seed: int = 0, root: Path | None = None) -> Path:
    """The folder of the demo world for ``seed``, generating it first if it is not complete.

    Generation happens in a temporary sibling folder renamed into place, so concurrent callers and
    interrupted runs never leave (or read) a half-written world."""
    target = world_dir(seed, root)
    if (target / MANIFEST).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():  # an incomplete leftover (no manifest): not ours to trust
        shutil.rmtree(target, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    status(f"generating the demo world (seed {seed}, kept for the next run)")
    try:
        generate_world(seed, tmp)
        try:
            os.rename(tmp, target)
        except OSError:
            if not (target / MANIFEST).is_file():
                raise
            shutil.rmtree(tmp, ignore_errors=True)  # another process finished first
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target
