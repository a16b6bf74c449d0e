"""Step 5 of the judge: the typed signals of one reply, and the decision (or the abstention).

Every earlier step writes into :class:`Signals`; :func:`decide` reads only these fields, never the
wording of a reason, and returns ``(outcome, reason, undecided)``.  Precision first: ``correct``
needs the reference in the final answer, a match the rule is sure of, no conflict with a slot of
the reference, and a reply that was not cut off.  A conflict is a ``hallucination``.  What the
signals cannot settle is **undecided**: outcome ``unparseable``, reason ``undecided: <why>`` and
``undecided`` set to the typed cause, which ``rule+llm`` sends (alone) to the LLM judge.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from mmrag.judging.base import Conflict

#: content words a reply may add to a sentence reference's figure or key words and still be
#: credited (more, and a changed claim may hide among them: "€1,500, payable in cash only")
NOVEL_LIMIT = 2
#: a cut-off reply has answered only if it contradicts the slot the question asks for: a figure of
#: a "how many" question, a name of a "who" question; a page number on the way does not count
SLOT_CONFLICTS = {
    "year": ("count", "amount"),
    "number": ("amount", "count", "swap", "attribution"),
    "class": ("class",),
    "polar": ("direction", "order"),
    "name": ("entity", "rival", "order", "class"),
}
#: the answer rules' contradictions that state a rival answer (a missing key phrase does not)
ASSERTING_MATCHES = ("contains", "range", "yes/no", "category", "name")


@dataclass
class Signals:
    final: str = ""  # the final answer (step 1)
    final_method: str = (
        "whole"  # whole | think | tag | marker | correction | bold line | after table or list | table rows | conclusion
    )
    cut_off: bool = False  # finish_reason == "length" or stops mid-clause
    asked: str = "other"  # what the question asks for: year | number | class | polar | name | other
    exact: bool = False  # the final answer equals a reference after normalisation
    refusal: str | None = None  # bare | explained | guess | foreign (step 2)
    refusal_patterns: list[str] = field(default_factory=list)
    match: str = "none"  # gives | contradicts | absent | none (no reference) (step 3)
    match_kind: str = ""
    match_certain: bool = True
    key_recall: float | None = None
    conflicts: list[Conflict] = field(default_factory=list)  # step 4
    candidate: bool = False  # the answer offers content the question does not hold
    hedged: bool = False  # hedge words in the answer
    alternative: bool = False  # a second candidate offered beside the first ("or possibly")
    unlisted_alias: bool = False  # "also known as Y" where no reference lists Y
    vague: bool = False  # vaguer-than-gold words (regions, bounds, rough amounts) and no new name
    named: bool = False  # the answer names something neither the question nor the reference does
    foreign: bool = False  # the reply is in another language
    novel: int = 0  # content words of the answer neither reference nor question holds
    overlap: bool = False  # a short reference's word (or its first five letters) in the answer

    def record(self) -> dict:
        return asdict(self)


def decide(s: Signals) -> tuple[str, str, str | None]:
    """(outcome, reason, undecided cause or None) from the signals alone."""
    if s.exact and not s.cut_off:
        return "correct", "reply equals a reference answer", None
    if s.cut_off:
        slot = [c for c in s.conflicts if c.kind in SLOT_CONFLICTS.get(s.asked, ())]
        if slot or (s.match == "contradicts" and s.match_certain and s.match_kind in ASSERTING_MATCHES):
            why = slot[0].detail if slot else s.match_kind
            return "hallucination", f"cut off after asserting something wrong ({why})", None
        if s.match == "gives" and s.match_certain and not s.conflicts and not s.refusal:
            return "correct", f"cut off after giving the reference ({s.match_kind})", None
        return "deflection", "cut off before an answer (not attempted)", None
    if s.match == "gives":
        if s.alternative:
            return "hallucination", "offers a second candidate beside the reference", None
        if s.conflicts:
            c = s.conflicts[0]
            return "hallucination", f"carries the reference but contradicts it: {c.kind}: {c.detail}", None
        if s.refusal in ("bare", "explained"):
            return "unparseable", "undecided: declines beside the reference", "refusal beside reference"
        if not s.match_certain:
            return "unparseable", f"undecided: weak {s.match_kind or 'match'} of the reference", "weak match"
        if s.unlisted_alias:
            return (
                "unparseable",
                "undecided: another name for the answer that the reference does not list",
                "unlisted alias",
            )
        if s.novel >= NOVEL_LIMIT and s.match_kind in ("quantity", "key phrase"):
            return (
                "unparseable",
                f"undecided: the figure or key words of a sentence reference, with {s.novel} words it does not state",
                "unsupported additions",
            )
        return "correct", f"final answer gives the reference ({s.match_kind})", None
    if s.refusal in ("bare", "explained", "foreign") and not s.conflicts:
        return "deflection", "refusal" if s.refusal == "bare" else f"refusal ({s.refusal})", None
    if s.match == "contradicts":
        if s.match_certain or s.match_kind == "contains":  # the gold negated, or beside other candidates
            return "hallucination", f"contradicts the reference ({s.match_kind})", None
        if s.refusal:
            return "unparseable", "undecided: a refusal that names another candidate", "refusal with candidate"
        return "unparseable", f"undecided: a weak contradiction ({s.match_kind})", "weak contradiction"
    rivals = [c for c in s.conflicts if c.kind not in ("count", "amount")]  # a rough figure is vague, a rival is not
    if s.vague and s.match == "absent" and not rivals:  # SimpleQA's NOT_ATTEMPTED: "in the 1950s" for 1954
        return "deflection", "vaguer than the reference (not attempted)", None
    if s.conflicts:
        c = s.conflicts[0]
        return "hallucination", f"contradicts a slot of the reference: {c.kind}: {c.detail}", None
    if s.match == "none":
        return "unparseable", "undecided: no reference answer to match against", "no reference"
    if s.refusal == "guess":
        return "hallucination", "a guess without the reference (after a refusal)", None
    if s.foreign:
        return "unparseable", "undecided: a reply in another language without the reference", "other language"
    if s.vague:  # SimpleQA's NOT_ATTEMPTED: "in the 17th century" for 1636, "it went down" for a figure
        return "deflection", "vaguer than the reference (not attempted)", None
    if not s.candidate:
        return "unparseable", "undecided: no reference, no candidate, no refusal", "nothing asserted"
    if s.match_kind == "key phrase" and not s.match_certain:
        return "unparseable", "undecided: part of the reference's key phrase", "partial key phrase"
    if s.overlap:  # "moon jelly" for moon jellyfish, "Great Gray Owl": a variant or a sibling?
        return "unparseable", "undecided: shares words with the reference but does not name it", "partial name"
    return "hallucination", "asserts an answer without the reference", None
