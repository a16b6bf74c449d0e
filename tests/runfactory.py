"""Build small but complete run directories for the report / frame / browser tests.

Records are real :class:`~mmrag.runs.records.RunRecord` objects (validated on the way out) over
real PNG files, covering the three benchmark kinds, several scenarios, every strictness level,
distractor counts 0..4, the positive x negative modality cells, two models and all four outcomes.
Outcomes are drawn from a seeded RNG with per-scenario probabilities so that plots show trends,
and tests compare report numbers with what pandas computes from the same rows.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from PIL import Image, ImageDraw

from mmrag.runs.records import RunRecord, record_key
from mmrag.scenarios.spec import ScenarioSpec
from mmrag.schema import (
    DEFLECTION_PHRASE,
    Choice,
    ContentPart,
    Context,
    Document,
    ImageRef,
    Message,
    Prompt,
    Response,
    Sample,
    Usage,
    Verdict,
)

MODELS = ("good-vlm", "weak-vlm")
XSS = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned=2">'


def _image(path: Path, color: tuple[int, int, int], text: str, size: tuple[int, int] = (48, 40)) -> ImageRef:
    if not path.exists():
        im = Image.new("RGB", size, color)
        ImageDraw.Draw(im).text((2, 2), text[:6], fill=(255, 255, 255))
        path.parent.mkdir(parents=True, exist_ok=True)
        im.save(path)
    return ImageRef(path=str(path))


def deflection_specs(full: bool = True) -> list[ScenarioSpec]:
    specs = [
        ScenarioSpec(kind="parametric"),
        ScenarioSpec(kind="oracle", positive_modality="text"),
        ScenarioSpec(kind="oracle", positive_modality="image"),
    ]
    counts = (1, 2, 4) if full else (2,)
    negs = ("text", "image", "multimodal") if full else ("text",)
    for pos in ("text", "image"):
        for n in counts:
            for neg in negs:
                specs.append(
                    ScenarioSpec(kind="realistic", n_distractors=n, positive_modality=pos, negative_modality=neg)
                )
    specs.append(ScenarioSpec(kind="adversarial", n_distractors=2, negative_modality="text"))
    if full:
        for s in ("soft", "moderate", "severe"):
            specs.append(
                ScenarioSpec(
                    kind="realistic", n_distractors=2, positive_modality="text", negative_modality="text", strictness=s
                )
            )
            specs.append(ScenarioSpec(kind="adversarial", n_distractors=2, negative_modality="text", strictness=s))
    return specs


_P_CORRECT = {"parametric": 0.1, "oracle": 0.8, "realistic": 0.6, "adversarial": 0.0}
_P_DEFLECT = {"parametric": 0.6, "oracle": 0.05, "realistic": 0.15, "adversarial": 0.5}
_STRICT_SHIFT = {"none": 0.0, "soft": 0.1, "moderate": 0.2, "severe": 0.35}


def _draw_outcome(rng: random.Random, kind: str, spec: ScenarioSpec, model: str) -> str:
    pc = _P_CORRECT.get(kind, 0.5) - 0.04 * spec.n_distractors * (kind == "realistic")
    pd_ = _P_DEFLECT.get(kind, 0.1) + _STRICT_SHIFT[spec.strictness]
    if model == MODELS[1]:
        pc, pd_ = pc * 0.6, pd_ * 0.5
    u = rng.random()
    if u < 0.04:
        return "unparseable"
    if u < 0.04 + pc:
        return "correct"
    if u < 0.04 + pc + pd_:
        return "deflection"
    return "hallucination"


def _record(
    sample: Sample,
    spec: ScenarioSpec,
    model: str,
    contexts: list[Context],
    outcome: str,
    text: str,
    extracted: str | None,
    choices: list[Choice] | None = None,
    label: str | None = None,
    bench_kind: str = "deflection",
) -> RunRecord:
    parts = [ContentPart(type="image", image=im) for im in sample.images]
    for c in contexts:
        if c.document.image is not None:
            parts.append(ContentPart(type="image", image=c.document.image))
        if c.document.text:
            parts.append(ContentPart(type="text", text=f"Context: {c.document.text}"))
    parts.append(ContentPart(type="text", text=f"Question: {sample.question}"))
    prompt = Prompt(
        sample_id=sample.id,
        scenario=spec.model_dump(mode="json"),
        scenario_id=spec.id,
        template_id=f"{spec.kind}-{spec.strictness}",
        template_version="1",
        messages=[
            Message(role="system", content=[ContentPart(type="text", text="Answer briefly.")]),
            Message(role="user", content=parts),
        ],
        contexts=contexts,
        choices=choices or [],
        label=label,
    )
    fp = f"{model}@fp"
    return RunRecord(
        key=record_key(sample.id, spec.id, fp),
        benchmark=sample.benchmark,
        benchmark_kind=bench_kind,
        scenario_id=spec.id,
        scenario=spec.model_dump(mode="json"),
        model=model,
        model_fingerprint=fp,
        sample=sample,
        prompt=prompt,
        response=Response(
            prompt_id=prompt.id,
            text=text,
            model=model,
            latency_s=0.25,
            usage=Usage(prompt_tokens=50, completion_tokens=5),
            error="timeout" if outcome == "unparseable" and not text else None,
        ),
        verdict=Verdict(outcome=outcome, extracted=extracted, judge_id="rule-v1", reason=f"fixture {outcome}"),
    )


def deflection_records(root: Path, n_questions: int = 4, full: bool = True, seed: int = 0) -> list[RunRecord]:
    rng = random.Random(seed)
    img = root / "images"
    out: list[RunRecord] = []
    for q in range(n_questions):
        for s in range(2):  # two samples (query images) per question
            sid = f"demo-q{q}-s{s}"
            qimg = _image(img / f"query_{q}_{s}.png", (40 * q % 255, 90, 160), f"q{q}")
            src = ("infoseek", "webqa")[q % 2]
            sample = Sample(
                id=sid,
                benchmark="demo",
                question_id=f"demo-q{q}",
                question=f"What is entity {q} made of?",
                images=[qimg],
                answers=[f"answer{q}"],
                source=src,
                metadata={"positive_modality": "text"},
            )
            for spec in deflection_specs(full):
                gold_mod = spec.positive_modality if spec.positive_modality != "any" else "text"
                contexts: list[Context] = []
                if spec.uses_gold:
                    gimg = _image(img / f"gold_{q}.png", (200, 60, 30), "gold") if gold_mod != "text" else None
                    contexts.append(
                        Context(
                            role="gold",
                            score=0.9,
                            document=Document(
                                id=f"gold-{q}",
                                modality=gold_mod,
                                text="" if gold_mod == "image" else f"Entity {q} is made of answer{q}.",
                                image=gimg,
                            ),
                        )
                    )
                if spec.uses_negatives:
                    for k in range(spec.n_distractors):
                        nimg = (
                            _image(img / f"neg_{q}_{k}.png", (30, 150, 40 * k % 255), f"n{k}")
                            if spec.negative_modality != "text"
                            else None
                        )
                        contexts.append(
                            Context(
                                role="negative",
                                score=0.5,
                                document=Document(
                                    id=f"neg-{q}-{k}",
                                    modality=spec.negative_modality,
                                    image=nimg,
                                    text=""
                                    if spec.negative_modality == "image"
                                    else f"Entity {q + 1} is made of wood {k}.",
                                ),
                            )
                        )
                for model in MODELS:
                    outcome = _draw_outcome(rng, spec.kind, spec, model)
                    text, ext = {
                        "correct": (f"answer{q}", f"answer{q}"),
                        "deflection": (DEFLECTION_PHRASE, None),
                        "hallucination": (f"wood {q}", f"wood {q}"),
                        "unparseable": ("", None),
                    }[outcome]
                    out.append(_record(sample, spec, model, contexts, outcome, text, ext))
    return out


def humblebench_records(root: Path, n_questions: int = 6, seed: int = 1) -> list[RunRecord]:
    rng = random.Random(seed)
    stresses = [(), ("noise_image",), ("nota_only",), ("shuffle_options",), ("cautious_prompt",)]
    types = ("Object", "Attribute", "Relation")
    out: list[RunRecord] = []
    for q in range(n_questions):
        qimg = _image(root / "images" / f"hb_{q}.png", (10, 10 + 30 * q % 255, 200), f"hb{q}")
        choices = [Choice(letter=L, text=f"option {L.lower()}{q}") for L in "ABCD"]
        choices.append(Choice(letter="E", text="None of the above", is_nota=True))
        label = "ABCDE"[q % 5]
        sample = Sample(
            id=f"hb-{q}",
            benchmark="humblebench",
            question_id=f"hb-{q}",
            question=f"Which object {q}?",
            images=[qimg],
            choices=choices,
            label=label,
            source="humblebench",
            metadata={"type": types[q % 3]},
        )
        for stress in stresses:
            spec = ScenarioSpec(kind="humblebench", stress=stress)
            eff_choices, eff_label = list(choices), label
            if "nota_only" in stress and label != "E":
                eff_choices = [c for c in choices if c.letter != label]
                eff_label = "E"
            for model in MODELS:
                p_nota = 0.7 if stress and model == MODELS[0] else 0.2
                u = rng.random()
                if u < 0.05:
                    ext, text = None, "I think maybe"
                elif u < 0.05 + p_nota:
                    ext, text = "E", "E"
                else:
                    ext = rng.choice([c.letter for c in eff_choices])
                    text = ext
                outcome = "unparseable" if ext is None else ("correct" if ext == eff_label else "hallucination")
                out.append(_record(sample, spec, model, [], outcome, text, ext, eff_choices, eff_label, "humblebench"))
    return out


def knowhal_records(root: Path, n_questions: int = 8, seed: int = 2) -> list[RunRecord]:
    rng = random.Random(seed)
    dims = ("E", "A", "R", "K")  # as mmrag.metrics.knowhal names them
    spec = ScenarioSpec(kind="knowhal")
    out: list[RunRecord] = []
    for q in range(n_questions):
        qimg = _image(root / "images" / f"kh_{q}.png", (120, 20 * q % 255, 20), f"kh{q}")
        for pol in ("positive", "negative"):
            sample = Sample(
                id=f"kh-{q}-{pol}",
                benchmark="knowhal",
                question_id=f"kh-{q}",
                question=f"What color is thing {q}?" if pol == "positive" else f"Why is the cat {q} flying?",
                images=[qimg],
                answers=[f"red{q}"],
                source="knowhal",
                metadata={"dimension": dims[q % 4], "polarity": pol, "pair_id": f"kh-pair-{q}"},
            )
            for model in MODELS:
                pc = (0.8 if pol == "positive" else 0.4) * (1.0 if model == MODELS[0] else 0.7)
                u = rng.random()
                outcome = "correct" if u < pc else ("deflection" if u < pc + 0.1 else "hallucination")
                out.append(_record(sample, spec, model, [], outcome, f"reply {outcome}", None, bench_kind="knowhal"))
    return out


def write_run(run_dir: Path, records: list[RunRecord], *, truncated_tail: bool = False) -> Path:
    """Write ``samples.jsonl`` + a minimal manifest; optionally cut a last line short."""
    run_dir.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(r.model_dump(mode="json"), ensure_ascii=False) for r in records]
    text = "\n".join(lines) + "\n"
    if truncated_tail:
        text += lines[0][: len(lines[0]) // 2]
    (run_dir / "samples.jsonl").write_text(text, encoding="utf-8")
    (run_dir / "manifest.json").write_text(json.dumps({"argv": ["mmrag", "run"], "fixture": True}), encoding="utf-8")
    return run_dir


def build_run(
    root: Path, name: str = "run", *, full: bool = True, xss: bool = False, truncated_tail: bool = False
) -> Path:
    """A run directory with all three benchmark kinds (``full=False`` keeps it small for the browser)."""
    recs = deflection_records(root, n_questions=4 if full else 2, full=full)
    recs += humblebench_records(root, n_questions=6 if full else 3)
    recs += knowhal_records(root, n_questions=8 if full else 4)
    if xss:
        r = recs[0]
        r.response.text = XSS
        r.verdict.reason = XSS
    return write_run(root / name, recs, truncated_tail=truncated_tail)
