"""Hard-negative mining from the text, visual and multimodal indices (VLM-DeflectionBench stage II).

For a sample, :class:`IndexMiner` asks the index of the chosen modality for the documents most
similar to a *mining query* built from the sample and its gold evidence, then filters:

1. gold documents, and every document of a gold entity (``sample.entity_id`` and the gold
   documents' ``entity_id``) are excluded — they are positives, not negatives;
2. answer leaks are dropped and counted: a candidate whose title or text contains a key phrase of a
   gold answer or alias (case-insensitive, on word boundaries; for a sentence answer also its new
   information, see :func:`key_phrases`) would turn an adversarial prompt into an oracle one;
3. duplicates are dropped: the same id, or the same content (normalised text + image) as a gold
   document or an earlier candidate;
4. with ``strict_modality`` (default) a candidate must be of the asked modality: a "text" negative
   is a text passage even though the text index also holds captions.

Mining queries (the paper mines text negatives with EVA-CLIP pages reranked by Contriever, and
visual negatives as the images most similar to the gold image; we do the analogue on one index):

* text: the question followed by the gold documents' text (so negatives resemble the evidence);
* visual: the first gold image, else the query image, else the question (if the encoder embeds
  text), else a *bridge*: the image of the best non-gold-entity document that the multimodal (else
  text) index finds for the text query;
* multimodal: question + gold text, with the gold (else query) image, fused by the index's encoder.

Selection is stable for a seed: candidates are ranked by similarity with ties broken by a seeded
hash of the document id; the ``n`` hardest are taken, or, with ``pool_factor`` > 1, ``n`` are drawn
(seeded) from the top ``n * pool_factor`` and returned in similarity order.  Modality ``"any"``
takes candidates round-robin across the available kinds, starting at a kind drawn from (seed,
sample id): at n = 2 one prompt holds two kinds, and across samples all three appear (the paper's
"multimodal contexts via different indices"); a fixed start would never show the third kind.
When fewer than ``n`` survive, ``shortfall`` says how many are missing.

Query vectors are cached per (kind, query), so deeper searches and repeated calls (several
scenarios, seeds or distractor counts for one sample) embed once, and, given ``vector_cache`` (a
file; :func:`~mmrag.retrieval.world.build_world_miner` puts one beside its indices), across
processes too (:mod:`mmrag.retrieval.vectors`); :meth:`IndexMiner.prefetch` embeds the mining
queries of a whole benchmark in one batch per kind.  A mining result is kept per (sample, n,
modality, seed): the realistic and adversarial scenarios of a sample, and every model of a run,
ask for the same negatives, which are then searched and filtered once.
"""

from __future__ import annotations

import hashlib
import heapq
import math
import random
import re
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mmrag.errors import InputError
from mmrag.indices.build import document_text
from mmrag.indices.registry import encoder_modalities
from mmrag.retrieval.base import DocStore, MiningResult, Query, Retriever
from mmrag.retrieval.vectors import QueryVectorCache, vector_key
from mmrag.schema import Document, Sample, stable_id

KIND_OF = {"text": "text", "image": "visual", "visual": "visual", "multimodal": "multimodal"}
DOC_MODALITY_OF_KIND = {"text": "text", "visual": "image", "multimodal": "multimodal"}
KIND_ORDER = ("text", "visual", "multimodal")


#: words that never make a key phrase on their own (articles, auxiliaries, yes/no, pronouns...)
_FILLER = frozenset(
    """a an the yes no yeah nope both all either neither it its this that these those they there
is are was were be been being has have had do does did to of in on at by for with from and or but as not
so than very also which who what where when how why one ones""".split()
)
_WORD = re.compile(r"\w+(?:['’]\w+)*")


