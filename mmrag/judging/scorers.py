"""The built-in scorers of the rule judge's cascade (:mod:`.cascade`), in their declared order.

=====  ===================  ======================================================================
order  scorer               decides
=====  ===================  ======================================================================
0      ``premise``          KnowHal false-premise questions: a denial of the premise is correct, a
                            bare refusal a deflection, an answer that takes the premise as given a
                            hallucination (the paper's rule); nothing else reaches the other scorers
10     ``exact``            the final answer equals a reference (normalised): correct
20     ``reference``        the source's official answer rule finds the reference in the final
                            answer, surely, with nothing beside it that the rules cannot check:
                            correct
30     ``refusal``          a refusal, and no answer asserted: deflection
40     ``official_conflict``  the source's answer rule reads another value of the reference's own
                            kind (a number outside the InfoSeek range, another amount after unit
                            conversion, "no" for "yes", another WebQA colour/shape/number, a wrong
                            E-VQA list, the other of a WebQA question's two candidates, another
                            number than a sentence reference's): hallucination
50     ``slot_conflict``    another count, amount, member of a closed class (colour, month, ...)
                            or the other side of an opposite pair than the reference: hallucination
=====  ===================  ======================================================================

Each scorer either returns a verdict naming its evidence or passes (``None``, after recording why
with :meth:`~.cascade.Reading.passes` where it saw something it could not settle).  A new scorer is
one class registered with ``SCORERS.add``; no other scorer changes.
"""

from __future__ import annotations

import re

from mmrag.judging.cascade import SCORERS, Reading
from mmrag.judging.keyphrase import is_sentence
from mmrag.judging.lexicon import (
    ALTERNATIVE,
    NEGATORS,
    STOPWORDS,
    claimless_stems,
    clauses,
    content_stems,
    fold,
    names,
    sentences,
    stems,
    unlisted_alias,
    words,
)
from mmrag.judging.premise import DEFAULT_PREMISE_DETECTOR
from mmrag.judging.quantity import compare as compare_quantities
from mmrag.judging.quantity import with_units
from mmrag.judging.refusal import GUESS_WORDS
from mmrag.schema import Verdict

#: content words a reply may add to a sentence reference's figure or key words and still be
#: credited (more, and a changed claim may hide among them: "€1,500, payable in cash only")
NOVEL_LIMIT = 1
#: the answer rules' contradictions that state another value of the reference's own kind
CHECKABLE_MATCHES = frozenset({"range", "quantity", "yes/no", "category", "list", "choice"})
#: slot conflicts a rule can check: another number of the same kind, another member of a closed
#: class, the other side of an opposite pair (names sharing a word, word order and swapped roles
#: are left to a reader)
CHECKABLE_CONFLICTS = frozenset({"count", "amount", "class", "direction"})


#: a value vaguer than the reference (a decade, a century, a bound, a rough amount): SimpleQA calls
#: such replies "not attempted", but whether one is a refusal or a wrong answer is a reader's call
VAGUER = re.compile(
    r"\b\d{2,4}s\b|\b\d{1,2}(?:st|nd|rd|th)\b|\bcentur(?:y|ies)\b|\b(?:early|mid|late)[- ]\w+|"
    r"\b(?:about|around|roughly|approximately|approx|nearly|almost|over|under|more than|less than|"
    r"fewer than|at least|at most|some|several|a few|many|dozens|hundreds|thousands|or so|circa|c\.|ca\.|"
    r"between|somewhere)\b|~",
    re.I,
)


def _vaguer(r: Reading) -> Verdict | None:
    """Pass (undecided) when the asserted value is vaguer than the reference."""
    m = VAGUER.search(r.answer)
    if m:
        r.passes("vaguer value", f"a vaguer value than the reference ({m.group(0)!r})")
    return None


