"""The three judging modes: rules only, LLM only, rules then LLM for what rules leave undecided.

:class:`RuleJudge` picks the rule set from the data, never from if/elif on names: an item with
options (the prompt's effective options, else the sample's) goes to :class:`MCQJudge`; an item
whose ``Sample.source`` has a whole judge registered in :data:`SOURCE_JUDGES` (KnowHal: polarity
decides between answer rules and premise rules) goes to it; any other to the open-answer rules,
which pick the source's answer rule from :data:`mmrag.judging.rules.ANSWER_RULES`.
:class:`RuleThenLLMJudge` keeps every rule verdict and sends only the undecided ones (outcome
``unparseable`` with a typed ``details["undecided"]`` cause) to the LLM judge in one batch; the final verdict records both (``details["rule_outcome"]``,
``details["judged_by"]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mmrag.judging.llm import LLMJudge
from mmrag.judging.mcq import MCQJudge, effective_choices
from mmrag.judging.open_answer import OpenAnswerConfig, OpenAnswerJudge
from mmrag.registry import Registry
from mmrag.schema import Prompt, Response, Sample, Verdict

Item = tuple[Sample, Prompt, Response]

#: the rule judge's id (docs/judging.md): ``rule@19`` is the cascade of evidence-naming scorers
JUDGE_ID = "rule@19"

#: source tag -> factory(open_judge, mcq_judge) of a judge that handles that source's open items
SOURCE_JUDGES: Registry = Registry("source judge", group="mmrag.source_judges")


def _knowhal(open_judge: OpenAnswerJudge, mcq: MCQJudge):
    from mmrag.judging.knowhal import KnowHalJudge

    return KnowHalJudge(open_judge=open_judge, mcq=mcq)


SOURCE_JUDGES.register("knowhal", _knowhal)


class RuleJudge:
    """Rules only: multiple choice by option extraction, open answers by the pipeline of
    :mod:`mmrag.judging.open_answer`.  One id for the manifest and every verdict (the rule set that
    spoke is ``details["rule_set"]``); the id changes with every change of behaviour."""

    judge_id = JUDGE_ID

    def __init__(self, config: OpenAnswerConfig | None = None) -> None:
        self.open = OpenAnswerJudge(config)
        self.mcq = MCQJudge()
        self._by_source: dict[str, object] = {}

    def route(self, sample: Sample, prompt: Prompt):
        choices, label = effective_choices(sample, prompt)
        if choices and label:
            return self.mcq
        if sample.source and sample.source in SOURCE_JUDGES:
            if sample.source not in self._by_source:
                self._by_source[sample.source] = SOURCE_JUDGES.get(sample.source)(self.open, self.mcq)
            return self._by_source[sample.source]
        return self.open

    def judge(self, sample: Sample, prompt: Prompt, response: Response) -> Verdict:
        verdict = self.route(sample, prompt).judge(sample, prompt, response)
        verdict.details.setdefault("rule_set", verdict.judge_id)
        verdict.judge_id = self.judge_id
        return verdict

    def judge_many(self, items: Sequence[Item]) -> list[Verdict]:
        return [self.judge(*it) for it in items]


def undecided(verdict: Verdict) -> bool:
    """Whether the rules abstained on a reply that a reader could still judge (the only replies
    ``rule+llm`` sends to the LLM; failed requests and empty replies are not among them)."""
    return verdict.outcome == "unparseable" and bool(verdict.details.get("undecided"))


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
        undecided_at = [i for i, v in enumerate(verdicts) if undecided(v)]
        for v in verdicts:
            v.details.setdefault("judged_by", "rules")
        if undecided_at:
            llm_verdicts = self.llm.judge_many([items[i] for i in undecided_at])
            for i, lv in zip(undecided_at, llm_verdicts):
                rule = verdicts[i]
                official: dict[str, Any] = {
                    k: rule.details[k] for k in ("official_correct", "official_extracted") if k in rule.details
                }
                lv.details.update(
                    {
                        "rule_outcome": rule.outcome,
                        "rule_reason": rule.reason,
                        "judged_by": "llm",
                        **official,
                    }
                )
                lv.extracted = lv.extracted if lv.extracted is not None else rule.extracted
                verdicts[i] = lv
        return verdicts


def judge_many(judge, items: Sequence[Item]) -> list[Verdict]:
    """Use a judge's batched ``judge_many`` when it has one, else call ``judge`` per item."""
    batched = getattr(judge, "judge_many", None)
    if callable(batched):
        return list(batched(items))
    return [judge.judge(*it) for it in items]
