"""A learned combiner for the verdicts the rules leave undecided.

Why: hand-written phrase rules fitted to the tuning files scored 0.90-0.99 on them and 0.80 on
replies written by someone else.  The rules are kept for what they decide with confidence
(``details["decided"] == True``: exact matches, numbers in range, a chosen option letter, a bare
refusal); every *undecided* verdict (a paraphrase call, a refusal with explanation, "asserts
something without the reference", no option letter found, a KnowHal premise reply the patterns
cannot place) goes to a small multinomial logistic regression over signals the judge already
computes, and the combiner's class replaces the rule's when its probability reaches
``min_confidence`` (``min_confidence_correct`` to credit an answer); otherwise the rule verdict stands (``unparseable`` included).  A combined
verdict stays ``decided = False``, so ``rule+llm`` still sends it to the LLM judge.

Features (:func:`features`, all bounded, one fixed order named in :data:`FEATURES`): the rule's
outcome and path, the semantic detector's per-clause deflection logits and candidate flag, the
MiniLM cosine of the (topic-masked) reply with the best reference / the gold option / the best
other option, the rule's key-phrase recall and paraphrase similarity, and surface cues (length,
digits, hedges, negators, refusal patterns, overlap with the question, with the reference).

The weights ship as plain JSON (``data/combiner.json``: feature names, standardisation, one row
per class; never pickle) and are rebuilt by ``tools/judge_fit.py`` from every labelled file in
``tests/data`` (``--lofo`` reports leave-one-file-out kappa).  Embeddings go through the semantic
bank's memo, so ``judge_many`` batching still holds: an item that needs any embedding asks for all
of its texts at its first miss (:meth:`mmrag.judging.semantic.PrototypeBank.also_need`).
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path
from typing import Sequence

import numpy as np

from mmrag.judging.align import ALIGN_FEATURES, alignment_features
from mmrag.judging.keyphrase import NEGATORS, STOPWORDS, negated_at, stem, words
from mmrag.judging.language import foreign_refusal
from mmrag.judging.slots import SLOT_FEATURES, slot_features
from mmrag.judging.support import SUPPORT_FEATURES, support_features
from mmrag.schema import Prompt, Response, Sample, Verdict

WEIGHTS_PATH = Path(__file__).parent / "data" / "combiner.json"
CLASSES = ("correct", "deflection", "hallucination")
OUTCOMES = ("correct", "deflection", "hallucination", "unparseable")
PATHS = ("open", "mcq", "premise")
GATES = (*(f"path_{p}" for p in PATHS), "sentence_ref")  # features that gate a copy of every feature

FEATURES: tuple[str, ...] = (
    *(f"rule_{o}" for o in OUTCOMES), *(f"path_{p}" for p in PATHS),
    "sem_max", "sem_min", "sem_mean", "sem_candidate", "sem_units",
    "sim_gold", "sim_other", "sim_margin", "key_recall", "has_key_recall", "para_sim",
    "log_words", "has_digit", "digit_in_ref", "hedge", "negator", "refusals", "refusal_explained",
    "q_overlap", "ref_overlap", "nota_text", "options_named",
    "rule_decided", "ref_negated", "prefix_overlap", "vague", "specific",
    "multi_partial", "extra_names", "unit_converted", "other_number", "fuzzy", "disjunction",
    "q_negated", "sim_q", "sim_lift", *SLOT_FEATURES, *SUPPORT_FEATURES, "foreign", "premise_named",
    "contrast", *ALIGN_FEATURES,
)

_GUESS = re.compile(r"\b(?:probably|likely|perhaps|maybe|possibly|i think|i believe|i guess|looks like|"
                    r"appears to|seems to|could be|might be|or)\b", re.I)
_VAGUE = re.compile(r"\b(?:some ?time|early|mid|late|around|about|roughly|several|many|few|some|very|quite|"
                    r"pretty|large|small|big|medium|hard to say|difficult|unclear|various)\b", re.I)
_NOTA = re.compile(r"\bnone of (?:the|these|them)\b|\bneither\b|\bno (?:such|matching) option\b", re.I)


def expand(x: np.ndarray) -> np.ndarray:
    """The features, then one copy per rule path (open / mcq / premise) that is non-zero only on
    that path: a cue means different things on different paths (the reference under a negator is a
    wrong answer to an open question, and the right rejection of a KnowHal false premise); and one
    copy for sentence references (MMDocRAG, WebQA), where low word recall is the rule, not a miss."""
    x = np.atleast_2d(x)
    blocks = [x] + [x * x[:, [FEATURES.index(g)]] for g in GATES]
    return np.hstack(blocks)


def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n else v


@dataclass
class View:
    """What the features read from one item: the reply, the question stem, the gold texts, the
    other options' texts (multiple choice), the path the rules took and (multiple choice) the gold
    letter, which a combined "correct" reports as extracted."""

    reply: str
    stem: str
    gold: list[str]
    others: list[str]
    path: str
    label: str | None = None


def view_of(sample: Sample, prompt: Prompt, response: Response) -> View:
    from mmrag.judging.mcq import effective_choices, strip_reasoning
    from mmrag.judging.open_answer import OpenAnswerRules, alternatives_of

    choices, label = effective_choices(sample, prompt)
    # what the rules read: after a reasoning block, after a final "Answer:" marker
    reply = strip_reasoning(response.text or "") if choices and label else OpenAnswerRules.body_of(response.text or "")
    if choices and label:
        stem_q = sample.question.split("\n")[0]
        gold = [c.text for c in choices if c.letter == label]
        others = [c.text for c in choices if c.letter != label]
        return View(reply, stem_q, gold, others, "mcq", label)
    gold = alternatives_of(sample.answers)
    if sample.metadata.get("polarity") == "negative":
        fp = sample.metadata.get("false_premise")
        return View(reply, sample.question, gold + ([str(fp)] if fp else []), [], "premise")
    return View(reply, sample.question, gold, [], "open")


def embed_texts(view: View) -> list[str]:
    """Every text whose embedding :func:`features` reads (asked for in one batch)."""
    from mmrag.judging.paraphrase import default_guards, target_text
    from mmrag.judging.semantic import mask_topic, units

    masked = mask_topic(view.reply, view.stem)
    targets = [target_text(view.stem, g) for g in view.gold if g.strip()] + [o for o in view.others if o.strip()]
    return [masked, *(mask_topic(u, view.stem) for u in units(view.reply)), *targets, *([view.stem] if view.stem.strip() else [])]


def features(view: View, verdict: Verdict, bank) -> np.ndarray:
    """The feature vector of one undecided verdict (order: :data:`FEATURES`)."""
    from mmrag.judging.deflection import DEFAULT_DETECTOR
    from mmrag.judging.paraphrase import default_guards, target_text
    from mmrag.judging.semantic import asserts_candidate, mask_topic, units

    bank.prime(embed_texts(view))
    f: dict[str, float] = {f"rule_{verdict.outcome}": 1.0, f"path_{view.path}": 1.0}
    parts = units(view.reply)
    scores = bank.scores([mask_topic(u, view.stem) for u in parts]) if parts else [0.0]
    clip = [max(-8.0, min(8.0, s)) / 4.0 for s in scores]
    f.update(sem_max=max(clip), sem_min=min(clip), sem_mean=sum(clip) / len(clip),
             sem_candidate=float(any(asserts_candidate(u, view.stem) for u in parts)),
             sem_units=min(len(parts), 6) / 6.0)
    masked = _unit(bank._memo[mask_topic(view.reply, view.stem)])
    sims_g = [float(masked @ _unit(bank._memo[target_text(view.stem, g)])) for g in view.gold if g.strip()]
    sims_o = [float(masked @ _unit(bank._memo[o])) for o in view.others if o.strip()]
    f["sim_gold"] = max(sims_g, default=0.0)
    f["sim_other"] = max(sims_o, default=0.0)
    f["sim_margin"] = f["sim_gold"] - f["sim_other"] if sims_o else 0.0
    # a paraphrase is nearer the reference than the question; a restated question is not
    f["sim_q"] = float(masked @ _unit(bank._memo[view.stem])) if view.stem.strip() else 0.0
    f["sim_lift"] = f["sim_gold"] - f["sim_q"]
    f.update(slot_features(view.reply, view.stem, view.gold))
    f.update(support_features(view.reply, view.stem, view.gold))
    if view.path == "open":
        f.update(alignment_features(view.reply, view.stem, view.gold))
    f["foreign"] = float(foreign_refusal(view.reply) is not None)
    # the figure kept but what it is of changed: another member of a closed class the reference names
    # (net / gross, FOB / CIF, summit / village) or the other side of an opposite pair
    guards = default_guards()
    f["contrast"] = float(any((guards.blocked(view.stem, g, view.reply) or "").startswith(("other", "opposite"))
                              for g in view.gold if g.strip()))
    d = verdict.details
    if isinstance(d.get("key_recall"), (int, float)):
        f["key_recall"], f["has_key_recall"] = float(d["key_recall"]), 1.0
    para = d.get("paraphrase")
    if isinstance(para, dict):
        f["para_sim"] = float(para.get("similarity") or 0.0)
    toks = words(view.reply)
    qwords = set(words(view.stem))
    f["log_words"] = math.log1p(len(toks)) / 4.0
    digits = {t for t in toks if t[:1].isdigit()}
    gold_toks = {t for g in view.gold for t in words(g)}
    f["has_digit"] = float(bool(digits))
    f["digit_in_ref"] = float(bool(digits & gold_toks))
    f["hedge"] = float(bool(_GUESS.search(view.reply)))
    f["negator"] = float(bool(set(toks) & NEGATORS))
    a = DEFAULT_DETECTOR.analyse(view.reply)
    f["refusals"] = min(len(a.refusals), 3) / 3.0
    f["refusal_explained"] = float(a.is_deflection and a.explained)
    content = {stem(t) for t in toks if t not in STOPWORDS}
    qs = {stem(t) for t in words(view.stem) if t not in STOPWORDS}
    gs = {stem(t) for t in gold_toks if t not in STOPWORDS} - qs
    f["q_overlap"] = len(content & qs) / len(content) if content else 0.0
    f["ref_overlap"] = len(content & gs) / len(gs) if gs else 0.0
    f["nota_text"] = float(bool(_NOTA.search(view.reply)))
    low = f" {' '.join(toks)} "
    f["options_named"] = min(sum(f" {' '.join(words(o))} " in low for o in view.gold + view.others if words(o)), 3) / 3.0
    f["rule_decided"] = float(bool(d.get("decided", True)))
    # the reference named under a negator ("It is not Paris; ...") is a rejection, not an answer
    f["ref_negated"] = float(any(negated_at(toks, i) for i, t in enumerate(toks) if t in gold_toks - qwords
                                 and t not in STOPWORDS))
    # derived forms ("wooden" / wood, "Swedish" / Sweden): a shared five-letter prefix
    pre_r = {t[:5] for t in toks if len(t) >= 5 and t not in STOPWORDS and t not in qwords}
    pre_g = {t[:5] for t in gold_toks if len(t) >= 5 and t not in STOPWORDS and t not in qwords}
    f["prefix_overlap"] = len(pre_r & pre_g) / len(pre_g) if pre_g else 0.0
    f["vague"] = float(bool(_VAGUE.search(view.reply)))
    f["specific"] = float(bool(digits - qwords) or f["sem_candidate"] > 0)
    iou = d.get("multi_answer_iou")
    f["multi_partial"] = float(isinstance(iou, (int, float)) and 0 < iou < 1)
    f["extra_names"] = min(len(d.get("extra_names") or ()), 3) / 3.0
    f["unit_converted"] = float(bool(d.get("unit_converted")))
    f["other_number"] = float(verdict.reason.startswith(("reply gives another number", "number outside")))
    f["fuzzy"] = fuzzy_best(toks, view.gold)
    # the question's own subject under a negator ("There's no kayak"): a KnowHal premise rejection
    f["q_negated"] = float(any(negated_at(toks, i) for i, t in enumerate(toks) if t in qwords and t not in STOPWORDS))
    f["disjunction"] = float(bool({"or", "either"} & set(toks)) and not {"or", "either"} & qwords)
    if view.path == "premise" and view.gold:
        # the false premise's own object named, not negated ("the owl's colour", "his shirt"): a reply
        # that declines a detail of something that is not there still takes it as there
        obj = {stem(t) for t in words(view.gold[-1]) if t not in STOPWORDS} & {stem(t) for t in qwords}
        named = [i for i, t in enumerate(toks) if stem(t) in obj]
        f["premise_named"] = float(bool(named) and not any(negated_at(toks, i) for i in named))
    # rounded: an embedding computed in a batch differs from one computed alone in the 7th digit, and a
    # tree split must not see that (verdicts and probabilities equal one-by-one judging)
    return np.round(np.array([f.get(name, 0.0) for name in FEATURES], dtype=np.float64), 3)


def fuzzy_best(reply_tokens: Sequence[str], references: Sequence[str]) -> float:
    """Best character similarity (difflib ratio) of a reference with a same-length run of reply
    words: spelling variants ("phad thai", "chao praya") that no token rule matches."""
    best = 0.0
    for ref in references:
        rt = words(ref)
        if not rt or len(rt) > 6:
            continue
        target, n = " ".join(rt), len(rt)
        for i in range(max(1, len(reply_tokens) - n + 1)):
            best = max(best, SequenceMatcher(None, " ".join(reply_tokens[i:i + n]), target).ratio())
    return best


def needs_combiner(verdict: Verdict) -> bool:
    """Undecided rule verdicts of a reply that exists (failed requests and empty replies stay)."""
    d = verdict.details
    return not d.get("decided", True) and not d.get("error") and verdict.reason != "empty reply"


class LogisticModel:
    """Multinomial logistic regression: standardised features, one weight row per class."""

    def __init__(self, data: dict) -> None:
        self.mean, self.scale, self.coef, self.intercept = (np.asarray(data[k], dtype=np.float64)
                                                            for k in ("mean", "scale", "coef", "intercept"))

    def raw(self, xe: np.ndarray) -> np.ndarray:
        return ((xe - self.mean) / self.scale) @ self.coef.T + self.intercept


class BoostedTrees:
    """Gradient-boosted trees (scikit-learn's HistGradientBoostingClassifier, exported as arrays):
    every tree of every class is walked at once, one level per step.  Why trees: a cue's meaning
    depends on others (a number the reference lacks is a wrong answer beside a sentence reference
    and a cited finding beside a refusal), which a linear model only sees through hand-made copies."""

    def __init__(self, data: dict) -> None:
        t = data["trees"]
        self.baseline = np.asarray(data["baseline"], dtype=np.float64)
        self.feature = np.asarray(t["feature"], dtype=np.int64)
        self.threshold = np.asarray(t["threshold"], dtype=np.float64)
        self.left = np.asarray(t["left"], dtype=np.int64)
        self.right = np.asarray(t["right"], dtype=np.int64)
        self.leaf = np.asarray(t["leaf"], dtype=bool)
        self.value = np.asarray(t["value"], dtype=np.float64)
        self.roots = np.asarray(t["roots"], dtype=np.int64)      # first node of each tree
        self.klass = np.asarray(t["klass"], dtype=np.int64)      # the class each tree scores
        self.depth = int(t["depth"])

    def raw(self, xe: np.ndarray) -> np.ndarray:
        node = np.broadcast_to(self.roots, (xe.shape[0], len(self.roots))).copy()
        rows = np.arange(xe.shape[0])[:, None]
        for _ in range(self.depth):
            go_left = xe[rows, self.feature[node]] <= self.threshold[node]
            node = np.where(self.leaf[node], node, np.where(go_left, self.left[node], self.right[node]))
        out = np.tile(self.baseline, (xe.shape[0], 1))
        for k in range(len(CLASSES)):
            out[:, k] += self.value[node[:, self.klass == k]].sum(axis=1)
        return out


#: combiner model kinds by the ``model`` field of the weights file (absent: logistic)
MODELS = {"logistic": LogisticModel, "boosted_trees": BoostedTrees}


class Combiner:
    """The learned model over :data:`FEATURES` (a :data:`MODELS` kind, weights from JSON) and the
    decision rule that turns its class probabilities into a verdict or none."""

    def __init__(self, path: str | Path = WEIGHTS_PATH, min_confidence: float | None = None, *,
                 weights: dict | None = None) -> None:
        """Weights from ``path``, or ``weights`` already in that JSON shape (``fit``'s output, as
        ``tools/judge_fit.py`` scores a left-out file with them)."""
        data = weights if weights is not None else json.loads(Path(path).read_text(encoding="utf-8"))
        if tuple(data["features"]) != FEATURES or tuple(data["classes"]) != CLASSES:
            raise ValueError(f"{path}: combiner weights were fitted for other features; rerun tools/judge_fit.py")
        kind = data.get("model", "logistic")
        if kind not in MODELS:
            raise ValueError(f"{path}: unknown combiner model {kind!r} (known: {', '.join(MODELS)})")
        self.model = MODELS[kind](data)
        self.min_confidence = float(data.get("min_confidence", 0.5) if min_confidence is None else min_confidence)
        # crediting a wrong answer costs more than missing a right one: "correct" needs more
        self.min_confidence_correct = max(self.min_confidence, float(data.get("min_confidence_correct", 0.0)))
        self.version = str(data.get("version", "1"))

    def proba(self, x: np.ndarray) -> np.ndarray:
        z = self.model.raw(expand(x))
        z = np.exp(z - z.max(axis=-1, keepdims=True))
        return z / z.sum(axis=-1, keepdims=True)

    def pick(self, p: np.ndarray) -> int | None:
        """The index in :data:`CLASSES` of the most probable class when it is confident enough
        (``min_confidence_correct`` to credit an answer), else None: the rule verdict stands."""
        k = int(np.argmax(p))
        need = self.min_confidence_correct if CLASSES[k] == "correct" else self.min_confidence
        return k if p[k] >= need else None

    def refine(self, item: tuple[Sample, Prompt, Response], verdict: Verdict, bank) -> Verdict:
        """The verdict, replaced by the combiner's class when it is confident enough."""
        if bank is None or not needs_combiner(verdict):
            return verdict
        view = view_of(*item)
        if not view.reply.strip():
            return verdict
        p = self.proba(features(view, verdict, bank))[0]
        k = self.pick(p)
        verdict.details["combiner"] = {c: round(float(v), 3) for c, v in zip(CLASSES, p)}
        if k is None or CLASSES[k] == verdict.outcome:
            return verdict
        outcome = CLASSES[k]
        verdict.details["rule_outcome"] = verdict.outcome
        extracted = verdict.extracted
        if view.path == "mcq":
            extracted = view.label if outcome == "correct" else None
        elif outcome == "deflection":
            extracted = None
        elif extracted is None:
            extracted = view.reply
        return Verdict(outcome=outcome, extracted=extracted, judge_id=verdict.judge_id,
                       reason=f"learned combiner: {outcome} (p={p[k]:.2f}; rules said {verdict.outcome}: "
                              f"{verdict.reason})",
                       score=1.0 if outcome == "correct" else 0.0, details=verdict.details)


@functools.lru_cache(maxsize=8)
def shipped_combiner(min_confidence: float | None = None) -> Combiner | None:
    """The combiner of the shipped weights (None when none ship), read once per threshold: every
    RuleJudge (one per run, many per test session) shares it; a Combiner is never mutated."""
    return Combiner(min_confidence=min_confidence) if WEIGHTS_PATH.exists() else None


def fit(x: np.ndarray, y: Sequence[str], c: float = 1.0) -> dict:
    """Fit the weights (scikit-learn's multinomial logistic regression) into the JSON shape."""
    from sklearn.linear_model import LogisticRegression

    x = expand(x)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-6] = 1.0
    lr = LogisticRegression(C=c, max_iter=5000).fit((x - mean) / scale, [CLASSES.index(v) for v in y])
    coef = np.zeros((len(CLASSES), x.shape[1]))
    icpt = np.zeros(len(CLASSES))
    for row, cls in enumerate(lr.classes_):
        coef[int(cls)], icpt[int(cls)] = lr.coef_[row], lr.intercept_[row]
    return {"model": "logistic", "features": list(FEATURES), "classes": list(CLASSES), "mean": mean.tolist(), "scale": scale.tolist(),
            "coef": coef.tolist(), "intercept": icpt.tolist(), "C": c}


