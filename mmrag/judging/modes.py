"""The three judging modes: rules only, LLM only, rules then LLM for what rules leave undecided.

:class:`RuleJudge` picks the rule set from the data, never from if/elif on names: an item with
options (the prompt's effective options, else the sample's) goes to :class:`MCQJudge`; an item
whose ``Sample.source`` has a whole judge registered in :data:`SOURCE_JUDGES` (KnowHal: polarity
decides between answer rules and premise rules) goes to it; any other to the open-answer rules,
which pick the source's answer rule from :data:`mmrag.judging.answer_rules.ANSWER_RULES`.
:class:`RuleThenLLMJudge` keeps every rule verdict with ``details["decided"] == True`` and sends
the rest to the LLM judge in one batch; the final verdict records both (``details["rule_outcome"]``,
``details["judged_by"]``).
"""

from __future__ import annotations

from typing import Sequence

from mmrag.judging.llm import LLMJudge
from mmrag.judging.mcq import MCQJudge, effective_choices
from mmrag.judging.open_answer import OpenAnswerConfig, OpenAnswerJudge
from mmrag.registry import Registry
from mmrag.schema import Prompt, Response, Sample, Verdict

Item = tuple[Sample, Prompt, Response]

#: source tag -> factory(open_judge, mcq_judge) of a judge that handles that source's open items
SOURCE_JUDGES: Registry = Registry("source judge", group="mmrag.source_judges")


def _knowhal(open_judge: OpenAnswerJudge, mcq: MCQJudge):
    from mmrag.judging.knowhal import KnowHalJudge

    return KnowHalJudge(open_judge=open_judge, mcq=mcq)


SOURCE_JUDGES.register("knowhal", _knowhal)


class RuleJudge:
    """Rules only: multiple choice by option extraction, open answers by the source's rules."""

    judge_id = "rule@14"

    def __init__(self, config: OpenAnswerConfig | None = None) -> None:
        self.open = OpenAnswerJudge(config)
        self.mcq = MCQJudge()
        self._by_source: dict[str, object] = {}
        self._combiner = None
        cfg = self.open.rules.config
        if cfg.combiner and cfg.semantic:
            from mmrag.judging.combiner import shipped_combiner

            self._combiner = shipped_combiner(cfg.combiner_confidence)

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
        return self.judge_many([(sample, prompt, response)])[0]

    def judge_many(self, items: Sequence[Item]) -> list[Verdict]:
        return self.open.rules.batched(self._judge_one, items)

    def _judge_one(self, item: Item) -> Verdict:
        """The routed rule verdict, then the learned combiner for an undecided one.  At an item's
        first embedding miss (rules or combiner) every text the combiner will read is asked for
        too, so a batched call still encodes at most twice."""
        from mmrag.judging.semantic import NeedEmbeddings

        bank = self.open.rules.semantic.bank if self.open.rules.semantic is not None else None
        try:
            verdict = self.route(item[0], item[1]).judge(*item)
            # one id for the manifest and every verdict; which rule set spoke stays in details
            verdict.details.setdefault("rule_set", verdict.judge_id)
            verdict.judge_id = self.judge_id
            if self._combiner is None:
                return verdict
            return self._combiner.refine(item, verdict, bank)
        except NeedEmbeddings:
            if self._combiner is not None and bank is not None:
                from mmrag.judging.combiner import embed_texts, view_of

                bank.also_need(embed_texts(view_of(*item)))
            raise


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
