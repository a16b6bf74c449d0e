"""Answer rules of two sources with official list or soft scoring: Encyclopedic-VQA and VQA/KnowHal.

* ``evqa`` — single answers as the default rule; ``multi_answer`` questions (``question_type``,
  ``metadata.answer_parts`` or ``&&`` in an answer) by the official list IoU
  (``evaluation_utils.multianswer_exact_match``: reference split at '&&', candidate at ',', ' and ',
  ' & '; IoU >= 0.5).  Replies are sentences, so a reference part counts as predicted when it
  appears in the reply, and only short list items that name no part count against it.  A partial
  list presented as complete is a hallucination (the labelling rule; the official rule would credit
  it, recorded in ``details["official_credit"]``).
* ``knowhal`` / ``vqa`` — VQA soft matching: a reference matches when it equals the normalised
  reply or appears in it as whole words; the soft score is the verdict's ``score``.
"""

from __future__ import annotations

import re

from mmrag.judging.lexicon import NEGATORS, sentences, words
from mmrag.judging.normalize import accuracy_from_matches, contains_phrase, vqa_normalize
from mmrag.judging.rules import ANSWER_RULES, AnswerContext, GenericRule, Match, norm_tokens

#: head nouns a named place is often said without ("the Mediterranean", "the Alps")
_GEO_HEADS = frozenset(
    "sea seas ocean oceans river rivers gulf bay lake lakes mountains mountain range island islands "
    "desert strait canal peninsula".split()
)


class EVQARule(GenericRule):
    """Encyclopedic-VQA: single answers by containment; ``multi_answer`` questions by the official
    list IoU (``evaluation_utils.multianswer_exact_match``: reference split at '&&', candidate at
    ',', ' and ', ' & '; IoU >= 0.5).  Replies are sentences, so a reference part counts as
    predicted when it appears in the reply, and only list items that name no reference part count
    against it."""

    rule_id = "evqa"
    IOU = 0.5

    def parts(self, ctx: AnswerContext) -> list[list[list[str]]]:
        """Each reference answer as a list of parts, each part as its alternative spellings."""
        meta = ctx.metadata.get("answer_parts")
        if isinstance(meta, list) and meta and all(isinstance(p, list) for p in meta):
            return [[[str(x)] for x in p] for p in meta]
        if not (
            (ctx.question_type or "").lower() in ("multi_answer", "multi-answer", "list")
            or any("&&" in a for a in ctx.answers)
        ):
            return []
        if "&&" in "".join(ctx.answers) and len({a.count("&&") for a in ctx.answers}) > 1:
            return [self.loose_parts("|".join(ctx.answers))]
        out = []
        for a in ctx.answers:
            sep = "&&" if "&&" in a else ","
            out.append([[p.strip()] for p in re.split(r"\s*(?:" + re.escape(sep) + r"|\band\b)\s*", a) if p.strip()])
        return out

    @staticmethod
    def loose_parts(raw: str) -> list[list[str]]:
        """A raw string whose '|' pieces hold different numbers of parts ("Amami Ōshima|Amami
        Oshima && Tokunoshima") cannot be whole answers from different annotators, as the release
        means '|': a one-part piece would make one island a complete answer.  Read it with '&&'
        binding looser than '|', i.e. '|' between spellings of one part (docs/footguns.md)."""
        return [[alt.strip() for alt in part.split("|") if alt.strip()] for part in raw.split("&&") if part.strip()]

    def part_forms(self, part: list[str]) -> list[str]:
        """How a list part may be said: any of its spellings, whole or without a generic head noun
        ("the Mediterranean" for "Mediterranean Sea", "the Andes" for "Andes Mountains")."""
        forms = []
        for alt in part:
            toks = norm_tokens(alt)
            forms.append(" ".join(toks))
            if len(toks) >= 2 and toks[-1] in _GEO_HEADS and len("".join(toks[:-1])) >= 4:
                forms.append(" ".join(toks[:-1]))
        return [f for f in forms if f]

    @staticmethod
    def answer_span(reply: str, names) -> str:
        """The sentences of a reply that name a reference part: list items elsewhere in a long reply
        ("... threatened by mongooses and feral cats") are not part of the answer's list."""
        hits = [s for s in sentences(reply) if names(s)]
        return " ".join(hits) if hits else reply

    def match(self, ctx: AnswerContext, reply: str) -> Match:
        parts = self.parts(ctx)
        if not parts:
            return super().match(ctx, reply)
        norm = " ".join(norm_tokens(reply))
        forms = [[self.part_forms(p) for p in ref] for ref in parts]
        every = [f for ref in forms for fs in ref for f in fs]

        def names(text: str) -> bool:
            t = " ".join(norm_tokens(text))
            return any(contains_phrase(t, f) for f in every)

        items = [i for i in re.split(r",|\band\b|&|;", self.answer_span(reply, names)) if i.strip()]
        best, complete = 0.0, False
        for ref in forms:
            hit = [fs for fs in ref if any(contains_phrase(norm, f) for f in fs)]
            # an item naming any reference's part ("grey (rufous)" beside grey && red) is no wrong extra
            extra = [i for i in items if len(words(i)) <= 3 and not names(i)]
            iou = len(hit) / (len(ref) + len(extra)) if ref else 0.0
            best = max(best, iou)
            complete = complete or (bool(ref) and len(hit) == len(ref))
        details = {"multi_answer_iou": round(best, 3)}
        if best >= 1.0:
            return Match(
                "gives", reply, "multi-answer IoU 1.00: every part, nothing else", kind="list", details=details
            )
        if best >= self.IOU:
            # the official rule credits a partial list; every labelled set calls one presented as complete
            # wrong: the rule says so (undecided only beside a negator: "the rest is not shown")
            return Match(
                "contradicts",
                reply,
                f"part of the list only (official IoU {best:.2f} >= {self.IOU} would credit it)",
                kind="list",
                # every part named, with words beside them the rules read as items: a reader's call
                certain=not set(words(reply)) & NEGATORS and not complete,
                details={**details, "official_credit": True},
            )
        if best > 0:
            return Match(
                "contradicts", reply, f"multi-answer IoU {best:.2f} < {self.IOU}", kind="list", details=details
            )
        return Match("absent", None, "no reference part in the reply", certain=False, details=details)


class VQASoftRule(GenericRule):
    """VQA soft matching (KnowHal positives): a reference matches when it equals the normalised
    reply or appears in it as whole words; the soft score is recorded in ``details``."""

    rule_id = "vqa"

    def match(self, ctx: AnswerContext, reply: str) -> Match:
        refs = [a for a in ctx.answers if a and a.strip()]
        if refs:
            pred = vqa_normalize(reply)
            nrefs = [vqa_normalize(r) for r in refs]
            soft = accuracy_from_matches([r == pred or contains_phrase(pred, r) for r in nrefs])
            exact = accuracy_from_matches([r == pred for r in nrefs])
            m = super().match(ctx, reply)
            m.details.update({"vqa_score": soft, "vqa_exact": exact})
            if soft > 0 and m.status != "gives" and m.certain:
                m = Match("gives", reply, f"VQA soft score {soft:.3f}", kind="contains", details=m.details)
            return m
        return super().match(ctx, reply)


ANSWER_RULES.put("evqa", EVQARule())
ANSWER_RULES.put("vqa", VQASoftRule())
ANSWER_RULES.put("knowhal", VQASoftRule())
