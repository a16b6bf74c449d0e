"""One reply through the rule judge, for the step-by-step judge tests."""

from __future__ import annotations

from mmrag.judging import RuleJudge
from mmrag.schema import Prompt, Response, Sample, Verdict


def judge(
    question: str, answers: list[str], reply: str, source: str = "viquae", finish_reason: str | None = None
) -> Verdict:
    s = Sample(id="s", benchmark="t", question=question, answers=list(answers), source=source)
    p = Prompt(sample_id="s", messages=[])
    return RuleJudge().judge(s, p, Response(prompt_id=p.id, text=reply, finish_reason=finish_reason))
