"""``sim-vlm``: a simulated VLM whose biases are parameters — the instrument's calibration source.

No real VLM weights can be had offline, and the baselines cannot see, so nothing else lets one check
that mmrag's scenarios, judge and metrics *move the way a model's behaviour does*.  This model
answers demo-world prompts (knowledge questions, HumbleBench-style scenes, KnowHal-style pairs) with
perception from :mod:`mmrag.models.sim_world` and these documented biases (``SimParams``):

* ``vision`` — reliability of seeing: query-image-to-evidence matching and reading what an image
  shows are feature matches with Gaussian noise of sd ``0.5 * (1 - vision)`` on the cosines;
  HumbleBench options are perceived wrongly with probability ``(1 - vision) / 2`` each;
* ``text_prior`` — when the text evidence and the image evidence point to different entities, the
  probability of following the text (the language-over-vision bias); on a KnowHal false premise
  (the question's words against the image) the probability of going along with the words;
* ``parametric`` — the share of facts known without context, decided per fact by a seeded hash;
* ``deflect_threshold``, ``strictness_gain`` — it deflects when its confidence is below
  ``deflect_threshold + strictness_gain * s``, where ``s`` in [0, 1] is read from the *rendered*
  prompt text (:func:`strictness_level`), so a reworded template changes its behaviour;
* ``verbosity`` — ``short`` (the bare answer or letter), ``sentence`` ("The answer is X."),
  ``reasoning`` (a sentence on the evidence used, then "Answer: X").

Every random choice draws from its own stream seeded by (``settings.seed``, the prompt content
without the instruction, the decision's name), so the same item makes the same draws at every
strictness level and every parameter value: sweeping one parameter changes outcomes monotonically
item by item.  Options come from the model spec (``sim-vlm:text_prior=0.9,vision=0.8`` on the
command line, or ``options:`` in a run config).  It is a calibration tool, never a stand-in for a
real VLM's numbers.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mmrag.errors import InputError, pydantic_field, pydantic_message
from mmrag.models.base import GenerationSettings, ModelSpec
from mmrag.models.baselines import Baseline
from mmrag.models.render import question_text
from mmrag.models.sim_world import VISUAL_SLOTS, World, find_world, recognise, world_for
from mmrag.schema import DEFLECTION_PHRASE, ImageRef, Prompt, is_nota_text, stable_id

SIGMA_AT_BLIND = 0.5  # noise sd on cosines at vision=0: look-alikes and strangers become confusable
CONFIDENCE_JITTER = 0.25  # confidence = base + U(-j, j): spreads items over the threshold range

#: Cues of strictness in the instruction; ``s`` = the share of cues present (0, 1/3, 2/3, 1).
STRICTNESS_CUES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("may_deflect", re.compile(re.escape(DEFLECTION_PHRASE) + r"|\bcannot answer\b", re.I)),
    ("asks_confidence", re.compile(r"\b(?:confident|unsure|doubt\w*|certain)\b", re.I)),
    (
        "demands_certainty",
        re.compile(r"\bcompletely certain\b|\bany doubt\b|\bnothing else\b|\babsolutely sure\b", re.I),
    ),
)
_NOTA_ADVICE = re.compile(r"choose\W+none of the above", re.I)


class SimParams(BaseModel):
    """The simulator's parameters (see the module docstring and docs/models.md)."""

    model_config = ConfigDict(extra="forbid")
    vision: float = Field(0.8, ge=0.0, le=1.0)
    text_prior: float = Field(0.5, ge=0.0, le=1.0)
    parametric: float = Field(0.0, ge=0.0, le=1.0)
    deflect_threshold: float = Field(0.25, ge=0.0, le=1.0)
    strictness_gain: float = Field(0.5, ge=0.0, le=1.0)
    verbosity: Literal["short", "sentence", "reasoning"] = "short"
    world: str | None = None


def strictness_level(instruction: str) -> float:
    """How strict the rendered instruction is, in [0, 1]: the share of STRICTNESS_CUES it contains."""
    return sum(1 for _, rx in STRICTNESS_CUES if rx.search(instruction)) / len(STRICTNESS_CUES)


