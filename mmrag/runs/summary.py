"""summary.json / summary.md of a run: per (benchmark, scenario, model) outcome rates and the
benchmark family's own metrics (official HumbleBench keys, KnowHal HPS, CRAG truthfulness).

A cell whose request failed, or whose judge call failed, was not measured: it is left out of every
rate and metric, counted in its group's ``failed`` and in ``failed_by_model`` (failed requests by
class in ``errors``, failed judge calls by class in ``judge_errors``), and the markdown names the
models that have any.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from mmrag.runs.records import RunRecord, judge_error
from mmrag.util import atomic_write_json, atomic_write_text


def _rates(recs: list[RunRecord]) -> dict[str, float | None]:
    """The outcome rates as :mod:`mmrag.metrics.rates` defines them (over all responses)."""
    from mmrag.metrics.rates import outcome_rates

    return outcome_rates(r.verdict.outcome for r in recs)


def group_records(records: list[RunRecord]) -> dict[tuple[str, str, str], list[RunRecord]]:
    groups: dict[tuple[str, str, str], list[RunRecord]] = defaultdict(list)
    for r in records:
        groups[(r.benchmark, r.scenario_id, r.model)].append(r)
    return groups


def family_metrics(kind: str, recs: list[RunRecord]) -> dict[str, Any]:
    """The metrics the benchmark family declares (``BenchmarkFamily.metrics``)."""
    from mmrag.benchmarks.family import get_family
    from mmrag.metrics import Scored

    items = [Scored(r.sample, r.prompt, r.response, r.verdict) for r in recs]
    return get_family(kind).metric_function()(items)


def _paper_order(item: tuple[tuple[str, str, str], list[RunRecord]]) -> tuple:
    """Benchmark, then scenario kinds in the paper's order (parametric, oracle, realistic,
    adversarial, ...: ``ScenarioKind.order``), then distractor count, then model."""
    from mmrag.scenarios.kinds import kind_order

    (bench, sid, model), recs = item
    spec = recs[0].scenario
    return (bench, kind_order(spec.get("kind")), int(spec.get("n_distractors") or 0), sid, model)


def build_summary(records: list[RunRecord]) -> dict[str, Any]:
    groups = []
    for (bench, sid, model), all_recs in sorted(group_records(records).items(), key=_paper_order):
        recs = [r for r in all_recs if r.error is None]
        groups.append(
            {
                "benchmark": bench,
                "benchmark_kind": all_recs[0].benchmark_kind,
                "scenario_id": sid,
                "scenario": all_recs[0].scenario,
                "model": model,
                "n": len(recs),
                "failed": len(all_recs) - len(recs),
                "rates": _rates(recs),
                "metrics": family_metrics(all_recs[0].benchmark_kind, recs) if recs else {},
            }
        )
    errors = Counter(r.response.error for r in records if r.response.error)
    judge_errors = Counter(e for r in records if r.response.error is None and (e := judge_error(r.verdict)))
    failed = Counter(r.model for r in records if r.error)
    return {
        "n_records": len(records),
        "groups": groups,
        "errors": dict(errors),
        "judge_errors": dict(judge_errors),
        "failed_by_model": dict(failed),
        "incomplete_replies": sum(1 for r in records if r.response.incomplete),
        "cached_responses": sum(1 for r in records if r.response.cached),
    }


def summary_markdown(summary: dict[str, Any]) -> str:
    from mmrag.metrics.rates import DENOMINATOR, RATES
    from mmrag.scenarios.kinds import scenario_label

    lines = [
        "# mmrag run summary",
        "",
        f"Rates are percentages of {DENOMINATOR} (docs/metrics.md).",
        "",
        "| benchmark | scenario | model | n | " + " | ".join(r.header for r in RATES) + " |",
        "| --- | --- | --- | ---: | " + " | ".join("---:" for _ in RATES) + " |",
    ]
    for g in summary["groups"]:
        r = g["rates"]
        lines.append(
            f"| {g['benchmark']} | {scenario_label(g['scenario'])} | {g['model']} | {g['n']} | "
            + " | ".join("—" if r[x.id] is None else f"{r[x.id]:.1f}" for x in RATES)
            + " |"
        )
    if summary["errors"]:
        lines += [
            "",
            "Failed requests by class: " + ", ".join(f"{k}={v}" for k, v in sorted(summary["errors"].items())),
        ]
    if summary.get("judge_errors"):
        lines += [
            "",
            "Failed judge calls by class (the reply is stored; `mmrag run --resume` judges it again): "
            + ", ".join(f"{k}={v}" for k, v in sorted(summary["judge_errors"].items())),
        ]
    if summary.get("failed_by_model"):
        lines += [
            "",
            "Models with failed cells (left out of the rates above; `mmrag run --resume` retries them): "
            + ", ".join(f"{m} ({n})" for m, n in sorted(summary.get("failed_by_model", {}).items())),
        ]
    from mmrag.labels.summary import corrected_markdown  # judge-corrected rates, when the run has labels

    lines += corrected_markdown(summary)
    return "\n".join(lines) + "\n"


def write_summary(run_dir: str | Path, records: list[RunRecord], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    summary = build_summary(records)
    summary.update(extra or {})
    from mmrag.labels.summary import judge_corrected  # rates corrected for judge error, when labelled

    summary.update(judge_corrected(run_dir, [r for r in records if r.response.error is None]))
    atomic_write_json(Path(run_dir) / "summary.json", summary)
    atomic_write_text(Path(run_dir) / "summary.md", summary_markdown(summary))
    return summary


def results_state(run_dir: str | Path, mmrag_version: str = "", git_revision: str | None = None) -> str:
    """A hash of what a summary is computed from: the name, size and modification time of every
    file under ``records/``, ``verdicts/`` and ``labels/``, and the mmrag version and revision
    that compute it.  Segments are written once and never rewritten (new results are new files,
    compaction renames), so an unchanged state means an unchanged summary."""
    from mmrag.schema import stable_id

    run_dir = Path(run_dir)
    files = []
    for sub in ("records", "verdicts", "labels"):
        folder = run_dir / sub
        if folder.is_dir():
            for p in sorted(folder.rglob("*")):
                if p.is_file():
                    st = p.stat()
                    files.append([str(p.relative_to(run_dir)), st.st_size, st.st_mtime_ns])
    return stable_id(files, mmrag_version, git_revision or "", length=32)


def reuse_summary(
    run_dir: str | Path, previous: dict[str, Any], state: str, extra: dict[str, Any]
) -> dict[str, Any] | None:
    """The summary a previous invocation wrote, with ``extra`` (this invocation's not-applicable
    counts and windows) put in, when it was computed from exactly ``state``; else None (the
    caller computes it again).  Rewritten only when ``extra`` changed it."""
    import json

    if not state or previous.get("summary_state") != state:
        return None
    path = Path(run_dir) / "summary.json"
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(summary, dict) or not isinstance(summary.get("groups"), list):
        return None
    updated = {**summary, **extra}
    if json.loads(json.dumps(updated)) != summary:
        atomic_write_json(path, updated)
        atomic_write_text(Path(run_dir) / "summary.md", summary_markdown(updated))
    return updated
