"""Step 3 of the judge: does the final answer give, contradict, or leave out the reference?

Each source's evaluator decides what "the same answer" means, so each source registers its rule
object in :data:`ANSWER_RULES` under its ``Sample.source`` tag (``rule_for(source)``, never
if/elif on names).  A rule returns a :class:`Match`:

* ``gives``       — the answer carries the reference;
* ``contradicts`` — the answer commits to something else in the reference's own terms (a number
                    outside the InfoSeek range, another amount of the same unit dimension, "no"
                    for "yes", the gold only negated);
* ``absent``      — neither, in terms the rule can check.

``certain`` is False where the rule's reading is weak (a hedge between candidates, an implied
yes/no, a short name tail); the decide step abstains on those.  The ``default`` rule: InfoSeek
numeric ranges (the official first-one-or-two-numbers rule), amounts with units (pint), whole-word
containment (accents folded, number words as digits), yes/no, and the **key phrase** of a sentence
reference (its content words minus the question's, :mod:`.keyphrase`).  The types a rule sees and
returns are in :mod:`.base`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from mmrag.judging.base import AnswerContext, Match
from mmrag.judging.keyphrase import is_sentence, key_phrase_match
from mmrag.judging.lexicon import NEGATORS, YES_NO, fold, names, negated_at, stem, stems, words
from mmrag.judging.normalize import phrase_positions, vqa_normalize
from mmrag.judging.numeric import as_number, find_numbers, in_numeric_range, numeric_match
from mmrag.judging.numwords import digits_for_words
from mmrag.judging.quantity import compare as compare_quantities
from mmrag.judging.quantity import in_asked_unit, unit_alternatives, with_units
from mmrag.registry import Registry

_CANDIDATE_MARKERS = frozenset({"or", "either"})


class AnswerRule(Protocol):
    rule_id: str

    def match(self, ctx: AnswerContext, reply: str) -> Match: ...


ANSWER_RULES: Registry[AnswerRule] = Registry("answer rule", group="mmrag.answer_rules")


def rule_for(source: str | None) -> AnswerRule:
    """The rule registered for a source tag, else the default rule."""
    return ANSWER_RULES.instance(source if source and source in ANSWER_RULES else "default")


#: characters of scripts written without spaces (CJK, kana, hangul): each is its own token, so
#: "于1937年" holds the number 1937
_UNSPACED = re.compile(r"[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff00-\uffef]")


def norm_tokens(text: str) -> list[str]:
    out: list[str] = []
    for x in fold(vqa_normalize(digits_for_words(_UNSPACED.sub(r" \g<0> ", text)))).split():
        x = x.strip("'\":;!?,")
        if x in ("'s", "s") and out:  # "queen 's" = "queens": possessives written without the apostrophe
            out[-1] += "s"
        elif x:
            out.append(x)
    return out


def yes_no(tokens: Sequence[str]) -> str | None:
    return next((YES_NO[t] for t in tokens if t in YES_NO), None)


class GenericRule:
    rule_id = "default"

    def __init__(self, numeric_tolerance: float = 0.1) -> None:
        self.numeric_tolerance = numeric_tolerance

    def numeric(self, ctx: AnswerContext, reply: str) -> Match | None:
        if not ctx.numeric_ranges:
            return None
        asked = in_asked_unit(reply, ctx.question)
        if asked is not None:  # "240 mph" asked in km/h: the amount in the asked unit decides
            inside = [any(in_numeric_range(v, r, self.numeric_tolerance) for r in ctx.numeric_ranges) for v in asked]
            ok = any(inside)
            return Match(
                "gives" if ok else "contradicts",
                f"{asked[inside.index(True) if ok else 0]:g}",
                "amount in the asked unit " + ("inside" if ok else "outside") + " the gold range",
                kind="range",
                certain=all(inside) or not ok,  # one amount inside, another outside: which is the answer?
            )
        ok, parsed = numeric_match(digits_for_words(reply), ctx.numeric_ranges, self.numeric_tolerance)
        if ok:
            return Match("gives", str(parsed), "number inside the gold range (InfoSeek rule)", kind="range")
        if parsed == (0.0, 0.0):
            return None
        for alt in unit_alternatives(reply):
            if any(in_numeric_range(alt, r, self.numeric_tolerance) for r in ctx.numeric_ranges):
                return Match(
                    "gives",
                    f"{alt:g}",
                    "number inside the gold range after unit conversion",
                    kind="range",
                    certain=False,
                )
        later = [
            n
            for n in find_numbers(digits_for_words(reply))[2:]
            if any(in_numeric_range(n, r, self.numeric_tolerance) for r in ctx.numeric_ranges)
        ]
        if later:  # "8 x 8 = 64 squares": the official rule reads the first two numbers only
            return Match("gives", f"{later[0]:g}", "a later number inside the gold range", certain=False, kind="range")
        return Match(
            "contradicts",
            str(parsed),
            "number outside the gold range (InfoSeek rule)",
            kind="range",
            certain=not set(words(reply)) & NEGATORS,
        )

    @staticmethod
    def quantity(refs: list[str], reply: str) -> Match | None:
        calls = [(ref, compare_quantities(ref, reply)) for ref in refs]
        for ref, call in calls:
            if call == "gives":
                # of a reference's several amounts ("41 %, up from 36 %") the reply must state them
                # all, or the first (the answer's), to be sure it names the asked one
                amounts, said = with_units(ref), with_units(reply)
                first = amounts[0] if amounts else None
                sure = len(amounts) <= 1 or (
                    first is not None
                    and any(q.dim == first.dim and abs(q.value - first.value) <= 0.02 * abs(first.value) for q in said)
                )
                return Match(
                    "gives", ref, f"reply states the amount of {ref!r} (units converted)", kind="quantity", certain=sure
                )
        if any(call == "contradicts" for _, call in calls) and not any(is_sentence(r) for r in refs):
            return Match("contradicts", reply, "reply states another amount than the reference", kind="quantity")
        return None

    def containment(self, ctx: AnswerContext, refs: list[str], reply: str) -> Match | None:
        toks = norm_tokens(reply)
        negated_only = False
        for ref in refs:
            rtoks = norm_tokens(ref)
            starts = phrase_positions(toks, rtoks)
            value = as_number(" ".join(rtoks))
            if not starts and value is not None:
                starts = [i for i, t in enumerate(toks) if as_number(t) == value]
            if not starts and value is None:  # "troops" for troop, "birches" for birch
                stemmed = [stem(t) for t in toks]
                starts = phrase_positions(stemmed, [stem(t) for t in rtoks])
            if not starts and value is None and len("".join(rtoks)) >= 5:  # "Viet Nam" / "Vietnam"
                target = "".join(rtoks)
                starts = [
                    i
                    for i in range(len(toks))
                    for n in (1, 2, 3)
                    if n != len(rtoks) and "".join(toks[i : i + n]) == target
                ]
            if not starts:
                continue
            free = [s for s in starts if not negated_at(toks, s, 2)]
            if not free:
                negated_only = True
                continue
            lo, hi = max(0, free[0] - 6), min(len(toks), free[0] + len(rtoks) + 6)
            if not re.search(r"\bor\b", ctx.question.lower()) and set(toks[lo:hi]) & _CANDIDATE_MARKERS:
                return Match(
                    "contradicts", reply, f"hedges between {ref!r} and other candidates", certain=False, kind="contains"
                )
            return Match("gives", ref, f"reply contains the reference {ref!r}", kind="contains")
        if negated_only:
            return Match("contradicts", reply, "reply negates the reference answer", kind="contains", certain=False)
        if 0 < len(toks) <= 3:  # "Obama" for "Barack Obama": SimpleQA presumes the omitted part
            for ref in refs:
                rtoks = norm_tokens(ref)
                if len(rtoks) > len(toks) and rtoks[-len(toks) :] == toks and ref[:1].isupper() and len(rtoks) <= 4:
                    return Match("gives", ref, f"reply names the end of {ref!r}", kind="name")
        said = names(reply) - names(ctx.question)
        for ref in refs:  # "It was designed by Eiffel.": a surname, no other name beside it
            parts = ref.split()
            if 1 < len(parts) <= 4 and all(p[:1].isupper() for p in parts) and len(parts[-1]) > 3:
                tail = parts[-1]
                if stem(tail.lower()) not in stems(ctx.question) and tail in said and said <= set(parts):
                    return Match("gives", ref, f"reply names {tail!r} of {ref!r}", kind="name", certain=False)
        return None

    @staticmethod
    def yes_no_rule(refs: list[str], reply: str) -> Match | None:
        ref_yn = {yes_no(words(r)[:3]) for r in refs} - {None}
        said = yes_no(words(reply)[:3])
        if len(ref_yn) != 1 or said is None:
            return None
        gold = ref_yn.pop()
        return Match(
            "gives" if said == gold else "contradicts", said, f"reply says {said!r}, reference {gold!r}", kind="yes/no"
        )

    def match(self, ctx: AnswerContext, reply: str) -> Match:
        refs = [a for a in ctx.answers if a and a.strip()]
        for step in (
            lambda: self.numeric(ctx, reply),
            lambda: self.quantity(refs, reply),
            lambda: self.containment(ctx, refs, reply),
            lambda: self.yes_no_rule(refs, reply),
            lambda: key_phrase_match(ctx.question, refs, reply),
        ):
            m = step()
            if m is not None:
                return m
        return Match("absent", None, "no reference answer in the reply")


for _source in ("default", "infoseek", "viquae", "mmdocrag", "mragbench"):
    ANSWER_RULES.put(_source, GenericRule())
