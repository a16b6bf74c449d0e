"""The judge's shared types, kept apart so the steps that produce them and the steps that read them
import one module and never each other: the Judge protocol, what an answer rule sees and returns
(:class:`AnswerContext`, :class:`Match`) and a slot contradiction (:class:`Conflict`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from mmrag.registry import Registry
from mmrag.schema import Prompt, Response, Sample, Verdict


@runtime_checkable
class Judge(Protocol):
    judge_id: str

    def judge(self, sample: Sample, prompt: Prompt, response: Response) -> Verdict: ...


JUDGES: Registry[Judge] = Registry("judge", group="mmrag.judges")


@dataclass
class AnswerContext:
    """What a rule may look at besides the reply."""

    question: str
    answers: list[str]
    numeric_ranges: list[tuple[float, float]] = field(default_factory=list)
    question_type: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class Match:
    status: str  # gives | contradicts | absent
    extracted: str | None = None
    reason: str = ""
    certain: bool = True
    kind: str = ""  # exact | range | quantity | contains | yes/no | key phrase | list | category | name
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Conflict:
    kind: str  # amount | count | swap | attribution | direction | class | entity | order | rival
    detail: str
