"""Inputs for the judge tests: a sample, prompt and reply built in one call, a source-tagged variant,
the five-option animal question, the hand-labelled file, and a judge model that replies by script.

The scripted model implements the VLM protocol for real, so the judges under test call it exactly as
they call a served model; the tests then read back what was sent.
"""

from __future__ import annotations

from pathlib import Path

from mmrag.models.base import Capabilities
from mmrag.schema import Choice, ContentPart, Message, Prompt, Response, Sample

DATA = Path(__file__).parent / "labels" / "hand_labelled.jsonl"
CH = [
    Choice(letter=l, text=t, is_nota=(l == "E"))
    for l, t in zip("ABCDE", ["cat", "dog", "rabbit", "parrot", "None of the above"])
]


def item(
    question="Q?",
    answers=("Paris",),
    text="",
    *,
    choices=(),
    label=None,
    error=None,
    ranges=(),
    meta=None,
    prompt_choices=None,
    prompt_label=None,
):
    s = Sample(
        id="s1",
        benchmark="t",
        question=question,
        answers=list(answers),
        choices=list(choices),
        label=label,
        numeric_ranges=list(ranges),
        metadata=meta or {},
    )
    p = Prompt(
        sample_id="s1",
        choices=list(prompt_choices or []),
        label=prompt_label,
        messages=[Message(role="user", content=[ContentPart(type="text", text=question)])],
    )
    return s, p, Response(prompt_id=p.id, text=text, error=error)


class ScriptedJudgeModel:
    """Implements the VLM protocol; replies by a script keyed on text in the prompt."""

    fingerprint = "scripted-judge"
    capabilities = Capabilities()

    def __init__(self, script):
        self.script = script
        self.calls: list[list[Prompt]] = []

    async def agenerate(self, prompts, settings):
        return self.generate(prompts, settings)

    def generate(self, prompts, settings):
        self.calls.append(list(prompts))
        out = []
        for p in prompts:
            assert all(part.type == "text" for m in p.messages for part in m.content)
            reply = self.script(p.messages[-1].text())
            if isinstance(reply, tuple):
                out.append(Response(prompt_id=p.id, error=reply[0]))
            else:
                out.append(Response(prompt_id=p.id, text=reply))
        return out


def src_item(source, question, answers, text, *, qtype=None, meta=None, ranges=()):
    s, p, r = item(
        question=question,
        answers=answers,
        text=text,
        ranges=ranges,
        meta={**(meta or {}), **({"question_type": qtype} if qtype else {})},
    )
    return s.model_copy(update={"source": source}), p, r
