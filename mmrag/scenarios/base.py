"""What every scenario builder shares: the not-applicable signal, seeding and the final assembly
of a :class:`~mmrag.schema.Prompt`.

A builder is ``(sample, spec, miner, store) -> Prompt``; each scenario kind
(:mod:`mmrag.scenarios.kinds`) names its builder, so :func:`mmrag.scenarios.compose` never
dispatches on names and a third party adds a kind by registering a ScenarioKind.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from typing import Any

from mmrag.errors import MmragError
from mmrag.scenarios.spec import ScenarioSpec
from mmrag.scenarios.templates import PromptTemplate, stamp_templates
from mmrag.schema import Choice, Context, Message, Prompt, Sample, canonical_json

Builder = Callable[..., Prompt]


class ScenarioNotApplicable(MmragError):
    """This sample cannot be shown under this spec (e.g. an oracle with positive modality 'image'
    for a sample whose gold evidence is all text, or a HumbleBench stress on an item without
    options).  The run layer skips such cells and counts them; it must never score them."""

    def __init__(self, sample_id: str, spec_id: str, reason: str) -> None:
        self.sample_id = sample_id
        self.spec_id = spec_id
        self.reason = reason
        super().__init__(f"sample '{sample_id}' does not fit scenario '{spec_id}': {reason}")


def seeded_rng(spec: ScenarioSpec, sample: Sample, purpose: str) -> random.Random:
    """A private RNG per (seed, sample, purpose): composing is reproducible and independent of the
    order in which samples are composed, and two purposes never share a stream."""
    digest = hashlib.sha256(canonical_json([spec.seed, sample.id, purpose]).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def copy_choices(choices: list[Choice]) -> list[Choice]:
    """Fresh Choice objects, so that nothing the prompt carries aliases the sample's."""
    return [Choice(letter=c.letter, text=c.text, is_nota=c.is_nota) for c in choices]


def option_lines(choices: list[Choice]) -> str:
    return "\n".join(f"{c.letter}. {c.text}" for c in choices)


def finish_prompt(
    sample: Sample,
    spec: ScenarioSpec,
    messages: list[Message],
    templates: list[PromptTemplate],
    *,
    contexts: list[Context] | None = None,
    choices: list[Choice] | None = None,
    label: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> Prompt:
    tid, tver, thash, parts = stamp_templates(templates)
    meta = {"question": sample.question, **(metadata or {}), "templates": parts}
    return Prompt(
        sample_id=sample.id,
        messages=messages,
        scenario=spec.model_dump(mode="json"),
        scenario_id=spec.id,
        template_id=tid,
        template_version=tver,
        template_hash=thash,
        contexts=list(contexts or []),
        choices=list(choices or []),
        label=label,
        metadata=meta,
    )