def _undecided(r: Reading, cause: str, reason: str) -> Verdict:
    """Stop the cascade without a decision (a scorer that owns the reply but cannot settle it)."""
    return Verdict(
        outcome="unparseable",
        extracted=r.final.answer[:300] or None,
        reason=f"undecided: {reason}",
        details={**r.match_details(), "decided": False, "undecided": cause},
    )


class PremiseScorer:
    """KnowHal's open negatives (a false premise): the premise call of :mod:`.premise`."""

    id = "premise"
    order = 0

    def score(self, r: Reading) -> Verdict | None:
        if r.sample.source != "knowhal" or r.sample.metadata.get("polarity") != "negative":
            return None
        return self.decide(r)

    def decide(self, r: Reading) -> Verdict:
        """The premise call on any false-premise item (KnowHal's judge calls it directly)."""
        meta = r.sample.metadata
        a = DEFAULT_PREMISE_DETECTOR.analyse(r.final.answer, r.sample.question)
        premise = str(meta.get("false_premise") or (r.refs[0] if r.refs else "")) or None
        extra = {"premise_call": a.call, "premise_pattern": a.pattern, "llm_eligible": True}
        if a.call == "rejects":
            return r.verdict(
                "correct", self.id, a.clause or r.final.answer, premise, f"denies the premise ({a.pattern})", **extra
            )
        said = set(content_stems(r.final.answer))
        if a.call == "neither":
            if said & (set(content_stems(r.sample.question)) - {"image", "photo", "picture"}):
                v = _undecided(r, "refusal naming the premised object", "a refusal that speaks of the premised object")
                v.details.update(extra)
                return v
            return r.verdict(
                "deflection",
                self.id,
                a.clause or r.final.answer,
                premise,
                "declines without taking the premise up",
                **extra,
            )
        if set(words(r.final.body)) & NEGATORS or "less " in r.final.body.lower():
            v = _undecided(r, "premise answer with a negation", "answers, but denies something the rules cannot place")
            v.details.update(extra)
            return v
        return r.verdict(
            "hallucination", self.id, r.final.answer, premise, "answers as if the false premise held", **extra
        )


class ExactScorer:
    """The final answer, normalised, is one of the references."""

    id = "exact"
    order = 10

    def score(self, r: Reading) -> Verdict | None:
        ans = r.final.answer
        if not ans:
            return None
        mine = r.norm(ans)
        for ref in r.refs:
            if mine == r.norm(ref):
                return r.verdict("correct", self.id, ans, ref, "the final answer equals a reference answer")
        return None


_YEAR = re.compile(r"(?<![\d.,])(1[0-9]{3}|20[0-9]{2})(?![\d.,]\d)")


def _stray_year(r: Reading) -> str | None:
    """A year the answer states that neither the question nor any reference does, where the
    references state years ("The Suez Canal opened first, in 1859" for "... in 1869")."""
    theirs = {y for ref in r.refs for y in _YEAR.findall(ref)}
    if not theirs:
        return None
    known = theirs | set(_YEAR.findall(r.sample.question))
    return next((y for y in _YEAR.findall(r.answer) if y not in known), None)


def _ends_declining(r: Reading) -> bool:
    """Whether the reply's last clause is a refusal ("Initially I'd say Rio, but ... so I can't
    say which city."): what it ends on is its stance."""
    parts = clauses(r.final.answer)
    return bool(parts) and r.detector.refusal_pattern(parts[-1]) is not None


def _novel(r: Reading) -> int:
    told = set(stems(r.sample.question)) | {t for ref in r.refs for t in stems(ref)}
    skip = claimless_stems()
    return len(
        {w for w in content_stems(r.answer) if w not in told and w not in skip and not w[:1].isdigit() and len(w) > 2}
    )


