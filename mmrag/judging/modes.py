"""The three judging modes: rules only, LLM only, rules then LLM for what rules leave undecided.

:class:`RuleJudge` picks the rule set from the data, not from a benchmark name: an item with
options (the prompt's effective options, else the sample's) goes to :class:`MCQJudge`, any other to
the open-answer rules.  :class:`RuleThenLLMJudge` keeps every rule verdict with
``details["decided"] == True`` and sends the rest to the LLM judge in one batch; the final verdict
records both (``details["rule_outcome"]``, ``details["judged_by"]``).
"""

from __future__ import annotations

from typing import Sequence

from mmrag.judging.llm import LLMJudge
from mmrag.judging.mcq import MCQJudge, effective_choices
from mmrag.judging.open_answer import OpenAnswerConfig, OpenAnswerJudge
from mmrag.schema import Prompt, Response, Sample, Verdict

Item = tuple[Sample, Prompt, Response]


class RuleJudge:
    """Rules only: multiple choice by option extraction, open answers by normalised matching."""

    judge_id = "rule@1"

    def __init__(self, config: OpenAnswerConfig | None = None) -> None:
        self.open = OpenAnswerJudge(config)
        self.mcq = MCQJudge()

    def judge(self, sample: Sample, prompt: Prompt, response: Response) -> Verdict:
        choices, label = effective_choices(sample, prompt)
        if choices and label:
            return self.mcq.judge(sample, prompt, response)
        return self.open.judge(sample, prompt, response)

    def judge_many(self, items: Sequence[Item]) -> list[Verdict]:
        return [self.judge(*it) for it in items]


class RuleThenLLMJudge:
    """Rules first; the LLM judge decides only what the rules flag as undecided."""

    def __init__(self, rules, llm: LLMJudge) -> None:
        self.rules = rules
        self.llm = llm
        self.judge_id = f"{getattr(rules, 'judge_id', 'rule')}+{llm.judge_id}"

    def judge(self, sample: Sample, prompt: Prompt, response: Response) -> Verdict:
        return self.judge_many([(sample, prompt, response)])[0]

    def judge_many(self, items: Sequence[Item]) -> list[Verdict]:
        verdicts = judge_many(self.rules, items)
        undecided = [i for i, v in enumerate(verdicts) if not v.details.get("decided", True)]
        for v in verdicts:
            v.details.setdefault("judged_by", "rules")
        if undecided:
            llm_verdicts = self.llm.judge_many([items[i] for i in undecided])
            for i, lv in zip(undecided, llm_verdicts):
                rule = verdicts[i]
                lv.details.update({"rule_outcome": rule.outcome, "rule_reason": rule.reason, "judged_by": "llm",
                                   **{k: rule.details[k] for k in ("official_correct", "official_extracted")
                                      if k in rule.details}})
                lv.extracted = lv.extracted if lv.extracted is not None else rule.extracted
                verdicts[i] = lv
        return verdicts


def judge_many(judge, items: Sequence[Item]) -> list[Verdict]:
    """Use a judge's batched ``judge_many`` when it has one, else call ``judge`` per item."""
    batched = getattr(judge, "judge_many", None)
    if callable(batched):
        return list(batched(items))
    return [judge.judge(*it) for it in items]
