"""Snapshots of rendered prompts: any change in what a model would see fails here.

A fixed sample is rendered under every retrieval kind x positive x negative modality x strictness,
every HumbleBench stress setting and both KnowHal formats; the canonical prompt (messages with
images named by file, template id/version/hash, contexts, options, label, positions) is compared
with ``tests/snapshots/*.json``.  A template whose wording changed while its version did not fails
separately, so every wording change is a deliberate, versioned one.

To accept a deliberate change: ``MMRAG_UPDATE_SNAPSHOTS=1 pytest tests/test_scenario_snapshots.py``
and commit the updated JSON together with the version bump.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from scenario_doubles import make_world, mcq_sample

from mmrag.scenarios import ScenarioSpec, bundled_template_ids, compose, get_template
from mmrag.schema import Choice, ImageRef, Prompt, Sample, is_nota_text
from mmrag.util import atomic_write_json

SNAP = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("MMRAG_UPDATE_SNAPSHOTS") == "1"
MODS = ("text", "image", "multimodal", "any")
STRICT = ("none", "soft", "moderate", "severe")


def canonical(p: Prompt) -> dict:
    msgs = [
        {
            "role": m.role,
            "content": [
                {"type": "image", "file": Path(c.image.path).name}
                if c.type == "image"
                else {"type": "text", "text": c.text}
                for c in m.content
            ],
        }
        for m in p.messages
    ]
    return {
        "template": f"{p.template_id}@{p.template_version}",
        "template_sha256": p.template_hash,
        "messages": msgs,
        "contexts": [[c.document.id, c.role] for c in p.contexts],
        "choices": [[c.letter, c.text, c.is_nota] for c in p.choices],
        "label": p.label,
        "gold_positions": p.metadata.get("gold_positions"),
        "mining": p.metadata.get("mining"),
        "dropped": [d["doc_id"] for d in p.metadata.get("budget", {}).get("dropped", [])],
    }


def check(name: str, actual: dict) -> None:
    path = SNAP / f"{name}.json"
    if UPDATE:
        atomic_write_json(path, actual)
        return
    assert path.exists(), f"{path} missing: run with MMRAG_UPDATE_SNAPSHOTS=1 to create it"
    expected = json.loads(path.read_text(encoding="utf-8"))
    changed = sorted(k for k in set(expected) | set(actual) if expected.get(k) != actual.get(k))
    if changed:
        k = changed[0]
        pytest.fail(
            f"{len(changed)} rendered prompt(s) changed in {path.name}: {changed[:6]}...\n"
            f"first: {k}\nexpected: {json.dumps(expected.get(k), indent=1)[:1500]}\n"
            f"actual:   {json.dumps(actual.get(k), indent=1)[:1500]}\n"
            "If deliberate: bump the template version and rerun with MMRAG_UPDATE_SNAPSHOTS=1."
        )


def test_template_versions_are_bumped_with_their_wording():
    actual = {t: {"version": get_template(t).version, "sha256": get_template(t).sha256} for t in bundled_template_ids()}
    path = SNAP / "templates.json"
    if not UPDATE and path.exists():
        expected = json.loads(path.read_text(encoding="utf-8"))
        for tid, cur in actual.items():
            old = expected.get(tid)
            if old and old["version"] == cur["version"]:
                assert old["sha256"] == cur["sha256"], f"template '{tid}' changed without a version bump"
    check("templates", actual)


def test_retrieval_scenarios_snapshot():
    sample, store, miner = make_world(None)
    out = {}
    for kind in ("parametric", "oracle", "realistic", "adversarial"):
        for pos in MODS:
            for neg in MODS:
                for s in STRICT:
                    spec = ScenarioSpec(
                        kind=kind, n_distractors=2, positive_modality=pos, negative_modality=neg, strictness=s
                    )
                    out.setdefault(spec.id.rsplit("-", 1)[0], canonical(compose(sample, spec, miner=miner)))
    extra = {
        "realistic-n4-gold_first": ScenarioSpec(
            kind="realistic", n_distractors=4, gold_position="first", negative_modality="any"
        ),
        "realistic-n3-gold_at_1-seed7": ScenarioSpec(kind="realistic", n_distractors=3, gold_position=1, seed=7),
        "realistic-n6-budget": ScenarioSpec(
            kind="realistic", n_distractors=6, negative_modality="any", max_images=3, max_context_tokens=40
        ),
    }
    for name, spec in extra.items():
        out[name] = canonical(compose(sample, spec, miner=miner))
    out["oracle-mcq"] = canonical(
        compose(mcq_sample(None), ScenarioSpec(kind="oracle", positive_modality="text"), store=store)
    )
    assert len(out) == 4 + 16 + 64 + 16 + 4
    check("retrieval", out)


def _hb_sample(opts, label, sep=". ", qid=17) -> Sample:
    stem = "What is the person holding?"
    raw = "\n".join([stem] + [f"{ltr}{sep}{t}" for ltr, t in zip("ABCDE", opts)])
    return Sample(
        id=f"humblebench-{qid}",
        benchmark="humblebench",
        question_id=str(qid),
        question=stem,
        images=[ImageRef(path="images/hb.jpg", sha256="0" * 64)],
        label=label,
        choices=[Choice(letter=ltr, text=t, is_nota=is_nota_text(t)) for ltr, t in zip("ABCDE", opts)],
        metadata={"raw_question": raw},
    )


def test_humblebench_snapshot():
    items = {
        "b": _hb_sample(["an umbrella", "a phone", "a cup", "a book", "None of the above"], "B"),
        "nota": _hb_sample(["a kite", "a bag", "a dog leash", "a ball", "None of above"], "E", sep="."),
    }
    settings = [
        (),
        ("noise_image",),
        ("nota_only",),
        ("shuffle_options",),
        ("cautious_prompt",),
        ("forced_grounding_prompt",),
        ("noise_image", "forced_grounding_prompt"),
        ("shuffle_options", "nota_only"),
    ]
    out = {
        f"{name}:{'__'.join(st) or 'common'}": canonical(compose(s, ScenarioSpec(kind="humblebench", stress=st)))
        for name, s in items.items()
        for st in settings
    }
    check("humblebench", out)


def test_knowhal_snapshot():
    base = Sample(
        id="kh-1",
        benchmark="knowhal",
        question="What breed is the dog on the sofa?",
        images=[ImageRef(path="images/kh.jpg", sha256="1" * 64)],
        answers=["beagle"],
    )
    rel = base.model_copy(
        update={
            "id": "kh-2",
            "question": "Where is the dog relative to the sofa?",
            "choices": [Choice(letter="A", text="on it"), Choice(letter="B", text="under it")],
            "label": "A",
        }
    )
    out = {
        f"{name}:{s}": canonical(compose(smp, ScenarioSpec(kind="knowhal", strictness=s)))
        for name, smp in (("open", base), ("relation", rel))
        for s in STRICT
    }
    check("knowhal", out)