def fit_trees(x: np.ndarray, y: Sequence[str], *, max_depth: int = 4, learning_rate: float = 0.08,
              max_iter: int = 200, l2_regularization: float = 1.0, seed: int = 0) -> dict:
    """Fit gradient-boosted trees and export them as plain arrays (the JSON shape
    :class:`BoostedTrees` reads).  Reads scikit-learn's fitted predictors (``_predictors``,
    ``_baseline_prediction``): the export runs only here, at fit time, and the round-trip test in
    ``tests/test_judge_combiner.py`` checks it against scikit-learn's own probabilities."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    xe = expand(x)
    yi = np.array([CLASSES.index(v) for v in y])
    m = HistGradientBoostingClassifier(max_depth=max_depth, learning_rate=learning_rate, max_iter=max_iter,
                                       l2_regularization=l2_regularization, random_state=seed).fit(xe, yi)
    if list(m.classes_) != list(range(len(CLASSES))):
        raise ValueError("every class must occur in the training labels")
    cols = {k: [] for k in ("feature", "threshold", "left", "right", "leaf", "value", "roots", "klass")}
    depth = 0
    for per_class in m._predictors:
        for k, pred in enumerate(per_class):
            nodes, base = pred.nodes, len(cols["feature"])
            cols["roots"].append(base)
            cols["klass"].append(k)
            cols["feature"] += nodes["feature_idx"].astype(int).tolist()
            cols["threshold"] += [float(v) for v in nodes["num_threshold"]]
            cols["left"] += (nodes["left"].astype(int) + base).tolist()
            cols["right"] += (nodes["right"].astype(int) + base).tolist()
            cols["leaf"] += nodes["is_leaf"].astype(bool).tolist()
            cols["value"] += [float(v) for v in nodes["value"]]
            depth = max(depth, int(nodes["depth"].max()))
    cols["depth"] = depth
    return {"model": "boosted_trees", "features": list(FEATURES), "classes": list(CLASSES),
            "baseline": [float(v) for v in np.ravel(m._baseline_prediction)], "trees": cols,
            "params": {"max_depth": max_depth, "learning_rate": learning_rate, "max_iter": max_iter,
                       "l2_regularization": l2_regularization, "seed": seed}}


#: fitters by model kind (``tools/judge_fit.py --model``)
FITTERS = {"logistic": lambda x, y, c=0.3: fit(x, y, c), "boosted_trees": lambda x, y, c=None: fit_trees(x, y)}


__all__ = ["BoostedTrees", "FITTERS", "LogisticModel", "MODELS", "fit_trees", "Combiner", "CLASSES", "FEATURES", "View", "embed_texts", "features", "fit",
           "needs_combiner", "shipped_combiner", "view_of"]
