"""KnowHal's judge: positives by VQA soft matching, Relation by option matching, negatives by premise.

Following the paper's setup (papers/001, "Evaluation"):

* Relation questions, positive **and negative**, are multiple choice, scored by direct option
  matching (:class:`MCQJudge`); the paper excludes them from the LLM judge for that reason;
* positive open questions (Entity, Attribute, Knowledge) are scored with the VQA protocol through
  the open-answer rules with the ``knowhal`` answer rule (VQA soft matching: a reference matches
  when it equals the normalised reply or appears in it as whole words); ``score`` is the soft
  accuracy, ``details["vqa_exact"]`` the exact-equality score;
* open-ended negative (false-premise) questions are correct when the reply rejects the premise.
  With an LLM judge (the paper uses GPT-4o-mini) the LLM decides with the premise prompt and the
  rule call is kept beside it (``details["rule_outcome"]``, ``details["llm_outcome"]``); without
  one, the cascade's ``premise`` scorer (:mod:`.scorers`) decides: a denial of the premise
  (:mod:`mmrag.judging.premise`) is correct, a refusal that does not take the premise up a
  deflection, an answer that takes it as given a hallucination; anything else is undecided.

``Sample.metadata`` carries ``polarity`` (positive | negative), ``dimension`` (E | A | R | K),
``pair_id`` and, for negatives, ``false_premise``.
"""

from __future__ import annotations

from collections.abc import Sequence

from mmrag.judging.failed import unjudged
from mmrag.judging.llm import LLMJudge
from mmrag.judging.mcq import MCQJudge, effective_choices
from mmrag.judging.open_answer import OpenAnswerJudge
from mmrag.judging.scorers import PremiseScorer
from mmrag.schema import Prompt, Response, Sample, Verdict


def polarity(sample: Sample) -> str:
    p = sample.metadata.get("polarity")
    if p not in ("positive", "negative"):
        raise ValueError(f"KnowHal sample {sample.id}: metadata.polarity must be 'positive' or 'negative', got {p!r}")
    return p


class KnowHalJudge:
    def __init__(
        self,
        llm=None,
        *,
        llm_settings=None,
        open_judge: OpenAnswerJudge | None = None,
        mcq: MCQJudge | None = None,
    ) -> None:
        self.mcq = mcq or MCQJudge()
        self.open = open_judge or OpenAnswerJudge()
        self.llm = LLMJudge(llm, llm_settings, kind="premise") if llm is not None else None
        self.judge_id = "knowhal@4" + (f"+{self.llm.judge_id}" if self.llm else "+rules")

    def judge(self, sample: Sample, prompt: Prompt, response: Response) -> Verdict:
        return self.judge_many([(sample, prompt, response)])[0]

    def judge_many(self, items: Sequence[tuple[Sample, Prompt, Response]]) -> list[Verdict]:
        out: list[Verdict] = [self._rules(*it) for it in items]
        to_llm = [i for i, v in enumerate(out) if self.llm is not None and v.details.get("llm_eligible")]
        if to_llm and self.llm is not None:
            llm_verdicts = self.llm.judge_many([items[i] for i in to_llm])
            for i, lv in zip(to_llm, llm_verdicts):
                rule = out[i]
                details = {
                    **rule.details,
                    **lv.details,
                    "rule_outcome": rule.outcome,
                    "llm_outcome": lv.outcome,
                    "judged_by": "llm",
                }
                out[i] = Verdict(
                    outcome=lv.outcome,
                    judge_id=self.judge_id,
                    reason=lv.reason,
                    score=1.0 if lv.outcome == "correct" else 0.0 if lv.outcome != "unparseable" else None,
                    details=details,
                )
        return out

    def _rules(self, sample: Sample, prompt: Prompt, response: Response) -> Verdict:
        pol = polarity(sample)
        base = {"polarity": pol, "dimension": sample.metadata.get("dimension"), "judged_by": "rules"}
        v = unjudged(response, self.judge_id)
        choices, label = effective_choices(sample, prompt)
        if v is None and choices and label:  # Relation, either polarity: direct option matching
            v = self.mcq.judge(sample, prompt, response)
        elif v is None and pol == "negative":  # the cascade's premise scorer
            v = PremiseScorer().decide(self.open.reading(sample, response))
        elif v is None:  # positives: VQA soft matching through the open-answer cascade
            if not sample.answers:
                raise ValueError(f"KnowHal positive sample {sample.id} has no reference answers")
            v = self.open.judge(sample, prompt, response, rule_name="knowhal")
        v.judge_id = self.judge_id
        v.details.update(base)
        return v
