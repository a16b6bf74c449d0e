"""summary.json / summary.md of a run: per (benchmark, scenario, model) outcome rates and the
benchmark family's own metrics (official HumbleBench keys, KnowHal HPS, CRAG truthfulness).

A cell whose request failed, or whose judge call failed, was not measured: it is left out of every
rate and metric, counted in its group's ``failed`` and in ``failed_by_model`` (failed requests by
class in ``errors``, failed judge calls by class in ``judge_errors``), and the markdown names the
models that have any.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
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
    from mmrag.metrics import Scored, family_metric

    items = [Scored(r.sample, r.prompt, r.response, r.verdict) for r in recs]
    return family_metric(get_family(kind).metrics)(items)


def _paper_order(item: tuple[tuple[str, str, str], list[RunRecord]]) -> tuple:
    """Benchmark, then scenario kinds in the paper's order (parametric, oracle, realistic,
    adversarial, ...: ``ScenarioKind.order``), then distractor count, then model."""
    from mmrag.scenarios.kinds import kind_order

    (bench, sid, model), recs = item
    spec = recs[0].scenario
    return (bench, kind_order(spec.get("kind")), int(spec.get("n_distractors") or 0), sid, model)


def build_summary(records: list[RunRecord]) -> dict[str, Any]:
    from mmrag.metrics.undecided import undecided_share  # the judge's hand-off to the LLM or a person

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
                "undecided": undecided_share(r.verdict for r in recs),  # part of unparseable: handed on, see summary.md
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


def _state_lines(summary: dict[str, Any]) -> list[str]:
    """The incomplete-run notice (``incomplete: X of Y cells ...``) and what is missing, if anything."""
    state = summary.get("state") or {}
    if not state.get("notice"):
        return []
    lines = [f"**{state['notice']}**", ""]
    missing = state.get("missing") or []
    if missing:
        lines += ["Cells still to do: " + "; ".join(f"{m['label']} {m['done']}/{m['planned']}" for m in missing), ""]
    return lines


def summary_markdown(summary: dict[str, Any], extra: Sequence[str] = ()) -> str:
    """summary.md; ``extra``: lines a layer above adds (the judge-corrected rates of a labelled
    run, :func:`mmrag.labels.summary.refresh_summary`: runs never import labels)."""
    from mmrag.metrics.rates import DENOMINATOR, RATES
    from mmrag.metrics.undecided import UNDECIDED_NOTE
    from mmrag.scenarios.kinds import scenario_label

    lines = [
        "# mmrag run summary",
        "",
        f"Rates are percentages of {DENOMINATOR} (docs/metrics.md). {UNDECIDED_NOTE}",
        "",
        "| benchmark | scenario | model | n | " + " | ".join(r.header for r in RATES) + " | undecided % all |",
        "| --- | --- | --- | ---: | " + " | ".join("---:" for _ in RATES) + " | ---: |",
    ]
    for g in summary["groups"]:
        r, u = g["rates"], g.get("undecided")
        lines.append(
            f"| {g['benchmark']} | {scenario_label(g['scenario'])} | {g['model']} | {g['n']} | "
            + " | ".join("—" if r[x.id] is None else f"{r[x.id]:.1f}" for x in RATES)
            + f" | {'—' if u is None else f'{u:.1f}'} |"
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
    lines[2:2] = _state_lines(summary)  # an unfinished run says so before any rate
    lines += extra
    return "\n".join(lines) + "\n"


def state_summary(state: Any, labels: dict[str, str]) -> dict[str, Any]:
    """The run's state as summary.json keeps it: :meth:`RunState.as_dict` plus the groups still to do."""
    out = state.as_dict()
    if not state.complete:
        out["missing"] = [
            {
                "benchmark": b,
                "scenario_id": sid,
                "model": m,
                "label": f"{b} / {labels.get(sid) or state.labels.get(sid, sid)} / {m}",
                "done": done,
                "planned": n,
            }
            for (b, sid, m), done, n in state.missing()
        ]
    return out


