"""mmrag.judging: from a response to a verdict (correct | deflection | hallucination | unparseable).

Public names are re-exported here; judges register in :data:`JUDGES` under their mode name:

* ``rule``      :class:`RuleJudge` (open answers and multiple choice, chosen by the data)
* ``llm``       :class:`LLMJudge` (needs ``llm=<VLM>``)
* ``rule+llm``  :class:`RuleThenLLMJudge` (needs ``llm=<VLM>``)
* ``mcq``       :class:`MCQJudge` (HumbleBench)
* ``knowhal``   :class:`KnowHalJudge` (``llm=`` optional: open negatives by LLM when given)

The rule judge (``rule@19``) is a **cascade of scorers** (:mod:`.cascade`, the built-ins in
:mod:`.scorers`): each ``(item, reply) -> verdict with evidence | pass``, registered in
:data:`SCORERS` and tried in its declared order (KnowHal's premise rule and the sources' official
answer rules first).  A decided verdict names its :class:`~mmrag.schema.Evidence`; a reply no
scorer decides is undecided (outcome ``unparseable``, ``details["undecided"]`` its cause) and goes
to the LLM judge (``rule+llm``) or a person (``mmrag label --undecided``).  The reading steps the
scorers share: the final answer (:mod:`.final`), refusals (:mod:`.refusal`, :mod:`.language`), the
sources' answer rules (:data:`ANSWER_RULES` in :mod:`.rules`, :mod:`.evqa`, :mod:`.webqa`,
:mod:`.keyphrase`), slot conflicts (:mod:`.contradict`, :mod:`.number_checks`, :mod:`.relation`)
and the false-premise call (:mod:`.premise`).  Failed, cut-off and empty replies are never judged
(:func:`unjudged`, also the run engine's policy).  Whole-judge sources (KnowHal) are in
:data:`SOURCE_JUDGES`.  Multiple choice: the robust extractor in :mod:`.mcq`, HumbleBench's
official rule in :mod:`.mcq_official`.

``make_judge(mode, llm=None)`` builds one by name; unknown names raise an InputError listing the
known ones.
"""

from __future__ import annotations

from mmrag.errors import InputError
from mmrag.judging.base import JUDGES, Judge
from mmrag.judging.cascade import SCORERS, Reading, Scorer, cascade
from mmrag.judging.failed import unjudged
from mmrag.judging.knowhal import KnowHalJudge
from mmrag.judging.llm import LLMJudge, parse_grade
from mmrag.judging.mcq import MCQJudge, extract_choice, nota_letter, parse_inline_options
from mmrag.judging.mcq_official import official_extract, official_is_correct, official_tokenize
from mmrag.judging.modes import JUDGE_ID, SOURCE_JUDGES, RuleJudge, RuleThenLLMJudge, judge_many, undecided
from mmrag.judging.normalize import vqa_normalize, vqa_soft_accuracy
from mmrag.judging.numeric import numeric_match
from mmrag.judging.numwords import digits_for_words
from mmrag.judging.open_answer import OpenAnswerConfig, OpenAnswerJudge
from mmrag.judging.premise import PremiseRejectionDetector, rejects_premise
from mmrag.judging.refusal import REFUSAL_PATTERNS, DeflectionDetector, is_deflection
from mmrag.judging.rules import ANSWER_RULES, AnswerContext, Match, rule_for
from mmrag.judging.webqa import WebQARule


def _needs_llm(mode: str, llm) -> None:
    if llm is None:
        raise InputError(f"judge mode '{mode}' needs a judge model (--judge-model BACKEND:MODEL)")


def _llm(llm=None, **options) -> LLMJudge:
    _needs_llm("llm", llm)
    return LLMJudge(llm, options.get("settings"))


def _rule_llm(llm=None, **options) -> RuleThenLLMJudge:
    _needs_llm("rule+llm", llm)
    return RuleThenLLMJudge(RuleJudge(options.get("config")), LLMJudge(llm, options.get("settings")))


JUDGES.register("rule", lambda llm=None, **options: RuleJudge(options.get("config")))
JUDGES.register("llm", _llm)
JUDGES.register("rule+llm", _rule_llm)
JUDGES.register("mcq", lambda llm=None, **options: MCQJudge())
JUDGES.register("knowhal", lambda llm=None, **options: KnowHalJudge(llm, llm_settings=options.get("settings")))


def make_judge(mode: str, llm=None, **options) -> Judge:
    """A judge by registered name (``rule``, ``llm``, ``rule+llm``, ``mcq``, ``knowhal``, an
    entry point in ``mmrag.judges`` or a dotted path)."""
    return JUDGES.create(mode, llm=llm, **options)


__all__ = [
    "JUDGES",
    "JUDGE_ID",
    "Judge",
    "make_judge",
    "judge_many",
    "undecided",
    "SCORERS",
    "Scorer",
    "Reading",
    "cascade",
    "unjudged",
    "RuleJudge",
    "RuleThenLLMJudge",
    "LLMJudge",
    "MCQJudge",
    "KnowHalJudge",
    "OpenAnswerJudge",
    "OpenAnswerConfig",
    "DeflectionDetector",
    "PremiseRejectionDetector",
    "REFUSAL_PATTERNS",
    "vqa_normalize",
    "vqa_soft_accuracy",
    "extract_choice",
    "official_is_correct",
    "official_extract",
    "official_tokenize",
    "parse_inline_options",
    "nota_letter",
    "numeric_match",
    "is_deflection",
    "rejects_premise",
    "parse_grade",
    "ANSWER_RULES",
    "SOURCE_JUDGES",
    "AnswerContext",
    "Match",
    "rule_for",
    "digits_for_words",
    "WebQARule",
]
