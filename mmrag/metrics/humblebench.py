"""HumbleBench metrics: the official numbers, exactly, plus NOTA-aware measures of our own.

``official`` reproduces ``HumbleBench.utils.metrics.compute_metrics`` (PyPI humblebench 1.0.2) on the
raw reply text: ``Accuracy`` holds ``{Type}_accuracy`` per question type in order of first
appearance, then ``Overall_accuracy`` and ``E_accuracy`` (label 'E' and the reply exactly the string
'E'; denominator 1 when no label is 'E'); ``Proportions`` holds ``A..E, NA`` shares of the official
extractor.  Values are percentages computed as the official code does (``count / total * 100``,
no rounding).  It is vectorised: each distinct reply is tokenised once and the rest is numpy, so a
full 22,831-record setting scores in milliseconds (``perf/scoring_bench.py``).

``nota`` holds the paper's two NOTA measures, by the **official extraction rule** (the one behind
``Overall_accuracy``), with NOTA-gold items found by option text on the *effective* options:

* ``nota_hit_rate``: official-rule accuracy on the NOTA-gold items;
* ``non_nota_accuracy``: official-rule accuracy on the other items.

So ``Overall = share_nota * nota_hit_rate + (1 - share_nota) * non_nota_accuracy`` exactly, as the
paper's numbers imply (Qwen2.5-VL: 0.8543 x 78.98 + 0.1457 x 32.33 = 72.2, its Overall; a
different rule would break that identity).  Unlike the official ``E_accuracy`` (the raw reply must
be exactly ``"E"``), ``"E."`` counts, as it does for Overall.  The rest of ``nota`` is the robust
reading (the MCQ judge's extracted choice, which also reads option text), under its own names:

* ``nota_hit_rate_robust``: NOTA-gold items on which the judge read a NOTA choice;
* ``non_nota_accuracy_robust``: judged correct on items whose gold is not NOTA;
* ``false_nota_rate``: non-NOTA-gold items on which the model chose NOTA;
* ``nota_precision``: of the items where the model chose NOTA, the share whose gold is NOTA;
* ``nota_f1``: the F1 of choosing NOTA (harmonic mean of hit rate and precision).  It is *not* the
  paper's "humility score" (whose formula is unpublished) and must not be compared with it.

Reasoning models: the official HumbleBench wrappers of reasoning models cut the reply before
scoring (split on ``</think>``, ``<answer>`` ... ``</answer>``, "answer is").  ``postprocess=
"reasoning"`` applies that cut (:func:`reasoning_reply`) to every reply before the official rule;
it is opt-in (the official rule on raw text is the default) and every result names it under
``postprocess``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mmrag.errors import InputError
from mmrag.metrics.base import METRICS, Scored, clusters_of, outcome_counts
from mmrag.metrics.stats import rate

_LETTERS = "abcde"
_LETTER_TOKEN = re.compile(r"\b[a-e]\b")  # a one-letter \b\w+\b token is exactly this
_BITS = {c: 1 << i for i, c in enumerate(_LETTERS)}
_EXTRACT_NAMES = ("A", "B", "C", "D", "E", "NA")


def _letter_mask(prediction: str) -> int:
    mask = 0
    for c in _LETTER_TOKEN.findall(prediction.lower()):
        mask |= _BITS[c]
    return mask


def official_humblebench_metrics(
    predictions: Sequence[str], labels: Sequence[str], types: Sequence[Any]
) -> dict[str, dict[str, float]]:
    """The official ``compute_metrics`` output for parallel lists of replies, gold letters and
    question types — same keys, same order, same floats."""
    n = len(predictions)
    if n == 0:
        raise InputError("HumbleBench scoring needs at least one record")
    if not (len(labels) == len(types) == n):
        raise ValueError("predictions, labels and types must have the same length")
    # each distinct reply is tokenised once
    codes: dict[str, int] = {}
    pred_codes = np.fromiter((codes.setdefault(p, len(codes)) for p in predictions), dtype=np.int64, count=n)
    uniq = list(codes)
    masks = np.array([_letter_mask(p) for p in uniq], dtype=np.int64)[pred_codes]
    label_codes: dict[str, int] = {}
    lab_idx = np.fromiter((label_codes.setdefault(lb, len(label_codes)) for lb in labels), dtype=np.int64, count=n)
    label_correct_mask = np.array([_label_rule_mask(lb) for lb in label_codes], dtype=np.int64)[lab_idx]
    correct = masks == label_correct_mask
    generic = [i for i, lb in enumerate(label_codes) if _label_rule_mask(lb) < 0]
    if generic:  # labels that are not a single letter: fall back to the literal rule
        from mmrag.judging.mcq_official import official_is_correct

        rows = np.flatnonzero(np.isin(lab_idx, generic))
        correct[rows] = [official_is_correct(predictions[i], labels[i]) for i in rows.tolist()]
    # official extractor: exactly one letter token -> that letter, else NA (index 5)
    extract = _extract_vector(masks)
    type_codes: dict[Any, int] = {}
    t_idx = np.fromiter((type_codes.setdefault(t, len(type_codes)) for t in types), dtype=np.int64, count=n)
    totals = np.bincount(t_idx, minlength=len(type_codes))
    rights = np.bincount(t_idx, weights=correct, minlength=len(type_codes))
    e_code = codes.get("E")
    is_e_label = lab_idx == label_codes["E"] if "E" in label_codes else np.zeros(n, dtype=bool)
    cnt_e_ans = int(is_e_label.sum())
    cnt_e_pre = int((is_e_label & (pred_codes == e_code)).sum()) if e_code is not None else 0
    accuracy: dict[str, float] = {}
    for t, k in type_codes.items():
        accuracy[f"{t}_accuracy"] = int(rights[k]) / int(totals[k]) * 100
    accuracy["Overall_accuracy"] = int(correct.sum()) / n * 100
    accuracy["E_accuracy"] = cnt_e_pre / (cnt_e_ans if cnt_e_ans else 1) * 100
    counts = np.bincount(extract, minlength=6)
    proportions = {f"{name}_proportion": int(counts[i]) / n * 100 for i, name in enumerate(_EXTRACT_NAMES)}
    return {"Accuracy": accuracy, "Proportions": proportions}


def _extract_vector(masks: np.ndarray) -> np.ndarray:
    out = np.full(len(masks), 5, dtype=np.int64)
    for i in range(5):
        out[masks == (1 << i)] = i
    return out


def _label_rule_mask(label: str) -> int:
    """For a one-letter label, the official rule is "the reply's letter tokens are exactly this
    letter": return its bit; -1 for any other label (handled by the literal rule)."""
    toks = re.findall(r"\b\w+\b", label.lower())
    if len(set(toks)) == 1 and toks[0] in _BITS:
        return _BITS[toks[0]]
    return -1