def parse_inline(text: str) -> dict[str, str]:
    """``"text_prior=0.9,vision=0.8"`` (the part after ``sim-vlm:``) to options; values stay strings
    and are validated (and converted) by :class:`SimParams`."""
    out: dict[str, str] = {}
    for item in filter(None, (x.strip() for x in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"'{item}' is not NAME=VALUE (e.g. sim-vlm:text_prior=0.9,vision=0.8)", field="--model")
        out[key.strip()] = value.strip()
    return out


@dataclass
class Answer:
    """A decision: the answer (None = nothing to say), its confidence, and why (for ``reasoning``)."""

    value: str | None
    confidence: float
    why: str
    letter: bool = False


@dataclass
class Item:
    """One evidence document as the model reads it: display number, channel, entity, view."""

    number: int
    channel: Literal["text", "image"]
    entity: dict[str, Any] | None
    text: str
    image: ImageRef | None
    view: str | None


class Situation:
    """Everything one answer depends on: the world, the parameters, seeded streams, the evidence."""

    def __init__(self, world: World, params: SimParams, prompt: Prompt, seed: int) -> None:
        self.world, self.p, self.prompt = world, params, prompt
        ctx_images = {c.document.image.path for c in prompt.contexts if c.document.image is not None}
        self.query_images = [im for im in prompt.images() if im.path not in ctx_images]
        self.question = question_text(prompt)
        self.items = [self._item(i, c.document) for i, c in enumerate(prompt.contexts, start=1)]
        key = [
            self.question,
            [c.text for c in prompt.choices],
            [im.content_hash() for im in self.query_images],
            [[it.channel, it.text, it.image.content_hash() if it.image else None] for it in self.items],
        ]
        self.key = stable_id(seed, key, length=32)
        self.sigma = SIGMA_AT_BLIND * (1.0 - params.vision)

    def _item(self, number: int, doc: Any) -> Item:
        entity = self.world.entity_named_in(doc.title, doc.text)
        label = f"{doc.title} {doc.text}".lower()
        view = "flag" if "flag" in label else "emblem" if "emblem" in label else None
        channel: Literal["text", "image"] = "text" if doc.modality == "text" else "image"
        return Item(number, channel, entity, doc.text, doc.image, view if channel == "image" else None)

    def rng(self, *tag: Any) -> np.random.Generator:
        return np.random.default_rng(int(stable_id(self.key, *tag), 16))

    def uniform(self, *tag: Any) -> float:
        return float(self.rng(*tag).random())

    def knows(self, entity: dict[str, Any], slot: str) -> bool:
        """Parametric knowledge, seeded per fact (not per prompt): the same facts at every scenario."""
        return int(stable_id("parametric", entity["id"], slot), 16) / 16**16 < self.p.parametric

    def see(self, image: ImageRef, view: str, tag: Any) -> dict[str, Any]:
        """The entity whose drawing the model takes ``image`` to be (noisy recognition)."""
        idx = recognise(self.world.features(image), self.world.galleries[view], self.sigma, self.rng("see", tag))
        return self.world.entities[idx]


# -- the three kinds of demo item ----------------------------------------------------------------


def _points_text(s: Situation, target: dict[str, Any] | None, slot: str) -> Item | None:
    items = [it for it in s.items if it.channel == "text"]
    if not items:
        return None
    for it in items:
        if target is not None and it.entity is target:
            return it
    stating = [it for it in items if it.entity and (v := s.world.value(it.entity, slot)) and v in it.text]
    pool = stating or items
    return pool[int(s.rng("text-pick").integers(len(pool)))]


def _points_image(s: Situation, target: dict[str, Any] | None) -> Item | None:
    items = [it for it in s.items if it.channel == "image" and it.image is not None]
    if not items:
        return None
    if target is None and s.query_images:
        feats = [s.world.features(it.image) for it in items]  # type: ignore[arg-type]
        dim = next((f.shape[0] for f in feats if f is not None), 1)
        stack = np.stack([f if f is not None else np.zeros(dim, np.float32) for f in feats])
        return items[recognise(s.world.features(s.query_images[0]), stack, s.sigma, s.rng("match"))]
    for it in items:
        if target is not None and it.entity is target:
            return it
    return items[int(s.rng("image-pick").integers(len(items)))]


def answer_knowledge(s: Situation) -> Answer | None:
    """A demo knowledge question: choose the entity (text vs image channel), then read, recall or guess."""
    parsed = s.world.parse_question(s.question)
    if parsed is None:
        return None
    slot, target, named = parsed
    tp, ip = _points_text(s, target, slot), _points_image(s, target)
    e_t = tp.entity if tp else None
    e_i = ip.entity if ip else None
    if e_i is None and not named and s.query_images and ip is None:  # no image evidence: own visual memory
        gal = np.concatenate([s.world.galleries["flag"], s.world.galleries["emblem"]])
        idx = recognise(s.world.features(s.query_images[0]), gal, s.sigma, s.rng("memory"))
        e_i = s.world.entities[idx % len(s.world.entities)]
    conflict = e_t is not None and e_i is not None and e_t is not e_i
    if conflict:
        entity = e_t if s.uniform("conflict") < s.p.text_prior else e_i
    else:
        entity = e_t or e_i or target
    ans = _grounded(s, entity, slot)
    if named and entity is not target:  # the evidence followed is about another entity than the one asked
        if target is not None and s.knows(target, slot):
            ans = Answer(s.world.value(target, slot), 0.75, "I know this fact about the entity asked.")
        elif ans is not None:
            ans.confidence *= 0.55
    if ans is None:
        who = target if named else entity
        if who is not None and s.knows(who, slot):
            ans = Answer(s.world.value(who, slot), 0.75, "I know this fact from memory.")
        else:
            dom = s.world.domain(slot)
            guess = dom[int(s.rng("guess").integers(len(dom)))] if dom else None
            ans = Answer(guess, 0.15, "Nothing shown states it directly.")
    if conflict:
        ans.confidence *= 0.85
    return ans


def _grounded(s: Situation, entity: dict[str, Any] | None, slot: str) -> Answer | None:
    if entity is None:
        return None
    if slot in VISUAL_SLOTS:
        view = VISUAL_SLOTS[slot][0]
        for it in s.items:
            if it.channel == "image" and it.entity is entity and it.view == view and it.image is not None:
                seen = s.see(it.image, view, it.number)
                return Answer(
                    s.world.value(seen, slot),
                    0.55 + 0.35 * s.p.vision,
                    f"Image [{it.number}] shows the {view} of {entity['name']}.",
                )
        return None
    value = s.world.value(entity, slot)
    for it in s.items:
        if it.channel == "text" and it.entity is entity and value and value in it.text:
            return Answer(value, 0.9, f"Passage [{it.number}] is about {entity['name']}.")
    return None


def answer_scene(s: Situation) -> Answer | None:
    """A HumbleBench-style MCQ over a drawn scene: perceive each option's truth, then choose."""
    choices = s.prompt.choices
    if not choices or not s.query_images:
        return None
    scene = s.world.scenes.get(s.query_images[0].content_hash())
    truth: dict[str, bool] = {}
    if scene is not None:
        q = " ".join(s.question.lower().split())
        for item in scene["questions"]:
            if item["stem"].lower() in q:
                truth = {t.strip().lower(): bool(v) for t, v in zip(item["options"], item["option_truth"])}
    flip = 0.5 * (1.0 - s.p.vision)
    options = [c for c in choices if not (c.is_nota or is_nota_text(c.text))]
    seen = [c for c in options if truth.get(c.text.strip().lower(), False) != (s.uniform("flip", c.text) < flip)]
    nota = next((c for c in choices if c.is_nota or is_nota_text(c.text)), None)
    if len(seen) == 1:
        return Answer(seen[0].letter, 0.85, f"The image matches option {seen[0].letter}.", letter=True)
    if not seen and nota is not None:
        return Answer(nota.letter, 0.7, "No listed object fits what the image shows.", letter=True)
    pool = seen or options
    pick = pool[int(s.rng("mcq-pick").integers(len(pool)))]
    if nota is not None and _NOTA_ADVICE.search(_instruction(s.prompt)):
        return Answer(nota.letter, 0.5, "The image does not clearly confirm one option.", letter=True)
    return Answer(pick.letter, 0.3, f"Option {pick.letter} seems closest.", letter=True)


def answer_knowhal(s: Situation) -> Answer | None:
    """A KnowHal-style question about an emblem view: answer it, or reject / accept a false premise."""
    from mmrag.models.sim_knowhal import parse_knowhal, respond_knowhal

    parsed = parse_knowhal(s.question)
    if parsed is None or not s.query_images:
        return None
    seen = s.see(s.query_images[0], "emblem", "knowhal")
    return respond_knowhal(parsed, seen, s)


READERS: tuple[Callable[[Situation], Answer | None], ...] = (answer_knowhal, answer_scene, answer_knowledge)


def _instruction(prompt: Prompt) -> str:
    """The prompt's own words: every text part with the evidence and the question taken out."""
    text = "\n".join(m.text() for m in prompt.messages)
    for c in prompt.contexts:
        for part in (c.document.text, c.document.title):
            if part:
                text = text.replace(part, " ")
    return text.replace(question_text(prompt), " ")


class SimVLM(Baseline):
    """The simulated VLM (see the module docstring).  Deterministic per (parameters, seed, prompt)."""

    name = "sim-vlm"
    version = "1"

    def __init__(self, **options: Any) -> None:
        try:
            self.params = SimParams(**options)
        except ValidationError as exc:
            raise InputError(pydantic_message(exc), field="options." + pydantic_field(exc)) from None
        if self.params.world:
            find_world([], self.params.world)  # a bad folder is an error now, not at the first prompt
        super().__init__(**self.params.model_dump(exclude_none=True))

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> SimVLM:
        inline = parse_inline(spec.model)
        both = sorted(set(inline) & set(spec.options))
        if both:
            raise InputError(
                f"option(s) {', '.join(both)} given both in the model name and in options", field="options"
            )
        return cls(**{**inline, **spec.options})

    def unfit(self, plan: Any) -> str | None:
        """Why the simulated VLM will deflect on every item of ``plan``: it knows one generated demo
        world, and none of the plan's samples is about an entity of it."""
        samples = plan.samples[:50]
        if not samples:
            return None
        known = 0
        for s in samples:
            root = find_world(list(s.images), self.params.world)
            known += root is not None and s.entity_id in world_for(root).by_id
        if known:
            return None
        return f"{self.name} knows only the demo world, not the entities of {plan.ref.name}: expect 100 % deflection"

    def answer(self, prompt: Prompt, settings: GenerationSettings | None = None) -> str:
        seed = settings.seed if settings is not None and settings.seed is not None else 0
        root = find_world(prompt.images(), self.params.world)
        if root is None:
            return self.say(None, "I know nothing of this world.")
        s = Situation(world_for(root), self.params, prompt, seed)
        ans = next((a for reader in READERS if (a := reader(s)) is not None), None)
        threshold = self.params.deflect_threshold + self.params.strictness_gain * strictness_level(_instruction(prompt))
        if ans is None or ans.value is None:
            return self.say(None, "The question is outside what I can read.")
        conf = ans.confidence + CONFIDENCE_JITTER * (2.0 * s.uniform("confidence") - 1.0)
        if conf < threshold:
            return self.say(None, ans.why)
        return self.say(ans.value, ans.why, letter=ans.letter)

    def say(self, value: str | None, why: str, letter: bool = False) -> str:
        """Put the decision into words in the configured verbosity."""
        v = self.params.verbosity
        if value is None:
            return DEFLECTION_PHRASE if v != "reasoning" else f"{why} {DEFLECTION_PHRASE}"
        if v == "short":
            return value
        if v == "sentence":
            return f"The answer is {value}."
        return f"{why} Answer: {value}"
