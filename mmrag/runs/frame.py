"""Load run directories into pandas: one row per sample x scenario x model.

``load(RUN_DIR)`` is the entry point for Jupyter and for :mod:`mmrag.reports`.  It reads
``samples.jsonl`` (the append-only record of :class:`~mmrag.runs.records.RunRecord` lines) and
flattens every record into plain columns so that ``df.groupby([...]).correct.mean()`` is all a
researcher needs.

Reading is deliberately *tolerant at the end, strict in the middle*: a run killed while writing
can leave its last line cut short, which is expected and harmless (the runner will redo that cell
on resume), so that single line is dropped with a warning.  Any other malformed line means the
file was damaged or hand-edited, and silently skipping it would bias every rate, so it raises
:class:`~mmrag.errors.InputError` naming the file and line.

Scenario knobs are reported as *effective* values, not raw spec fields: a parametric or oracle
prompt has no distractors, so ``n_distractors`` is 0 there (the spec's default of 2 would lie),
and a modality that does not apply is ``None``.  When a spec asks for ``positive_modality="any"``
the sample's own gold modality is used (``sample.metadata["positive_modality"]``, else the single
modality shared by the prompt's gold contexts), because the modality matrix of VLM-DeflectionBench
is indexed by the modality of the evidence the model actually saw.  ``scenario`` is the one human
label of the spec (:func:`mmrag.scenarios.kinds.scenario_label`, as the console and summary print it).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmrag.errors import InputError
from mmrag.metrics.knowhal import graded_accuracy
from mmrag.runs.records import RunRecord
from mmrag.scenarios.kinds import STRESS_JOINER, scenario_label
from mmrag.schema import OUTCOMES, Verdict, is_nota_text
from mmrag.util import iter_jsonl, parse_record

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

SAMPLES_FILE = "samples.jsonl"


def _kind(kind_id: Any):
    """The registered scenario kind, or None for one whose plug-in is not installed here."""
    from mmrag.scenarios.kinds import SCENARIO_KINDS, get_kind

    return get_kind(str(kind_id)) if str(kind_id) in SCENARIO_KINDS else None


def _has_negatives(kind_id: Any) -> bool:
    k = _kind(kind_id)
    return bool(k and k.uses_negatives)


#: Column order of the frame (extra metadata never adds columns silently).
COLUMNS: tuple[str, ...] = (
    "run",
    "key",
    "benchmark",
    "benchmark_kind",
    "scenario_id",
    "scenario",
    "kind",
    "n_distractors",
    "positive_modality",
    "negative_modality",
    "strictness",
    "stress",
    "model",
    "model_fingerprint",
    "sample_id",
    "question_id",
    "question",
    "source",
    "type",
    "dimension",
    "domain",
    "polarity",
    "pair_id",
    "outcome",
    *OUTCOMES,
    "score",
    "extracted",
    "label",
    "nota_letter",
    "label_is_nota",
    "chose_nota",
    "response",
    "error",
    "latency_s",
    "cached",
    "prompt_tokens",
    "completion_tokens",
    "n_contexts",
    "n_gold",
    "n_negative",
    "prompt_id",
    "template_id",
    "judge_id",
    "reason",
)


class TruncatedLineWarning(UserWarning):
    """The last line of a samples file was cut short (a run killed mid-write) and was ignored."""


def samples_path(run_dir: str | Path) -> Path:
    """``RUN_DIR/samples.jsonl``; a path to the file itself is accepted too."""
    p = Path(run_dir)
    return p if p.is_file() else p / SAMPLES_FILE


def read_records(run_dir: str | Path) -> list[RunRecord]:
    """Every record of a run, validated: a columnar run (see :mod:`mmrag.runs.store`) in plan
    order, one record per cell; an old ``samples.jsonl`` run as described below."""
    from mmrag.runs.store import is_columnar

    if is_columnar(run_dir):
        from mmrag.runs.columnar import records

        return records(run_dir)
    return read_jsonl_records(run_dir)


def read_jsonl_records(run_dir: str | Path) -> list[RunRecord]:
    """Every record of an old ``samples.jsonl`` run, validated, in file order.

    A malformed last line is dropped with a :class:`TruncatedLineWarning`; a malformed line
    anywhere else, or a line that parses as JSON but is not a valid RunRecord, raises InputError.
    A key seen twice keeps its last record (with a warning): the runner never writes duplicates,
    so this only happens when files were concatenated by hand.
    """
    path = samples_path(run_dir)
    if not path.exists():
        raise InputError(
            "no results here (neither records/ nor samples.jsonl): not a run directory?", path=Path(run_dir)
        )

    def cut_short(exc: InputError) -> None:  # the one line a kill may legitimately leave half-written
        msg = f"{path}:{exc.line}: ignoring a truncated last line (run killed mid-write?)"
        log.warning(msg)
        warnings.warn(msg, TruncatedLineWarning, stacklevel=3)

    by_key: dict[str, RunRecord] = {}
    for lineno, obj in iter_jsonl(path, on_truncated_tail=cut_short):
        rec = parse_record(RunRecord, obj, path=path, line=lineno)
        if rec.key in by_key:
            warnings.warn(f"{path}:{lineno}: duplicate key {rec.key}; keeping the last record", stacklevel=2)
            del by_key[rec.key]  # re-insert so order follows the kept record
        by_key[rec.key] = rec
    return list(by_key.values())


def _effective_positive(rec: RunRecord, spec_value: Any) -> str | None:
    kind = _kind(rec.scenario.get("kind"))
    if kind is None or not kind.uses_gold:
        return None
    if spec_value and spec_value != "any":
        return str(spec_value)
    meta = rec.sample.metadata.get("positive_modality")
    if meta:
        return str(meta)
    mods = {c.document.modality for c in rec.prompt.contexts if c.role == "gold"}
    return mods.pop() if len(mods) == 1 else (spec_value or "any")


def _nota_letter(rec: RunRecord) -> str | None:
    choices = rec.prompt.choices or rec.sample.choices
    for c in choices:
        if c.is_nota or is_nota_text(c.text):
            return c.letter
    return None


def prompt_facets(rec: RunRecord) -> dict[str, Any]:
    """The columns that depend only on the record's scenario, sample and prompt (the columnar store
    keeps them once per sample / scenario, or as small columns of the record row)."""
    spec = rec.scenario
    kind = spec.get("kind", "")
    meta = rec.sample.metadata
    stress = spec.get("stress") or ()
    n_neg = int(spec.get("n_distractors", 0)) if _has_negatives(kind) else 0
    return {
        "scenario": scenario_label(spec),
        "kind": kind,
        "n_distractors": n_neg,
        "positive_modality": _effective_positive(rec, spec.get("positive_modality")),
        # no negatives shown, no negative modality (realistic n = 0 is one experiment, not one per modality)
        "negative_modality": spec.get("negative_modality") if n_neg else None,
        "strictness": spec.get("strictness", "none"),
        "stress": STRESS_JOINER.join(stress) if stress else "common",
        "sample_id": rec.sample.id,
        "question_id": rec.sample.question_id,
        "question": rec.sample.question,
        "source": rec.sample.source or rec.benchmark,
        "type": meta.get("type"),
        "dimension": meta.get("dimension"),
        "domain": meta.get("domain"),
        "polarity": meta.get("polarity"),
        "pair_id": meta.get("pair_id"),
        "label": rec.prompt.label if rec.prompt.label is not None else rec.sample.label,
        "nota_letter": _nota_letter(rec),
        "n_contexts": len(rec.prompt.contexts),
        "n_gold": sum(1 for c in rec.prompt.contexts if c.role == "gold"),
        "n_negative": sum(1 for c in rec.prompt.contexts if c.role == "negative"),
        "prompt_id": rec.prompt.id,
        "template_id": rec.prompt.template_id,
    }


def verdict_facets(verdict: Verdict, label: str | None, nota: str | None) -> dict[str, Any]:
    """score, label_is_nota, chose_nota of a verdict (given the prompt's label and NOTA letter)."""
    extracted = verdict.extracted
    details = verdict.details
    return {
        "score": graded_accuracy(verdict),
        # the MCQ judge records both; recomputed from the extracted letter for older judges
        "label_is_nota": bool(details["gold_is_nota"])
        if "gold_is_nota" in details
        else bool(nota is not None and label == nota),
        "chose_nota": bool(details["chose_nota"])
        if "chose_nota" in details
        else bool(nota is not None and extracted is not None and extracted.strip().upper() == nota.upper()),
    }


def record_row(rec: RunRecord, run: str = "") -> dict[str, Any]:
    """Flatten one record into the frame's columns (see :data:`COLUMNS`)."""
    facets = prompt_facets(rec)
    row: dict[str, Any] = {
        "run": run,
        "key": rec.key,
        "benchmark": rec.benchmark,
        "benchmark_kind": rec.benchmark_kind,
        "scenario_id": rec.scenario_id,
        "model": rec.model,
        "model_fingerprint": rec.model_fingerprint,
        **facets,
        "outcome": rec.verdict.outcome,
        "extracted": rec.verdict.extracted,
        **verdict_facets(rec.verdict, facets["label"], facets["nota_letter"]),
        "response": rec.response.text,
        "error": rec.error,  # the request's error class, or judge_<class> when its judge call failed
        "latency_s": float(rec.response.latency_s),
        "cached": bool(rec.response.cached),
        "prompt_tokens": rec.response.usage.prompt_tokens,
        "completion_tokens": rec.response.usage.completion_tokens,
        "judge_id": rec.verdict.judge_id,
        "reason": rec.verdict.reason,
    }
    for o in OUTCOMES:
        row[o] = rec.verdict.outcome == o
    return row


def frame_from_records(records: Iterable[RunRecord], run: str = "") -> pd.DataFrame:
    """A DataFrame with :data:`COLUMNS` (also when there are no records)."""
    rows = [record_row(r, run) for r in records]
    import pandas as pd  # imported here: writing and resuming a run never needs pandas

    df = pd.DataFrame(rows, columns=list(COLUMNS))
    for col in (*OUTCOMES, "label_is_nota", "chose_nota", "cached"):
        df[col] = df[col].astype(bool)
    df["n_distractors"] = df["n_distractors"].astype("int64")
    return df


def _run_names(paths: Sequence[Path]) -> list[str]:
    """Directory names, or full paths where two runs share a name."""
    names = [p.name or str(p) for p in paths]
    if len(set(names)) == len(names):
        return names
    return [str(p) for p in paths]


def context_lists(run_dir: str | Path) -> dict[str, list[dict[str, Any]]]:
    """record key -> the prompt's contexts in prompt order, each ``{"doc_id", "role", "modality",
    "title"}``: which documents a model was shown, without the documents' full text."""
    return {
        rec.key: [
            {"doc_id": c.document.id, "role": c.role, "modality": c.document.modality, "title": c.document.title}
            for c in rec.prompt.contexts
        ]
        for rec in read_records(run_dir)
    }


def load(run_dir: str | Path | Sequence[str | Path], *, contexts: bool = False) -> pd.DataFrame:
    """One row per sample x scenario x model of one or several run directories.

    Several directories are concatenated; the ``run`` column says where each row came from (the
    directory name, or the full path when two runs share a name).  See the module docstring for
    how truncated lines and scenario knobs are handled.  ``contexts=True`` adds a ``contexts``
    column (:func:`context_lists`): reading every full record costs more, so it is asked for.
    """
    if isinstance(run_dir, (str, Path)):
        dirs = [Path(run_dir)]
    else:
        dirs = [Path(d) for d in run_dir]
    if not dirs:
        raise InputError("no run directory given")
    names = _run_names(dirs)
    from mmrag.runs.columnar import frame
    from mmrag.runs.store import is_columnar

    frames = [
        frame(d, run=n) if is_columnar(d) else frame_from_records(read_jsonl_records(d), run=n)
        for d, n in zip(dirs, names)
    ]
    if contexts:
        for d, f in zip(dirs, frames):
            f["contexts"] = f["key"].map(context_lists(d))
    if len(frames) == 1:
        return frames[0]
    import pandas as pd

    return pd.concat(frames, ignore_index=True)