#: the reply post-processings a result can name; "none" = the raw reply, as the official scorer reads it
POSTPROCESS = ("none", "reasoning")


def reasoning_reply(text: str) -> str:
    """The official reasoning wrappers' cut of a reply (HB@0a34e68 ``models/GLM41V.py``,
    ``Visionary_R1.py``, ``R1_Onevision.py``, ``Ovis_2.py``): keep what follows the last
    ``</think>``; then the inside of ``<answer>...</answer>`` if present, else what follows the last
    "answer is"."""
    if "</think>" in text:
        text = text.split("</think>")[-1]
    if "<answer>" in text:
        text = text.split("<answer>")[-1].split("</answer>")[0]
    elif "answer is" in text:
        text = text.split("answer is")[-1]
    return text.strip()


def _replies(items: Sequence[Scored], postprocess: str) -> list[str]:
    if postprocess not in POSTPROCESS:
        raise InputError(f"unknown postprocess '{postprocess}' (one of {', '.join(POSTPROCESS)})", field="postprocess")
    texts = [it.response.text or "" for it in items]
    return [reasoning_reply(t) for t in texts] if postprocess == "reasoning" else texts


def _ratio(num: int, den: int) -> float | None:
    return 100.0 * num / den if den else None


def official_nota_measures(
    predictions: Sequence[str], labels: Sequence[str], gold_is_nota: Sequence[bool] | np.ndarray
) -> dict[str, float | None]:
    """The paper's NOTA hit rate and non-NOTA accuracy by the official correctness rule (the rule
    of ``Overall_accuracy``), split by whether the gold option is NOTA; ``None`` for an empty side."""
    from mmrag.judging.mcq_official import official_is_correct

    gold = np.asarray(gold_is_nota, dtype=bool)
    ok = np.array([official_is_correct(p, lb) for p, lb in zip(predictions, labels)], dtype=bool)
    return {
        "nota_hit_rate": _ratio(int((ok & gold).sum()), int(gold.sum())),
        "non_nota_accuracy": _ratio(int((ok & ~gold).sum()), int((~gold).sum())),
    }