def _other_names(r: Reading) -> str | None:
    """A name the answer gives beside the reference, when the answer is longer than a short
    phrase: the rules cannot tell which of the two it asserts (reversed relations, a rival in a
    reasoning reply)."""
    if len(words(r.answer)) <= 12 and len(sentences(r.answer)) <= 1:
        return None
    known = {fold(w) for t in (r.sample.question, *r.refs) for w in words(t)}
    other = sorted(n for n in names(r.answer) if fold(n) not in known and fold(n) not in STOPWORDS)
    return other[0] if other else None


class ReferenceScorer:
    """The source's answer rule finds the reference in the final answer (correct), unless the
    reply also declines, hedges, names an alias no reference lists, or states a value the rules
    read as conflicting with it (each left undecided: the rules cannot say which part it means)."""

    id = "reference"
    order = 20

    def score(self, r: Reading) -> Verdict | None:
        m = r.match
        if m is None or m.status != "gives":
            return None
        why = None
        if r.refusal_kind in ("bare", "explained"):
            why = ("refusal beside reference", "declines beside the reference")
        elif r.refusal.refusals and _ends_declining(r):
            why = ("refusal after reference", "names the reference, then declines")
        elif not m.certain:
            why = ("weak match", f"weak {m.kind or 'match'} of the reference ({m.reason})")
        elif ALTERNATIVE.search(r.answer):
            why = ("second candidate", "offers a second candidate beside the reference")
        elif unlisted_alias(r.answer, r.refs):
            why = ("unlisted alias", "another name for the answer that the reference does not list")
        elif (year := _stray_year(r)) is not None:
            why = ("reference with another year", f"carries the reference and a year it does not state ({year})")
        elif m.kind not in ("range", "list") and r.conflicts:
            c = r.conflicts[0]
            why = ("reference with conflict", f"carries the reference and a conflicting {c.kind}: {c.detail}")
        elif m.kind in ("contains", "name", "quantity") and (other := _other_names(r)):
            why = ("reference among other names", f"names {other!r} beside the reference")
        elif (
            m.kind in ("quantity", "key phrase")
            and any(is_sentence(x) for x in r.refs)
            and (n := _novel(r)) >= NOVEL_LIMIT
        ):
            why = (
                "unsupported additions",
                f"the figure or key words of a sentence reference, with {n} words it does not state",
            )
        if why is not None:
            r.passes(*why)
            return None
        ref = m.extracted if m.extracted and m.kind != "list" else (r.refs[0] if r.refs else m.extracted)
        return r.verdict(
            "correct",
            self.id,
            r.answer,
            ref,
            f"{r.answer_rule} rule: {m.reason}",
            **m.details,
            answer_rule=r.answer_rule,
        )


class RefusalScorer:
    """A refusal (curated patterns, other languages) and no answer asserted beside it."""

    id = "refusal"
    order = 30

    def score(self, r: Reading) -> Verdict | None:
        kind = r.refusal_kind
        if kind is None:
            return None
        if kind == "guess" and _ends_declining(r) and not GUESS_WORDS.search(clauses(r.final.answer)[-1]):
            kind = "explained"  # "... appears to be Buzz Aldrin ..., so I can't answer": it ends declining
        elif kind != "guess" and kind != "foreign" and GUESS_WORDS.search(r.final.answer.lower()):
            kind = "guess"  # "Not sure, maybe 1984?": the guess sits in the refusal's own clause
            r.passes("refusal with guess", "declines, then offers a guess the rules cannot check")
            return None
        if kind == "guess":
            if not any(GUESS_WORDS.search(c) for c in r.refusal.content):  # "..., but ..." only
                return _undecided(
                    r, "refusal with contrast", "declines, then goes on with a 'but' the rules cannot read"
                )
            r.passes("refusal with guess", "declines, then offers a guess the rules cannot check")
            return None
        if r.match is not None and r.match.status == "gives":
            return None
        name, clause = r.refusal.refusals[0]
        return r.verdict(
            "deflection",
            self.id,
            clause,
            None,
            f"refusal ({name})" + (f", {kind}" if kind != "bare" else ""),
            refusal_patterns=[n for n, _ in r.refusal.refusals],
        )


