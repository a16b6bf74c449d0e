"""The rule judge for open answers: the cascade of scorers (:mod:`.cascade`, :mod:`.scorers`).

The reply is read once (:class:`~mmrag.judging.cascade.Reading`: the final answer after reasoning
and markers, its refusal clauses, the source's answer-rule match, the slot conflicts) and the
registered scorers are tried in their declared order; the first that finds evidence decides, and
a reply none decides is undecided (outcome ``unparseable``, ``details["undecided"]`` its cause).
Failed, cut-off, withheld and empty replies are never judged (:func:`.failed.unjudged`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import mmrag.judging.evqa  # noqa: F401  (registers the evqa / vqa / knowhal answer rules)
import mmrag.judging.scorers  # noqa: F401  (registers the built-in scorers)
import mmrag.judging.webqa  # noqa: F401  (registers the webqa answer rule)
from mmrag.judging.cascade import Reading, cascade, run
from mmrag.judging.failed import unjudged
from mmrag.judging.normalize import Variant
from mmrag.judging.refusal import DEFAULT_DETECTOR, DeflectionDetector
from mmrag.judging.rules import AnswerContext
from mmrag.schema import Prompt, Response, Sample, Verdict


@dataclass
class OpenAnswerConfig:
    """Knobs of the open-answer rules (defaults documented in docs/judging.md)."""

    variant: Variant = "evalai"
    numeric_tolerance: float = 0.1


def alternatives_of(answers: Sequence[Any]) -> list[str]:
    """Reference strings with raw '|' alternatives split (E-VQA's release writes "Danube|Donau")."""
    out: list[str] = []
    for a in answers:
        if isinstance(a, str):
            out.extend(p.strip() for p in a.split("|") if p.strip()) if "|" in a else out.append(a)
    return out


def context_of(sample: Sample) -> AnswerContext:
    qt = sample.metadata.get("question_type")
    return AnswerContext(
        question=sample.question,
        answers=alternatives_of(sample.answers),
        numeric_ranges=list(sample.numeric_ranges),
        question_type=str(qt) if qt else None,
        metadata=dict(sample.metadata),
    )


class OpenAnswerJudge:
    """Open answers by the cascade (see the module docstring)."""

    judge_id = "rule-open@4"

    def __init__(self, config: OpenAnswerConfig | None = None, detector: DeflectionDetector | None = None) -> None:
        self.config = config or OpenAnswerConfig()
        self.detector = detector or DEFAULT_DETECTOR
        self.scorers = cascade()

    def reading(self, sample: Sample, response: Response, rule_name: str | None = None) -> Reading:
        return Reading(sample, response, rule_name, self.config.variant, self.detector)

    def judge(self, sample: Sample, prompt: Prompt, response: Response, rule_name: str | None = None) -> Verdict:
        """``rule_name`` overrides the answer rule the sample's source picks (KnowHal positives
        always use the ``knowhal`` VQA rule)."""
        v = unjudged(response, self.judge_id) or run(self.reading(sample, response, rule_name), self.scorers)
        v.judge_id = self.judge_id
        return v

    def judge_many(self, items: Sequence[tuple[Sample, Prompt, Response]]) -> list[Verdict]:
        return [self.judge(*it) for it in items]
