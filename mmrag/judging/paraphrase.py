"""A guarded paraphrase signal: MiniLM similarity between a reply and the reference's key phrase.

Replies to document and encyclopedic questions paraphrase the reference ("Mostly softer European
demand." for "The decline ... was mainly caused by weaker demand in the European market."), which
no word-overlap rule can credit without also crediting near misses.  This signal is asked only
for sentence references (four words or more: a short name's nearest neighbours are other names of
the same kind, "Sydney" for "Canberra") and only when the source's answer rule found the reference *absent* or found *too little* of its key phrase;
it embeds the reply and the reference's key phrase (the reference's words the question does not
hold) with the bundled MiniLM, after masking the question's own words in
the reply (:func:`mmrag.judging.semantic.mask_topic`), and calls the reply a paraphrase when the
cosine reaches ``threshold`` (0.58, chosen on tests/data/judge_tuning*.jsonl only).

Sentence embeddings put "rose" next to "fell", "red" next to "green" and 1999 next to 2001, so
the similarity alone is never trusted.  Guards (``data/paraphrase_guards.json``) refuse the call
when the reply holds a number the reference does not, a negator the reference lacks, another
member of a closed class the reference names (colours, shapes, months, ...), or the other side of
an opposite pair (increase / decrease, before / after, ...).  A paraphrase call is always
``decided = False``, so ``rule+llm`` hands it to the LLM judge.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Sequence

import numpy as np

from mmrag.judging.keyphrase import NEGATORS, STOPWORDS, is_sentence, stem, words

GUARDS_PATH = Path(__file__).parent / "data" / "paraphrase_guards.json"


@dataclass
class ParaphraseCall:
    similarity: float
    reference: str
    target: str
    blocked: str | None  # which guard refused the call, or None

    def gives(self, threshold: float) -> bool:
        return self.blocked is None and self.similarity >= threshold


def target_text(question: str, reference: str) -> str:
    """What the reference adds to the question, in its own words (a short reference whole)."""
    if not is_sentence(reference):
        return reference
    q = {stem(w) for w in words(question)}
    kept = [w for w in words(reference) if w not in STOPWORDS and stem(w) not in q]
    return " ".join(kept) or reference


class Guards:
    def __init__(self, path: str | Path = GUARDS_PATH) -> None:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        syn = data.get("synonyms", {})
        self.classes = {name: {syn.get(w, w) for w in members} for name, members in data["closed_classes"].items()}
        self.synonyms = syn
        self.opposites = [(set(a), set(b)) for a, b in data["opposites"]]
        self.symbols = data.get("symbols", {})

    def _spell(self, text: str) -> str:
        """Currency symbols as their codes ("€18" -> " eur 18"): words() drops symbols."""
        for sym, code in self.symbols.items():
            text = text.replace(sym, code)
        return text

    def blocked(self, question: str, reference: str, reply: str) -> str | None:
        q = set(words(question))
        ref, rep = set(words(self._spell(reference))), set(words(self._spell(reply)))
        if {t for t in rep if t[:1].isdigit()} - ref - q:
            return "number not in the reference"
        if rep & NEGATORS and not ref & NEGATORS:
            return "negation"
        ref_c = {self.synonyms.get(t, t) for t in ref}
        rep_c = {self.synonyms.get(t, t) for t in rep}
        for name, members in self.classes.items():
            a, b = ref_c & members, rep_c & members - q
            if a and b and not a & b:
                return f"other {name}"
        for left, right in self.opposites:
            ra, rb = bool(ref & left), bool(ref & right)
            pa, pb = bool(rep & left), bool(rep & right)
            if (ra != rb) and (pa != pb) and ra != pa:
                return "opposite direction"
        return None


@lru_cache(maxsize=1)
def default_guards() -> Guards:
    """The shipped guards, read once (the paraphrase signal and the combiner's ``contrast``)."""
    return Guards()


class ParaphraseSignal:
    """Cosine of reply and reference key phrase under :class:`Guards`; embeddings share the
    semantic detector's encoder and memo (batched per ``judge_many`` by
    :func:`mmrag.judging.semantic.judge_batched`)."""

    def __init__(self, bank, threshold: float = 0.58, guards: Guards | None = None) -> None:
        self.bank = bank
        self.threshold = threshold
        self._guards = guards

    @cached_property
    def guards(self) -> Guards:
        return self._guards or default_guards()

    def best(self, question: str, references: Sequence[str], reply: str) -> ParaphraseCall | None:
        from mmrag.judging.semantic import mask_topic

        refs = [r for r in references if r and r.strip() and is_sentence(r)]
        if not refs or not reply.strip():
            return None
        masked = mask_topic(reply, question)
        targets = [target_text(question, r) for r in refs]
        self.bank.prime([masked, *targets])
        v = _unit(self.bank._memo[masked])
        calls = []
        for ref, tgt in zip(refs, targets):
            sim = float(v @ _unit(self.bank._memo[tgt]))
            calls.append(ParaphraseCall(sim, ref, tgt, self.guards.blocked(question, ref, reply)))
        return max(calls, key=lambda c: (c.blocked is None, c.similarity))


def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n else v


__all__ = ["ParaphraseSignal", "ParaphraseCall", "Guards", "target_text"]