def write_summary(
    run_dir: str | Path, records: list[RunRecord], extra: dict[str, Any] | None = None, status: str | None = None
) -> dict[str, Any]:
    """Write summary.json / summary.md; ``status``: the run's final status when the engine knows it
    before the manifest says so (otherwise the manifest's is read)."""
    from mmrag.runs.state import records_state
    from mmrag.scenarios.kinds import scenario_label

    summary = build_summary(records)
    summary.update(extra or {})
    labels = {g["scenario_id"]: scenario_label(g["scenario"]) for g in summary["groups"]}
    summary["state"] = state_summary(records_state(run_dir, records, status=status), labels)
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
    run_dir: str | Path, previous: dict[str, Any], state: str, extra: dict[str, Any], status: str | None = None
) -> dict[str, Any] | None:
    """The summary a previous invocation wrote, with ``extra`` (this invocation's not-applicable
    counts and windows) and the run's current state (``status``: this invocation's final one) put
    in, when it was computed from exactly ``state``; else None (the caller computes it again).
    Rewritten only when that changed it; lines a layer above added to summary.md are kept."""
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
    cells = _stored_cells(Path(run_dir))
    if cells is None:
        return None
    from mmrag.runs.state import run_state
    from mmrag.scenarios.kinds import scenario_label

    labels = {g["scenario_id"]: scenario_label(g["scenario"]) for g in summary["groups"]}
    updated = {**summary, **extra, "state": state_summary(run_state(run_dir, cells, status=status), labels)}
    if json.loads(json.dumps(updated)) != summary:
        lines = _extra_lines(Path(run_dir) / "summary.md", summary)
        atomic_write_json(path, updated)
        atomic_write_text(Path(run_dir) / "summary.md", summary_markdown(updated, lines))
    return updated


def _stored_cells(run_dir: Path) -> list[tuple[str, str, str, bool]] | None:
    """(benchmark, scenario id, model, request failed) of every stored cell, read from four columns
    of the records table (no record is built); None for a run not stored in columns."""
    import pyarrow.compute as pc

    from mmrag.runs.columnar import last_per_key
    from mmrag.runs.segments import read_table
    from mmrag.runs.store import RECORD_SCHEMA, RECORDS, is_columnar

    if not is_columnar(run_dir):
        return None
    cols = ["key", "attempt", "benchmark", "scenario_id", "model", "error"]
    table = read_table(run_dir / RECORDS, cols, RECORD_SCHEMA)
    if table.num_rows and pc.max(table.column("attempt")).as_py() > 1:  # some cell was retried
        table = last_per_key(table)
    columns = [table.column(c).to_pylist() for c in cols[2:]]
    return [(b, s, m, e is not None) for b, s, m, e in zip(*columns)]


def mark_summary_running(run_dir: str | Path, done: int, planned: int) -> None:
    """A summary left by an earlier invocation would describe a run that is now changing (and might
    be killed): it is marked incomplete until the run ends and writes it anew.  Cheap: the earlier
    summary is small and no record is read."""
    import json
    import time

    path = Path(run_dir) / "summary.json"
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if not isinstance(summary, dict) or done >= planned:
        return
    extra = _extra_lines(Path(run_dir) / "summary.md", summary)
    summary["state"] = {
        "status": "running",
        "complete": False,
        "planned": planned,
        "done": done,
        "notice": f"incomplete: {done} of {planned} cells when a run into this directory started at "
        f"{time.strftime('%Y-%m-%d %H:%M:%S')}; this summary predates it and is rewritten when that run ends",
    }
    atomic_write_json(path, summary)
    atomic_write_text(Path(run_dir) / "summary.md", summary_markdown(summary, extra))


def _extra_lines(md_path: Path, summary: dict[str, Any]) -> list[str]:
    """The lines a layer above added to summary.md (``summary_markdown``'s ``extra``: a labelled
    run's corrected rates), so a rewrite here keeps them without knowing what they are."""
    try:
        text = md_path.read_text(encoding="utf-8")
        base = summary_markdown(summary)
    except (OSError, KeyError, TypeError, ValueError):
        return []
    return text[len(base) :].splitlines() if text.startswith(base) else []