def key_phrases(answer: str, question: str = "") -> list[str]:
    """The spans of ``answer`` that state the gold fact.

    A short answer ("1887", "Edward Whymper") is its own key phrase.  A sentence answer (WebQA's
    "Yes, both are home to trajinera boats.", "The roof of the temple is red.") is also cut down
    to its new information: the answer's words with the leading and trailing words that only
    repeat the question or are fillers trimmed off ("red"), so a negative stating the fact in
    other words around it is still caught.  Nothing is derived when every word repeats the
    question (a bare yes/no fact cannot be told apart from its topic)."""
    words = _WORD.findall(answer)
    phrases = [" ".join(answer.split()).strip(" .!?,;:")]
    if len(words) <= 3:
        return [p for p in phrases if p]
    known = {w.lower() for w in _WORD.findall(question)} | _FILLER
    lo, hi = 0, len(words)
    while lo < hi and words[lo].lower() in known:
        lo += 1
    while hi > lo and words[hi - 1].lower() in known:
        hi -= 1
    core = words[lo:hi]
    if core and len(core) <= 6 and any(len(w) >= 3 for w in core):
        phrases.append(" ".join(core))
    return [p for p in dict.fromkeys(phrases) if p]


def leak_pattern(answers: list[str], question: str = "") -> re.Pattern[str] | None:
    """One case-insensitive, word-bounded pattern over every answer's key phrases."""
    alts = sorted(
        {" ".join(k.split()) for a in answers if a and a.strip() for k in key_phrases(a, question)},
        key=len,
        reverse=True,
    )
    if not alts:
        return None
    body = "|".join(re.escape(a).replace(r"\ ", r"\s+") for a in alts)
    return re.compile(rf"(?<!\w)(?:{body})(?!\w)", re.IGNORECASE)


def content_key(doc: Document) -> tuple[str, str]:
    img = "" if doc.image is None else (doc.image.sha256 or doc.image.path)
    return " ".join(doc.text.lower().split()), img


