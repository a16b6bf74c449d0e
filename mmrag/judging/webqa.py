"""WebQA's category-aware answer rule (``Qcate``), after the official QA-accuracy evaluator.

WebQA_Baseline's ``eval_1022.py`` compares a reply with the answer's keywords differently per
question category: for ``color``, ``shape`` and ``YesNo`` only the words of that category's
vocabulary count; for ``number`` only the numbers (number words read with ``word2number``); for
every other category a bag-of-words recall.  The reply's words that the question already holds are
excluded (the evaluator's ``exclude``).  The vocabularies are the official ones, kept as data in
``data/webqa_vocab.json``.  Keywords are the reference's key phrase (:mod:`mmrag.judging.keyphrase`),
since the release does not publish ``Keywords_A``.

The official score is a graded F1 or recall; a verdict needs a line, and ours is SimpleQA's: a reply
is correct when it carries *all* the reference's category words and at most as many others
(recall 1, precision >= 0.5), contradicts when its category words miss the reference entirely, and
is left undecided (``certain=False``) in between.  ``choose`` questions ("Which is taller, X or Y?")
compare which alternative the reply and the reference name first.  A category whose words a reply
does not use falls back to the bag-of-words rule, so a paraphrase still has its chance.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cached_property
from pathlib import Path

from mmrag.judging.keyphrase import key_phrase
from mmrag.judging.lexicon import NEGATORS, STOPWORDS, direction, stem, words
from mmrag.judging.rules import ANSWER_RULES, AnswerContext, GenericRule, Match

VOCAB_PATH = Path(__file__).parent / "data" / "webqa_vocab.json"
_NUM = re.compile(r"^\d+(?:\.\d+)?$")
_COMPOUND = re.compile(r"\b([A-Za-z]+)-([A-Za-z]+)\b")  # "golden-yellow", "blue-grey"


def _free(tokens: tuple[str, ...], keep: Callable[[str], bool]) -> list[str]:
    """Tokens that satisfy ``keep`` and are not negated by one of the two words before them."""
    return [t for i, t in enumerate(tokens) if keep(t) and not any(w in NEGATORS for w in tokens[max(0, i - 2) : i])]


class WebQARule(GenericRule):
    rule_id = "webqa"

    def __init__(self, vocab_path: str | Path = VOCAB_PATH) -> None:
        super().__init__()
        self.vocab_path = Path(vocab_path)

    @cached_property
    def vocab(self) -> dict[str, frozenset[str]]:
        data = json.loads(self.vocab_path.read_text(encoding="utf-8"))
        return {k: frozenset(v) for k, v in data.items() if isinstance(v, list)}

    @cached_property
    def canonical(self) -> dict[str, str]:
        return dict(json.loads(self.vocab_path.read_text(encoding="utf-8")).get("canonical", {}))

    def category(self, ctx: AnswerContext) -> str:
        return str(ctx.question_type or ctx.metadata.get("Qcate") or ctx.metadata.get("question_type") or "Others")

    def match(self, ctx: AnswerContext, reply: str) -> Match:
        handlers = {
            "color": self._domain,
            "shape": self._domain,
            "number": self._number,
            "YesNo": self._yes_no,
            "choose": self._choose,
        }
        cat = self.category(ctx)
        handler = handlers.get(cat)
        m = handler(ctx, reply, cat) if handler else None
        if m is None:
            m = super().match(ctx, reply)
        m.details["qcate"] = cat
        return m

    # -- category rules ------------------------------------------------------------------------
    @staticmethod
    def _overlap(gold: set[str], said: set[str], what: str) -> Match:
        hit = gold & said
        recall, precision = len(hit) / len(gold), len(hit) / len(said)
        details = {"gold_words": sorted(gold), "reply_words": sorted(said)}
        if recall == 1.0 and precision >= 0.5:
            return Match(
                "gives",
                " ".join(sorted(hit)),
                f"reply's {what} match the reference" + ("" if precision == 1.0 else " (with others beside)"),
                kind="category",
                details=details,
                certain=precision == 1.0,  # "four towers, two on each side": which one is the answer?
            )
        if not hit:
            return Match(
                "contradicts",
                " ".join(sorted(said)),
                f"reply's {what} differ from the reference",
                kind="category",
                details=details,
            )
        return Match(
            "contradicts",
            " ".join(sorted(said)),
            f"reply's {what} only partly match the reference",
            certain=False,
            details=details,
        )

    def _domain(self, ctx: AnswerContext, reply: str, cat: str) -> Match | None:
        domain = self.vocab[cat]
        canon = self.canonical
        q = set(words(ctx.question))
        gold: list[str] = []  # in the reference's order: its first colour or shape is the one asked about
        for ref in ctx.answers:
            toks = words(ref)
            picked = [t for t in toks if t in domain and t not in q] or [t for t in toks if t in domain]
            gold += [canon.get(t, t) for t in picked if t != "yes"]
        # a compound ("golden-yellow", "blue-grey") is one colour, its last part: read the reply that way
        reply = _COMPOUND.sub(
            lambda m: m.group(2) if m.group(1).lower() in domain and m.group(2).lower() in domain else m.group(0), reply
        )
        said = [
            canon.get(t, t) for t in _free(words(reply), lambda t: t in domain and t != "yes") if t not in q - set(gold)
        ]
        gold, said = list(dict.fromkeys(gold)), list(dict.fromkeys(said))
        if not gold or not said:
            return None
        m = self._overlap(set(gold), set(said), f"{cat} words")
        details = {**m.details, "first_gold": gold[0], "first_said": said[0]}
        if said[0] != gold[0] and said[0] in gold[1:] or said[0] not in gold and set(gold) <= set(said):
            # "Yellow with white centres" for "white flowers with yellow centres": the words match, the
            # attribution does not (the reply leads with another part's colour); the combiner decides
            return Match(
                "contradicts",
                " ".join(said),
                f"reply's {cat} words are the reference's in another attribution",
                certain=False,
                details=details,
            )
        if said == [gold[0]] and len(gold) > 1:
            # "White." for "white canvas over a red lattice frame": the colour asked about, the rest left out
            return Match(
                "gives", said[0], f"reply gives the reference's first {cat} word only", certain=False, details=details
            )
        m.details.update(details)
        return m

    def _number(self, ctx: AnswerContext, reply: str, cat: str) -> Match | None:
        q = set(words(ctx.question))
        gold = {t for ref in ctx.answers for t in words(ref) if _NUM.match(t) and t not in q}
        said = set(_free(words(reply), lambda t: bool(_NUM.match(t)))) - q
        if not gold or not said:
            return None
        return self._overlap(gold, said, "numbers")

    def _yes_no(self, ctx: AnswerContext, reply: str, cat: str) -> Match | None:
        return self.yes_no_rule([a for a in ctx.answers if a], reply)

    def _choose(self, ctx: AnswerContext, reply: str, cat: str) -> Match | None:
        alts = alternatives(ctx.question)
        if not alts:
            return None
        gold = {pick(alts, r) for r in ctx.answers} - {None}
        said = pick(alts, reply)
        if len(gold) != 1 or said is None:
            return None
        g = gold.pop()
        # "The Space Needle is shorter than the CN Tower" to "Which is taller, ...": the comparison
        # stated from the other side names the other alternative first
        qd, rd = direction(words(ctx.question)), direction(words(reply))
        details: dict = {"alternatives": [list(a) for a in alts]}
        if qd and rd and qd != rd and "than" in words(reply) and len(alts) == 2:
            said = 1 - said
            # the comparison's direction is read here; the slot doubt must not re-open it
            details["settled"] = "comparison stated from the other side"
        name = " ".join(alts[said])
        # "I have a height for Fuji but none for Etna": naming one side while declining is undecided
        return Match(
            "gives" if said == g else "contradicts",
            name,
            f"reply picks {name!r} of the question's two candidates",
            certain=not set(words(reply)) & NEGATORS,
            kind="choice",
            details=details,
        )


def alternatives(question: str) -> list[tuple[str, ...]] | None:
    """The two alternatives of an "X or Y" question, as the stems that tell them apart."""
    q = question.strip().rstrip("?.! ")
    m = re.search(r"(?:^|[,:;])\s*([^,:;]*?)\s+or\s+([^,:;]*)$", q)
    if not m:
        return None
    left = [stem(w) for w in words(m.group(1)) if w not in STOPWORDS]
    right = [stem(w) for w in words(m.group(2)) if w not in STOPWORDS]
    a, b = tuple(t for t in left if t not in right), tuple(t for t in right if t not in left)
    return [a, b] if a and b else None


def pick(alts: list[tuple[str, ...]], text: str) -> int | None:
    """Index of the alternative ``text`` names first (negated mentions skipped), or None."""
    toks = tuple(stem(w) for w in words(text))
    first: dict[int, int] = {}
    for i, t in enumerate(toks):
        if any(w in NEGATORS for w in toks[max(0, i - 2) : i]):
            continue
        for k, alt in enumerate(alts):
            if t in alt and k not in first:
                first[k] = i
    return min(first, key=first.__getitem__) if first else None


ANSWER_RULES.put("webqa", WebQARule())
__all__ = ["WebQARule", "alternatives", "pick", "key_phrase"]
