"""The Judge protocol: from (sample, prompt, response) to a Verdict."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from mmrag.registry import Registry
from mmrag.schema import Prompt, Response, Sample, Verdict


@runtime_checkable
class Judge(Protocol):
    judge_id: str

    def judge(self, sample: Sample, prompt: Prompt, response: Response) -> Verdict: ...


JUDGES: Registry[Judge] = Registry("judge", group="mmrag.judges")