class IndexMiner:
    """``IndexMiner(store, {"text": r1, "visual": r2, "multimodal": r3})``; any Retriever works."""

    def __init__(
        self,
        store: DocStore,
        retrievers: Mapping[str, Retriever],
        *,
        pool_factor: float = 1.0,
        strict_modality: bool = True,
        max_query_chars: int = 512,
        cache_size: int = 16384,
        vector_cache: str | Path | QueryVectorCache | None = None,
    ) -> None:
        self.store = store
        self.retrievers = {KIND_OF.get(k, k): r for k, r in retrievers.items()}
        unknown = set(self.retrievers) - set(KIND_ORDER)
        if unknown:
            raise InputError(
                f"unknown index kind(s) {sorted(unknown)} (text | visual | multimodal)", field="retrievers"
            )
        if pool_factor < 1:
            raise InputError("pool_factor must be >= 1", field="pool_factor")
        self.pool_factor = float(pool_factor)
        self.strict_modality = strict_modality
        self.max_query_chars = int(max_query_chars)
        self._entity_docs: dict[str, list[str]] | None = None
        self._hits: OrderedDict[tuple, list[tuple[str, float]]] = OrderedDict()
        self._vecs: OrderedDict[tuple, Any] = OrderedDict()
        self._results: OrderedDict[tuple, MiningResult] = OrderedDict()
        self._ties: dict[tuple[int, str], str] = {}
        self._texts: dict[str, tuple[Document, str]] = {}
        self._content_keys: dict[tuple, tuple[Document, tuple[str, str]]] = {}
        self._cache_size = cache_size
        #: query vectors on disk (shared by processes and runs over the same indices), or None
        self.vector_cache = (
            vector_cache
            if vector_cache is None or isinstance(vector_cache, QueryVectorCache)
            else QueryVectorCache(vector_cache)
        )

    @property
    def kinds(self) -> list[str]:
        return [k for k in KIND_ORDER if k in self.retrievers]

    # -- the mining query ------------------------------------------------------------------
    def _gold(self, sample: Sample) -> list[Document]:
        out = []
        for g in sample.gold_doc_ids:
            if g not in self.store:
                raise InputError(
                    f"sample '{sample.id}': gold document '{g}' is not in the document store", field="gold_doc_ids"
                )
            out.append(self.store.get(g))
        return out

    def mining_query(self, sample: Sample, kind: str) -> Query | None:
        gold = self._gold(sample)
        text = " ".join([sample.question] + [document_text(d) for d in gold if d.text.strip()])
        text = text[: self.max_query_chars]
        gold_imgs = [d.image for d in gold if d.image is not None]
        image = gold_imgs[:1] or list(sample.images[:1])
        if kind == "text":
            return Query(text=text)
        if kind == "visual":
            if image:
                return Query(images=image)
            encoder = getattr(self.retrievers[kind], "encoder", None)
            if encoder is None or "text" in encoder_modalities(encoder):
                return Query(text=sample.question)
            bridge = self._bridge_image(sample, text)
            return Query(images=[bridge]) if bridge is not None else None
        return Query(text=text, images=image)

    def _bridge_image(self, sample: Sample, text: str):
        """A text-only sample asking for image negatives against an image-only encoder: use the
        image of the best non-gold-entity document the multimodal (else text) index finds for the
        text query, so the visual negatives still sit near what the question is about."""
        excluded = self.excluded(sample)
        for kind in ("multimodal", "text"):
            if kind not in self.retrievers:
                continue
            for doc_id, _ in self._search(sample, kind, Query(text=text), 32):
                doc = self.store.get(doc_id) if doc_id in self.store else None
                if doc is not None and doc.image is not None and doc.id not in excluded:
                    return doc.image
        return None

    # -- candidates ------------------------------------------------------------------------
    def _entity_index(self) -> dict[str, list[str]]:
        if self._entity_docs is None:
            self._entity_docs = {}
            for d in self.store:
                if d.entity_id is not None:
                    self._entity_docs.setdefault(d.entity_id, []).append(d.id)
        return self._entity_docs

    def excluded(self, sample: Sample) -> set[str]:
        gold = self._gold(sample)
        entities = {e for e in [sample.entity_id, *(d.entity_id for d in gold)] if e is not None}
        out = {d.id for d in gold}
        for e in entities:
            out.update(self._entity_index().get(e, []))
        return out

    def _remember(self, cache: OrderedDict, key: tuple, value: Any) -> Any:
        cache[key] = value
        while len(cache) > self._cache_size:
            cache.popitem(last=False)
        return value

    def _embed(self, kind: str, queries: dict[str, Query]) -> int:
        """Put the vectors of ``queries`` (query JSON -> query) that are not in memory there: read
        from the vector cache, the rest embedded in one batch (and written to the cache).  Returns
        how many were embedded."""
        r = self.retrievers[kind]
        todo = {key: q for key, q in queries.items() if (kind, key) not in self._vecs}
        if not todo:
            return 0
        found: dict[str, Any] = {}
        encoder = getattr(r, "encoder", None)
        disk_keys: dict[str, str] = {}
        if self.vector_cache is not None and encoder is not None:
            fp = str(getattr(encoder, "fingerprint", r.fingerprint))
            disk_keys = {key: vector_key(fp, kind, q) for key, q in todo.items()}
            stored = self.vector_cache.get_many(list(disk_keys.values()), int(getattr(encoder, "dim", 0) or 0))
            found = {key: stored[dk] for key, dk in disk_keys.items() if dk in stored}
        missing = [key for key in todo if key not in found]
        if missing:
            vecs = r.encode([todo[key] for key in missing])  # type: ignore[attr-defined]
            found.update(zip(missing, vecs))
            if disk_keys and self.vector_cache is not None:
                self.vector_cache.put_many([(disk_keys[key], found[key]) for key in missing])
        for key in todo:
            self._remember(self._vecs, (kind, key), found[key])
        return len(missing)

    def _search(self, sample: Sample, kind: str, query: Query, depth: int) -> list[tuple[str, float]]:
        """Search one kind: (doc id, score) per hit, best first.  A dense retriever's query vector
        is cached (and deeper searches reuse it), other retrievers' hit lists are cached per depth."""
        r = self.retrievers[kind]
        qkey = (kind, query.model_dump_json())
        if hasattr(r, "encode") and hasattr(r, "retrieve_vectors"):
            vec = self._vecs.get(qkey)
            if vec is None:
                self._embed(kind, {qkey[1]: query})
                vec = self._vecs[qkey]
            if hasattr(r, "search_ids"):
                return r.search_ids(vec[None, :], depth)[0]
            return [(h.doc_id, h.score) for h in r.retrieve_vectors(vec[None, :], depth)[0]]
        key = (*qkey, depth)
        if key not in self._hits:
            self._remember(self._hits, key, [(h.doc_id, h.score) for h in r.retrieve([query], depth)[0]])
        return self._hits[key]

    def prefetch(self, samples: Iterable[Sample], modalities: Iterable[str] = ("text", "image", "multimodal")) -> int:
        """Embed the mining queries of many samples in one batch per index kind (what makes mining
        for a whole benchmark fast: one encoder call instead of one per sample).  Returns how many
        query vectors were computed.  Optional: ``negatives`` works without it."""
        samples = list(samples)
        done = 0
        kinds = [KIND_OF[m] for m in modalities if m != "any"] if "any" not in modalities else self.kinds
        for kind in sorted(set(kinds) & set(self.retrievers), key=lambda k: ("text", "multimodal", "visual").index(k)):
            r = self.retrievers[kind]
            if not (hasattr(r, "encode") and hasattr(r, "retrieve_vectors")):
                continue
            todo: dict[str, Query] = {}
            for s in samples:
                q = self.mining_query(s, kind)
                if q is not None:
                    todo[q.model_dump_json()] = q
            done += self._embed(kind, todo)
        return done

    def candidates(
        self, sample: Sample, kind: str, want: int, seed: int = 0, top: int | None = None
    ) -> tuple[list[tuple[Document, float]], set[str]]:
        """Filtered candidates of one kind in similarity order (at least ``want`` when the index has
        them; only the first ``top`` when given), and the ids dropped as answer leaks."""
        query = self.mining_query(sample, kind)
        if query is None:
            return [], set()
        excluded = self.excluded(sample)
        pattern = leak_pattern(sample.answers, sample.question)
        seen_content = {content_key(self.store.get(g)) for g in sample.gold_doc_ids}
        depth = 4 * want + len(excluded) + 8
        want_modality = DOC_MODALITY_OF_KIND[kind] if self.strict_modality else None
        scanned: list[tuple[str, float]] = []
        while True:
            hits = self._search(sample, kind, query, depth)
            if hits[: len(scanned)] != scanned:  # not an extension of the shallower search: start over
                scanned = []
            if not scanned:
                leaks: set[str] = set()
                kept: list[tuple[Document, float]] = []
                seen_ids: set[str] = set()
                contents = set(seen_content)
            # a deeper search begins with the hits already filtered: only the new ones are looked at
            for doc_id, score in hits[len(scanned) :]:
                if doc_id in excluded or doc_id in seen_ids or doc_id not in self.store:
                    continue
                seen_ids.add(doc_id)
                doc = self.store.get(doc_id)
                if want_modality is not None and doc.modality != want_modality:
                    continue
                if pattern is not None and pattern.search(self._haystack(doc)):
                    leaks.add(doc.id)
                    continue
                ck = self._content_key(doc)
                if ck in contents:
                    continue
                contents.add(ck)
                kept.append((doc, float(score)))
            scanned = hits
            if len(kept) >= want or len(hits) < depth or depth >= 65536:
                break
            depth *= 4
        order = lambda ds: (-round(ds[1], 6), self._tie(seed, ds[0].id))  # noqa: E731
        if top is not None and top < len(kept):  # the same head as a full sort: the key is a total order
            return heapq.nsmallest(top, kept, key=order), leaks
        kept.sort(key=order)
        return kept, leaks

    def _haystack(self, doc: Document) -> str:
        """What the answer-leak pattern searches in a document (kept per document: every sample
        whose search reaches it looks at it again)."""
        got = self._texts.get(doc.id)
        if got is None or got[0] is not doc:
            got = self._texts[doc.id] = (doc, f"{doc.title}\n{doc.text}")
        return got[1]

    def _content_key(self, doc: Document) -> tuple[str, str]:
        """:func:`content_key` of a document, kept per document (and image hash, should it be set)."""
        key = (doc.id, None if doc.image is None else doc.image.sha256)
        got = self._content_keys.get(key)
        if got is None or got[0] is not doc:
            got = self._content_keys[key] = (doc, content_key(doc))
        return got[1]

    def _tie(self, seed: int, doc_id: str) -> str:
        """The seeded tie-break of a document (the same for every sample: computed once)."""
        key = (seed, doc_id)
        got = self._ties.get(key)
        if got is None:
            if len(self._ties) > 1 << 20:
                self._ties.clear()
            got = self._ties[key] = hashlib.sha256(f"{seed}:{doc_id}".encode()).hexdigest()
        return got

    def _select(self, cands: list[tuple[Document, float]], n: int, sample: Sample, seed: int, kind: str):
        pool = cands[: max(n, math.ceil(n * self.pool_factor))]
        if len(pool) <= n:
            return pool
        rng = random.Random(stable_id("mine", seed, sample.id, kind))
        chosen = set(rng.sample(range(len(pool)), n))
        return [c for i, c in enumerate(pool) if i in chosen]

    # -- the protocol ----------------------------------------------------------------------
    def negatives(self, sample: Sample, n: int, modality: str = "text", seed: int = 0) -> MiningResult:
        """The ``n`` negatives of ``sample`` (see the module docstring); one search per (sample
        content, n, modality, seed) and miner, however many scenarios and models ask."""
        key = (
            sample.id,
            sample.question,
            tuple(sample.gold_doc_ids),
            tuple(sample.answers),
            sample.entity_id,
            tuple(im.path for im in sample.images),
            n,
            modality,
            seed,
        )
        got = self._results.get(key)
        if got is None:
            got = self._remember(self._results, key, self._mine(sample, n, modality, seed))
        return got

    def _mine(self, sample: Sample, n: int, modality: str, seed: int) -> MiningResult:
        if n < 0:
            raise InputError("the number of negatives must be >= 0", field="n")
        if modality == "any":
            kinds = self.kinds
        else:
            if modality not in KIND_OF:
                raise InputError(
                    f"unknown negative modality '{modality}' (text | image | multimodal | any)", field="modality"
                )
            kinds = [KIND_OF[modality]]
            if kinds[0] not in self.retrievers:
                raise InputError(
                    f"no {kinds[0]} index is available for mining (have: {', '.join(self.kinds)})", field="modality"
                )
        if n == 0 or not kinds:
            return MiningResult(documents=[], requested=n, shortfall=n)
        per_kind, leaks = {}, set()
        for kind in kinds:
            pool = max(n, math.ceil(n * self.pool_factor))  # what _select draws from
            cands, dropped = self.candidates(sample, kind, math.ceil(n * self.pool_factor) + n, seed, top=pool)
            per_kind[kind] = self._select(cands, n, sample, seed, kind)
            leaks |= dropped
        picked: list[tuple[Document, float, str]] = []
        ids, contents = set(), set()
        start = int(stable_id("any-start", seed, sample.id, length=8), 16) % len(kinds)
        order = kinds[start:] + kinds[:start]
        cursors = {k: 0 for k in order}
        while len(picked) < n and any(cursors[k] < len(per_kind[k]) for k in order):
            for k in order:
                while cursors[k] < len(per_kind[k]):
                    doc, score = per_kind[k][cursors[k]]
                    cursors[k] += 1
                    if doc.id not in ids and content_key(doc) not in contents:
                        ids.add(doc.id)
                        contents.add(content_key(doc))
                        picked.append((doc, score, k))
                        break
                if len(picked) >= n:
                    break
        return MiningResult(
            documents=[p[0] for p in picked],
            requested=n,
            shortfall=n - len(picked),
            dropped_leaks=len(leaks),
            scores=[p[1] for p in picked],
            sources=[p[2] for p in picked],
        )
