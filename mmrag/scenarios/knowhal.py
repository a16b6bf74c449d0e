"""KnowHal as a no-context scenario: the image and the question, nothing retrieved.

Entity, Attribute and Knowledge questions (positive and false-premise alike) are open-ended;
Relation questions are multiple choice, recognised by the sample carrying ``choices`` (the loader
fills them from the record's ``options``), and get their options listed as "A. text" lines.

``strictness`` other than ``none`` appends that strictness template's instruction after KnowHal's
own, so one can ask whether permission to deflect reduces false-premise acceptance; the paper
itself uses no such instruction (strictness ``none`` = the plain question).
"""

from __future__ import annotations

from typing import Any

from mmrag.scenarios.base import copy_choices, finish_prompt, option_lines
from mmrag.scenarios.render import build_messages
from mmrag.scenarios.spec import ScenarioSpec
from mmrag.scenarios.templates import get_template
from mmrag.schema import Prompt, Sample

OPEN_TEMPLATE = "knowhal-open"
MCQ_TEMPLATE = "knowhal-relation-mcq"


def build_knowhal_prompt(sample: Sample, spec: ScenarioSpec, miner: Any = None, store: Any = None) -> Prompt:
    main = get_template(spec.template or (MCQ_TEMPLATE if sample.choices else OPEN_TEMPLATE))
    templates = [main]
    body = main.fill("question", question=sample.question)
    if sample.choices:
        body += "\n" + option_lines(sample.choices)
    instructions = [main.fill("text")]
    if spec.strictness != "none":
        strict = get_template(f"strictness-{spec.strictness}")
        templates.append(strict)
        instructions.append(strict.fill("text"))
    body += "".join("\n" + s for s in instructions if s)
    messages = build_messages(system=main.fill("system") or None, query_images=list(sample.images), body=body)
    meta = {
        "format": "mcq" if sample.choices else "open",
        "dimension": sample.metadata.get("dimension"),
        "polarity": sample.metadata.get("polarity"),
    }
    return finish_prompt(
        sample, spec, messages, templates, choices=copy_choices(sample.choices), label=sample.label, metadata=meta
    )
