"""Baselines as models: the floors of every results table.

They implement the VLM protocol so a run treats them like any backend (``--model always-deflect``),
but they are not VLMs: none looks at an image, and all are deterministic.  Each reads only the
prompt (``prompt.choices`` are the effective options after stress transforms) and answers with a
bare letter for multiple-choice prompts.

* ``always-deflect`` — always says :data:`~mmrag.schema.DEFLECTION_PHRASE`: the deflection ceiling
  (perfect on adversarial / unanswerable items, zero accuracy).
* ``random-choice`` — a letter drawn uniformly from ``prompt.choices`` with a generator seeded by
  (``settings.seed`` of the generation settings, prompt id), so re-runs agree and a different seed
  gives an independent draw.  For an open question it says a random word of the
  prompt's own text that is not in the question (``open="word"``, the default: a guesser that never
  deflects, like its MCQ behaviour), or deflects (``open="deflect"``); with no such word it deflects.
* ``always-nota`` — the letter of the "None of the above" option (found by its flag or text, never
  by position); deflects when there is no NOTA option or no options at all.
* ``first-option`` — the first option's letter; deflects on open questions.

The context-reader (text-only extractive reading with MiniLM) lives in ``context_reader.py``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any

from mmrag.errors import InputError
from mmrag.models.aio import run_sync
from mmrag.models.base import Capabilities, GenerationSettings, ModelSpec
from mmrag.models.render import question_text
from mmrag.schema import DEFLECTION_PHRASE, Prompt, Response, canonical_json, is_nota_text, stable_id

_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]{2,}")


class Baseline:
    """Shared plumbing: fingerprint, capabilities, the (sync-computed) protocol methods."""

    name = "baseline"
    version = "1"

    def __init__(self, **options: Any) -> None:
        self.options = options
        opts = canonical_json(options) if options else ""
        self.fingerprint = f"baseline:{self.name}@{self.version}{opts}"
        self.capabilities = Capabilities(max_images=None, system_prompt=True)

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> Baseline:
        return cls(**spec.options)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.options!r})"

    def answer(self, prompt: Prompt, settings: GenerationSettings | None = None) -> str:
        raise NotImplementedError

    def answer_batch(self, prompts: Sequence[Prompt], settings: GenerationSettings | None = None) -> list[str]:
        return [self.answer(p, settings) for p in prompts]

    def cache_key_extra(self, prompt: Prompt) -> dict[str, Any]:
        """Baselines answer from more than the messages, so all of it enters the cache key."""
        return {
            "id": prompt.id,
            "choices": [c.model_dump(mode="json") for c in prompt.choices],
            "question": question_text(prompt),
            "contexts": [[c.document.id, c.document.text] for c in prompt.contexts],
        }

    async def agenerate(self, prompts: Sequence[Prompt], settings: GenerationSettings) -> list[Response]:
        return self._respond(prompts, settings)

    def generate(self, prompts: Sequence[Prompt], settings: GenerationSettings | None = None) -> list[Response]:
        settings = settings if settings is not None else GenerationSettings()
        return run_sync(lambda: self.agenerate(prompts, settings))

    def _respond(self, prompts: Sequence[Prompt], settings: GenerationSettings) -> list[Response]:
        return [
            Response(prompt_id=p.id, text=t, model=self.fingerprint)
            for p, t in zip(prompts, self.answer_batch(prompts, settings))
        ]


class AlwaysDeflect(Baseline):
    name = "always-deflect"

    def answer(self, prompt: Prompt, settings: GenerationSettings | None = None) -> str:
        return DEFLECTION_PHRASE


class RandomChoice(Baseline):
    name = "random-choice"

    def __init__(self, open: str = "word") -> None:  # noqa: A002 - option name
        if open not in ("word", "deflect"):
            raise InputError(f"open must be 'word' or 'deflect', not {open!r}", field="options.open")
        super().__init__(open=open)
        self.open = open

    @staticmethod
    def rng(prompt: Prompt, settings: GenerationSettings | None) -> random.Random:
        seed = settings.seed if settings is not None and settings.seed is not None else 0
        return random.Random(int(stable_id(seed, prompt.id), 16))

    def answer(self, prompt: Prompt, settings: GenerationSettings | None = None) -> str:
        rng = self.rng(prompt, settings)
        if prompt.choices:
            return rng.choice(prompt.choices).letter
        if self.open == "deflect":
            return DEFLECTION_PHRASE
        q = {w.lower() for w in _WORD.findall(question_text(prompt))}
        text = " ".join(m.text() for m in prompt.messages)
        words = sorted({w for w in _WORD.findall(text) if w.lower() not in q})
        return rng.choice(words) if words else DEFLECTION_PHRASE


class AlwaysNota(Baseline):
    name = "always-nota"

    def answer(self, prompt: Prompt, settings: GenerationSettings | None = None) -> str:
        for c in prompt.choices:
            if c.is_nota or is_nota_text(c.text):
                return c.letter
        return DEFLECTION_PHRASE


class FirstOption(Baseline):
    name = "first-option"

    def answer(self, prompt: Prompt, settings: GenerationSettings | None = None) -> str:
        return prompt.choices[0].letter if prompt.choices else DEFLECTION_PHRASE


BASELINES: dict[str, type[Baseline]] = {c.name: c for c in (AlwaysDeflect, RandomChoice, AlwaysNota, FirstOption)}