def nota_measures(items: Sequence[Scored], replies: Sequence[str] | None = None) -> dict[str, Any]:
    """The NOTA measures of the module docstring: official-rule ``nota_hit_rate`` /
    ``non_nota_accuracy`` on ``replies`` (default: the raw reply texts), the robust reading from the
    MCQ judge's verdicts under ``*_robust`` names."""
    gold_nota = np.array([bool(it.verdict.details.get("gold_is_nota")) for it in items], dtype=bool)
    texts = list(replies) if replies is not None else [it.response.text or "" for it in items]
    official = official_nota_measures(texts, [_label_of(it) for it in items], gold_nota)
    chose = np.array([bool(it.verdict.details.get("chose_nota")) for it in items], dtype=bool)
    correct = np.array([it.verdict.outcome == "correct" for it in items], dtype=bool)
    hit = _ratio(int((gold_nota & chose).sum()), int(gold_nota.sum()))
    precision = _ratio(int((gold_nota & chose).sum()), int(chose.sum()))
    f1 = (
        (2 * hit * precision / (hit + precision))
        if hit and precision
        else (0.0 if hit is not None and precision is not None else None)
    )
    return {
        "n_nota_gold": int(gold_nota.sum()),
        "n_chose_nota": int(chose.sum()),
        **official,
        "nota_hit_rate_robust": hit,
        "non_nota_accuracy_robust": _ratio(int((correct & ~gold_nota).sum()), int((~gold_nota).sum())),
        "false_nota_rate": _ratio(int((chose & ~gold_nota).sum()), int((~gold_nota).sum())),
        "nota_precision": precision,
        "nota_f1": f1,
        "nota_f1_definition": "mmrag: F1 of choosing NOTA = harmonic mean(nota_hit_rate_robust, nota_precision); "
        "not the paper's humility score (formula unpublished)",
    }


def _type_of(it: Scored) -> Any:
    return it.sample.metadata.get("type")


def _label_of(it: Scored) -> str:
    label = it.prompt.label or it.sample.label
    if label is None:
        raise InputError(f"sample {it.sample.id} has no gold label", field="label")
    return label


def humblebench_metrics(
    items: Sequence[Scored], *, level: float = 0.95, n_boot: int = 1000, seed: int = 0, postprocess: str = "none"
) -> dict[str, Any]:
    """``{"official": ..., "nota": ..., "outcomes": ...}`` for the items of ONE setting (stress
    transforms change labels and options; score each scenario separately).  A failed request
    enters the official numbers as an empty reply, which the official rule counts wrong."""
    replies = _replies(items, postprocess)
    official = official_humblebench_metrics(replies, [_label_of(it) for it in items], [_type_of(it) for it in items])
    outcomes = np.array([it.verdict.outcome for it in items], dtype=object)
    clusters = clusters_of(items)
    kw: dict[str, Any] = {"level": level, "n_boot": n_boot, "seed": seed}
    official_agree = [
        bool(it.verdict.details.get("official_correct")) == (it.verdict.outcome == "correct")
        for it in items
        if "official_correct" in it.verdict.details
    ]
    return {
        "official": official,
        "postprocess": postprocess,
        "nota": nota_measures(items, replies),
        "outcomes": {
            "counts": outcome_counts(items),
            **{
                o: rate(outcomes == o, clusters, **kw)
                for o in ("correct", "deflection", "hallucination", "unparseable")
            },
            "robust_vs_official_agreement": _ratio(sum(official_agree), len(official_agree)),
        },
    }


def score_humblebench_predictions(
    path: str | Path,
    *,
    use_noise_image: bool = False,
    nota_only: bool = False,
    model_name_or_path: str | None = None,
    postprocess: str = "none",
) -> dict[str, Any]:
    """Score an official results file (one JSON per line with question_id, question, label, type,
    image, prediction): the official metrics under the official nesting and key names (as
    ``HumbleBench.utils.metrics.evaluate`` returns them), ours under ``"mmrag"``."""
    from mmrag.judging.mcq import MCQJudge
    from mmrag.metrics.predictions import read_humblebench_predictions

    items = read_humblebench_predictions(path)
    judge = MCQJudge()
    scored = [Scored(s, p, r, judge.judge(s, p, r)) for s, p, r in items]
    ours = humblebench_metrics(scored, postprocess=postprocess)
    result: dict[str, Any] = dict(ours["official"])
    if model_name_or_path:
        result["model_name_or_path"] = model_name_or_path
    result["use_noise_image"] = use_noise_image
    result["nota_only"] = nota_only
    result["mmrag"] = {
        "n": len(scored),
        "judge": judge.judge_id,
        "postprocess": postprocess,
        "nota": ours["nota"],
        "outcomes": ours["outcomes"],
    }
    return result


METRICS.register("humblebench", humblebench_metrics)