#: last words that leave a clause open ("The satellite is", "designed by", "According to Document 1,")
_OPEN_END = re.compile(
    r"(?:[,:;(\u2013-]|\b(?:the|a|an|is|are|was|were|be|of|in|on|at|to|by|for|with|from|and|or|but|as|its|"
    r"their|his|her|that|which|who|than|into|about|around|approximately)|\d+,)\s*$",
    re.I,
)


def _unfinished(r: Reading) -> Verdict | None:
    """Pass when the reply stops mid-clause: it never reached the answer a conflict would be held
    against (whether it was cut off is the engine's to say, from ``finish_reason``)."""
    if _OPEN_END.search(r.final.answer) and len(r.final.answer.split()) >= 3:
        r.passes("unfinished", "stops mid-clause before an answer")
    return None


class OfficialConflictScorer:
    """The source's answer rule reads another value of the reference's own kind."""

    id = "official_conflict"
    order = 40

    def score(self, r: Reading) -> Verdict | None:
        m = r.match
        if m is None or m.status != "contradicts":
            return None
        # a sentence reference's number against the reply's one number (a reply listing several,
        # a table, is weighing candidates or restating in another form the rules cannot read)
        if _OPEN_END.search(r.final.answer) and len(r.final.answer.split()) >= 3:
            return _unfinished(r)
        number = m.kind == "key phrase" and m.reason.startswith("reply gives another number")
        number = number and len((m.extracted or "").split()) == 1
        if number and any(compare_quantities(x, r.answer) is None and with_units(r.answer) for x in r.refs):
            number = False  # an amount in other units than the sentence's: the key phrase cannot compare it
        if not (m.certain and (m.kind in CHECKABLE_MATCHES or number)):
            r.passes("weak contradiction", f"does not give the reference ({m.kind or 'answer rule'}: {m.reason})")
            return None
        if m.kind in ("range", "quantity", "key phrase", "category") and VAGUER.search(r.answer):
            return _vaguer(r)
        if r.foreign and m.kind != "yes/no":
            r.passes("other language", f"a reply in {r.foreign}: its numbers and lists are read in English forms")
            return None
        ref = ", ".join(r.refs[:3]) if r.refs else None
        span = m.extracted if m.extracted and len(m.extracted) < len(r.answer) else r.answer
        return r.verdict(
            "hallucination",
            self.id,
            span,
            ref,
            f"{r.answer_rule} rule: {m.reason}",
            **m.details,
            answer_rule=r.answer_rule,
        )


class SlotConflictScorer:
    """Another count, amount, closed-class member or opposite than the reference states."""

    id = "slot_conflict"
    order = 50

    def score(self, r: Reading) -> Verdict | None:
        if r.match is not None and r.match.status == "gives":
            return None
        found = [c for c in r.conflicts if c.kind in CHECKABLE_CONFLICTS]
        if not found:
            if r.conflicts:
                c = r.conflicts[0]
                r.passes("unchecked conflict", f"may conflict with the reference ({c.kind}: {c.detail})")
            return None
        c = found[0]
        if _OPEN_END.search(r.final.answer) and len(r.final.answer.split()) >= 3:
            return _unfinished(r)
        if r.foreign:
            r.passes("other language", f"a reply in {r.foreign}: its numbers and words are read in English forms")
            return None
        if c.kind in ("count", "amount") and VAGUER.search(r.answer):
            return _vaguer(r)
        ref = r.refs[0] if len(r.refs) == 1 else ", ".join(r.refs[:3])
        return r.verdict("hallucination", self.id, r.answer, ref, f"{c.kind}: {c.detail}")


for _scorer in (
    PremiseScorer(),
    ExactScorer(),
    ReferenceScorer(),
    RefusalScorer(),
    OfficialConflictScorer(),
    SlotConflictScorer(),
):
    SCORERS.add(_scorer)
