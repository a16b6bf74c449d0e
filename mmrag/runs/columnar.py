"""Reading a columnar run directory: the pandas frame, a lazy dataset, and full RunRecords.

- :func:`frame` builds :data:`mmrag.runs.frame.COLUMNS` from column projections of the records
  (which carry the small per-prompt columns), the sample and scenario objects (their frame columns,
  joined through int64 refs by an Arrow ``take``) and the verdict rows — no JSON is parsed, which
  is why a 10^6-record run opens in seconds;
- :func:`dataset` is the lazy form: a ``pyarrow.dataset`` over the records segments for runs that
  do not fit in memory (filter and project before materialising; DuckDB reads the same files);
- :func:`records` rebuilds full :class:`~mmrag.runs.records.RunRecord` objects (each sample and
  prompt parsed once) for the browser, re-judging and the summary.

In every form a cell appears once: its latest row (a retried failure is replaced by the retry),
with its latest verdict (``mmrag score`` generations override the verdict written by the run).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from mmrag.runs.records import RunRecord
from mmrag.runs.segments import live_segments, read_table
from mmrag.runs.store import (
    JUDGE_FAILED,
    OBJECT_SCHEMA,
    OBJECTS,
    RECORD_SCHEMA,
    RECORDS,
    ROW_FACETS,
    SAMPLE_FACETS,
    SCENARIO_FACETS,
    VERDICT_FIELDS,
    VERDICT_SCHEMA,
    VERDICTS,
)
from mmrag.schema import OUTCOMES, Evidence, Prompt, Response, Sample, Usage, Verdict

_FRAME_RECORD_COLS = [
    "key",
    "ord",
    "attempt",
    "benchmark",
    "benchmark_kind",
    "scenario_id",
    "model",
    "model_fingerprint",
    "sample_ref",
    "scenario_ref",
    *ROW_FACETS,
    "response",
    "error",
    "latency_s",
    "cached",
    "prompt_tokens",
    "completion_tokens",
    "outcome",
    "extracted",
    "judge_id",
    "reason",
    "score",
    "label_is_nota",
    "chose_nota",
    "status",
]
_VERDICT_OVERRIDE = ["outcome", "extracted", "judge_id", "reason", "score", "label_is_nota", "chose_nota"]


def dataset(run_dir: str | Path):
    """``pyarrow.dataset`` over the committed record segments (raw rows: every attempt, run-time
    verdicts).  E.g. ``dataset(d).to_table(filter=pc.field("model") == "m", columns=[...])``."""
    import pyarrow.dataset as ds

    files = [str(p) for p in live_segments(Path(run_dir) / RECORDS)]
    return ds.dataset(files, schema=RECORD_SCHEMA, format="parquet")


def last_per_key(table: pa.Table) -> pa.Table:
    """Keep the last row of each key (rows are in commit order); a no-op without duplicates."""
    n = table.num_rows
    if n == 0 or pc.count_distinct(table.column("key")).as_py() == n:
        return table
    t = table.append_column("__i", pa.array(np.arange(n, dtype=np.int64)))
    last = t.group_by("key", use_threads=False).aggregate([("__i", "max")]).column("__i_max")
    return table.take(pc.take(last, pc.sort_indices(last)))


def _cells(table: pa.Table) -> pa.Table:
    """One row per cell: the latest attempt (only retried cells have attempt > 1)."""
    if table.num_rows and "attempt" in table.column_names and pc.max(table.column("attempt")).as_py() <= 1:
        return table
    return last_per_key(table)


def _in_plan_order(table: pa.Table) -> pa.Table:
    ords = table.column("ord").to_numpy()
    if len(ords) < 2 or bool(np.all(ords[1:] >= ords[:-1])):
        return table
    return table.take(pa.array(np.argsort(ords, kind="stable")))


def _latest_verdicts(run_dir: Path, columns: list[str]) -> pa.Table | None:
    vt = read_table(run_dir / VERDICTS, ["key", "generation", *columns], VERDICT_SCHEMA)
    if vt.num_rows == 0:
        return None
    return last_per_key(vt)


def _attach(recs: pa.Table, objs: pa.Table, kind: str, ref_col: str, facets: tuple[str, ...]) -> pa.Table:
    """Join the facet columns of the ``kind`` objects onto ``recs`` through ``ref_col`` (a take)."""
    objs = objs.filter(pc.equal(objs.column("obj"), kind))
    idx = pc.index_in(recs.column(ref_col), value_set=objs.column("ref"))
    for f in facets:
        recs = recs.append_column(f, objs.column(f).take(idx))
    return recs


def frame(run_dir: str | Path, run: str = "") -> pd.DataFrame:
    """The frame of :func:`mmrag.runs.load` from the columnar store (see the module docstring)."""
    from mmrag.runs.frame import COLUMNS

    run_dir = Path(run_dir)
    recs = _in_plan_order(_cells(read_table(run_dir / RECORDS, _FRAME_RECORD_COLS, RECORD_SCHEMA)))
    objs = read_table(run_dir / OBJECTS, ["ref", "obj", *SAMPLE_FACETS, *SCENARIO_FACETS], OBJECT_SCHEMA)
    recs = _attach(recs, objs, "sample", "sample_ref", SAMPLE_FACETS)
    recs = _attach(recs, objs, "scenario", "scenario_ref", SCENARIO_FACETS)
    vt = _latest_verdicts(run_dir, _VERDICT_OVERRIDE)
    hit = None
    if vt is not None:  # ``mmrag score`` generations override the run-time verdict
        idx = pc.index_in(recs.column("key"), value_set=vt.column("key"))
        hit = pc.is_valid(idx)
        for c in _VERDICT_OVERRIDE:
            i = recs.schema.get_field_index(c)
            recs = recs.set_column(i, c, pc.if_else(hit, vt.column(c).take(idx), recs.column(c)))
    df = recs.to_pandas()
    # a cell whose judge call failed was not measured: its ``error`` names that (``judge_<class>``,
    # as :func:`mmrag.runs.records.cell_error`), so every reader that leaves failed cells out does
    judged_failed = (df["status"] == JUDGE_FAILED).to_numpy() & df["error"].isna().to_numpy()
    if hit is not None:
        judged_failed &= ~hit.to_numpy(zero_copy_only=False)
    if judged_failed.any():
        why = df.loc[judged_failed, "reason"].fillna("").str.extract(r"^judge error: (\w+)")[0].fillna("failed")
        df.loc[judged_failed, "error"] = "judge_" + why
    df["run"] = run
    for o in OUTCOMES:
        df[o] = (df["outcome"] == o).to_numpy(dtype=bool)
    out = df.reindex(columns=list(COLUMNS))
    for col in (*OUTCOMES, "label_is_nota", "chose_nota", "cached"):
        out[col] = out[col].astype(bool)
    for col in ("n_distractors", "n_contexts", "n_gold", "n_negative"):
        out[col] = out[col].astype("int64")
    out["score"] = out["score"].astype(float)
    out["latency_s"] = out["latency_s"].astype(float)
    for col in out.columns:  # as pandas infers from rows: a column with no value at all is object/None
        if out[col].dtype != object and out[col].dtype.kind not in "biufc" and out[col].isna().all():
            out[col] = pd.Series([None] * len(out), dtype=object)
    return out


def _objects(run_dir: Path) -> dict[str, str]:
    t = read_table(run_dir / OBJECTS, ["ref", "json"], OBJECT_SCHEMA)
    return dict(zip(t.column("ref").to_pylist(), t.column("json").to_pylist()))  # a ref seen twice: same JSON


def records(run_dir: str | Path) -> list[RunRecord]:
    """Every cell's latest record as a RunRecord, in plan order."""
    run_dir = Path(run_dir)
    t = _in_plan_order(_cells(read_table(run_dir / RECORDS, None, RECORD_SCHEMA)))
    vt = _latest_verdicts(run_dir, [f for f, _ in VERDICT_FIELDS])
    override = {r["key"]: r for r in vt.to_pylist()} if vt is not None else {}
    objs = _objects(run_dir)
    parsed: dict[tuple[str, str], Any] = {}

    def obj(ref: str, kind: str) -> Any:
        got = parsed.get((ref, kind))
        if got is None:
            data = json.loads(objs[ref])
            got = (
                Sample.model_validate(data)
                if kind == "sample"
                else (Prompt.model_validate(data) if kind == "prompt" else data)
            )
            parsed[(ref, kind)] = got
        return got

    out = []
    for row in t.to_pylist():
        v = override.get(row["key"], row)
        verdict = Verdict(
            outcome=v["outcome"],
            extracted=v["extracted"],
            judge_id=v["judge_id"] or "",
            reason=v["reason"] or "",
            score=v["verdict_score"],
            details=json.loads(v["details"]) if v["details"] else {},
            evidence=Evidence.model_validate_json(v["evidence"]) if v.get("evidence") else None,
        )
        prompt = obj(row["prompt_ref"], "prompt")
        resp = Response(
            prompt_id=prompt.id,
            text=row["response"] or "",
            model=row["response_model"] or "",
            usage=Usage(
                prompt_tokens=row["prompt_tokens"] or 0,
                completion_tokens=row["completion_tokens"] or 0,
                cost_usd=row["cost_usd"] or 0.0,
            ),
            latency_s=row["latency_s"] or 0.0,
            error=row["error"],
            error_detail=row["error_detail"] or "",
            finish_reason=row["finish_reason"],
            cached=bool(row["cached"]),
        )
        timings = {k: row[k] for k in ("compose_s", "generate_s") if row[k] is not None}
        out.append(
            RunRecord(
                key=row["key"],
                benchmark=row["benchmark"],
                benchmark_kind=row["benchmark_kind"],
                scenario_id=row["scenario_id"],
                scenario=obj(row["scenario_ref"], "scenario"),
                model=row["model"],
                model_fingerprint=row["model_fingerprint"],
                sample=obj(row["sample_ref"], "sample"),
                prompt=prompt,
                response=resp,
                verdict=verdict,
                mining=json.loads(row["mining"]) if row["mining"] else {},
                timings=timings,
            )
        )
    return out
