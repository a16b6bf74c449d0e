"""The run engine: benchmarks x scenarios x models -> prompts -> responses -> verdicts, on disk.

Why it looks like this:
- Every cell (sample, scenario, model) has a stable key; the engine plans all cells, skips those
  already finished in the run's store and streams the rest through :mod:`mmrag.runs.pipeline`
  (compose -> model -> judge -> store with bounded queues, every model's window kept full).
  Records are committed every N records or T seconds, so a SIGKILL loses at most that much — and
  it is re-requested on resume, where the response cache usually answers it for free.
- A failed request is stored as a failed attempt, not a finished cell: ``--resume`` sends it
  again.  A failed judge call (an LLM judge that is down) is a failed cell too; ``--resume``
  judges its stored reply again without asking the model.  Any error that stops the run (a full
  disk, a judge returning the wrong number of replies) leaves the manifest ``failed``.  More
  failures than the error budget (``max_failures``, default 5 % of the cells) make the run fail
  with a one-line reason.
- Composition is pure and seeded, model responses are cached by content, judging is
  deterministic: a resumed run ends with exactly the records of an uninterrupted one.
- What is not needed is not done: a new run is summarised from the records it just wrote (not
  read back), a resumed run builds its miner only when its remaining cells show negatives, and a
  run that wrote nothing keeps its summary when the records, verdicts and labels it summarised
  are unchanged (:func:`~mmrag.runs.summary.results_state`).
- The engine wires stages together; no stage imports it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmrag.errors import InputError
from mmrag.models.aio import run_sync
from mmrag.models.base import GenerationSettings, ModelSpec
from mmrag.models.factory import check_distinct
from mmrag.models.inputs import check_plan_inputs
from mmrag.redact import redact
from mmrag.runs.config import EXECUTION_KNOBS, RunConfig
from mmrag.runs.frame import read_records
from mmrag.runs.manifest import RunManifest
from mmrag.runs.pipeline import Lane, Pipeline, Stats, plan_cells
from mmrag.runs.plan import BenchmarkPlan, prepare_benchmarks
from mmrag.runs.preflight import check_config
from mmrag.runs.state import planned_entry
from mmrag.runs.store import RunLock, RunStore, stored_responses, write_format_marker
from mmrag.runs.summary import mark_summary_running, results_state, reuse_summary, write_summary
from mmrag.runs.wiring import make_judge, make_model
from mmrag.scenarios.kinds import scenario_label
from mmrag.util import mmrag_home


@dataclass
class RunResult:
    run_dir: Path
    summary: dict[str, Any]
    new_records: int
    model_calls: int
    skipped: int
    errors: dict[str, int] = field(default_factory=dict)
    #: cells whose latest attempt failed (retried by ``--resume``)
    failed: int = 0
    #: why the run counts as failed (error budget exceeded), one line; None when it did not
    failure: str | None = None


def _check_resume(run_dir: Path, config: RunConfig) -> None:
    """Refuse to mix two different experiments in one directory."""
    import json

    path = run_dir / "manifest.json"
    if not path.exists():
        return
    try:
        old = json.loads(path.read_text(encoding="utf-8"))["config"]
    except (ValueError, KeyError):
        raise InputError("manifest is unreadable; use a new --out directory", path=path) from None
    new = redact(config.model_dump(mode="json"))  # the manifest holds the redacted config
    for cfg in (old, new):
        for k in EXECUTION_KNOBS:
            cfg.pop(k, None)
        for m in cfg.get("models") or []:
            if isinstance(m, dict):
                m.pop("max_concurrency", None)
    if old != new:
        changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
        raise InputError(
            f"this directory holds a run with a different config (differs in: {', '.join(changed)}); "
            "use a new --out directory or `mmrag run --resume DIR`",
            path=path,
        )


#: what a run directory holds (a run killed during set-up may have left only some of these)
RUN_ENTRIES = frozenset(
    {
        "manifest.json",
        "FORMAT",
        "lock",
        "records",
        "objects",
        "verdicts",
        "summary.json",
        "summary.md",
        "samples.jsonl",
        ".write-probe",
    }
)


def _check_not_foreign(run_dir: Path) -> None:
    """Refuse ``--out`` into a folder of other files: the run would be mixed into it (and a
    later clean-up of the run would take them along)."""
    if not run_dir.is_dir() or (run_dir / "manifest.json").exists():
        return
    foreign = sorted(
        p.name
        for p in run_dir.iterdir()
        if p.name not in RUN_ENTRIES and not (p.name.startswith(".") and p.name.endswith(".tmp"))
    )
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise InputError(
            f"this folder is not empty and holds no run ({shown}); give --out a new or empty folder", path=run_dir
        )


def _ensure_writable(run_dir: Path) -> None:
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        probe = run_dir / ".write-probe"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise InputError(f"output directory is not writable ({exc.strerror})", path=run_dir) from None


def _check_format(run_dir: Path) -> None:
    """Old run directories (one ``samples.jsonl``) are read, never appended to."""
    from mmrag.runs.store import is_columnar

    if (run_dir / "samples.jsonl").exists() and not is_columnar(run_dir):
        raise InputError(
            "this run directory uses the old samples.jsonl format, which this version reads but no "
            "longer appends to; convert it first: python -m mmrag.runs.legacy " + str(run_dir),
            path=run_dir,
        )


def _lanes(models: list, config: RunConfig, settings: GenerationSettings) -> list[Lane]:
    """One lane per model: its window (``max_concurrency`` of the spec, else the backend's own, else
    one call's worth) and how many prompts it takes per call."""
    lanes = []
    for mspec, vlm in models:
        per_call = int(getattr(vlm, "prompts_per_call", 0) or config.batch_size)
        window = int(mspec.max_concurrency or getattr(vlm, "max_concurrency", 0) or per_call)
        eff = mspec.settings if mspec.settings != GenerationSettings() else settings
        lanes.append(
            Lane(
                label=mspec.label, vlm=vlm, settings=eff, window=max(1, window), per_call=max(1, min(per_call, window))
            )
        )
    return lanes


async def _serve(pipe: Pipeline, lanes: list[Lane]) -> Stats:
    try:
        return await pipe.run()
    finally:
        for lane in lanes:  # a backend holding connections may close them on this loop
            close = getattr(lane.vlm, "aclose", None)
            if close is not None:
                await close()


def execute(
    config: RunConfig,
    run_dir: str | Path,
    *,
    argv: list[str] | None = None,
    progress: Any = None,
    retry_failed: bool = False,
) -> RunResult:
    """Run (or resume) ``config`` into ``run_dir``.  Safe to call again on the same directory.

    Cells already finished are skipped; cells whose last attempt failed are sent again when
    ``retry_failed`` (``--resume``, ``--retry-errors``).  A second process on the same directory is
    refused (the directory is locked while a run writes it)."""
    run_dir = Path(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise InputError("output path exists and is not a directory", path=run_dir)
    _check_format(run_dir)
    _check_not_foreign(run_dir)
    _check_resume(run_dir, config)
    check_config(config)  # model options, plug-in names: errors before any index is built
    # a directory another process is writing is refused before any slow set-up
    held = [RunLock(run_dir).acquire()] if run_dir.is_dir() else []
    try:
        return _execute(config, run_dir, held, argv, progress, retry_failed)
    finally:
        for lock in held:  # held to the end: summary and manifest are written under the lock too
            lock.release()


def _execute(
    config: RunConfig, run_dir: Path, held: list[RunLock], argv: list[str] | None, progress: Any, retry_failed: bool
) -> RunResult:
    # Everything that can fail on bad input happens before a new run directory is created; in a
    # directory that holds records, miners are built once the remaining cells are known (below).
    previous = _previous_manifest(run_dir)
    plans = prepare_benchmarks(config, progress=progress, lazy=(run_dir / "records").is_dir())
    models = [(mspec, make_model(mspec, config)) for mspec in config.models]
    check_distinct(models)  # one model under two spellings (sim-vlm, sim-vlm:text_prior=0.5)
    judges = {p.kind: make_judge(p.kind, config) for p in plans}
    check_plan_inputs(plans, [vlm for _, vlm in models])  # a backend refusing an input fails here, not mid-run
    _ensure_writable(run_dir)
    if not held:  # a new directory: locked as soon as it exists
        held.append(RunLock(run_dir).acquire())
    store = RunStore(run_dir, lock=held[0])
    try:
        fresh = not store.done and not store.failed
        lanes = _lanes(models, config, config.settings or GenerationSettings())
        planned: dict[tuple[str, str, str], int] = {}
        cells, not_applicable, skipped, total = plan_cells(plans, lanes, store, retry_failed, planned)
        for plan, todo in cells:  # a miner that cannot be built fails here, before the manifest is touched
            if any(spec.uses_negatives for _, spec, _ in todo):
                plan.ensure_miner()
        write_format_marker(run_dir)
        manifest = RunManifest.start(config.model_dump(mode="json"), argv)
        manifest.seeds = {"run": config.seed}
        if previous is not None and not all(p.miner_built for p in plans):
            manifest.indices.update(previous.get("indices") or {})  # the indices its records were mined from
        for p in plans:
            manifest.datasets[p.ref.name] = p.fingerprint
            manifest.indices.update(p.index_hashes)
        manifest.judge_id = ", ".join(sorted({j.judge_id for j in judges.values()}))
        for mspec, vlm in models:
            manifest.models[mspec.label] = vlm.fingerprint
        # the plan's size goes on record before any cell runs: a reader of a killed run says what is missing
        manifest.counts = {"planned": total}
        named = {sp.id: scenario_label(sp.model_dump(mode="json")) for p in plans for sp in p.specs}
        manifest.planned = [planned_entry(*g, n, scenario=named.get(g[1], "")) for g, n in planned.items()]
        manifest.write(run_dir)
        mark_summary_running(run_dir, skipped, total)
        rejudge = stored_responses(run_dir, store.judge_failed) if retry_failed else {}
        n_todo = sum(len(need) for _, todo in cells for _, _, need in todo)
        task = (
            progress.add_task(f"{n_todo} cells ({len(lanes)} model{'s' if len(lanes) != 1 else ''})", total=n_todo)
            if progress is not None and n_todo
            else None
        )
        pipe = Pipeline(
            cells,
            lanes,
            judges,
            store,
            flush_every=config.flush_every,
            flush_seconds=config.flush_seconds,
            max_failed=config.max_failures * max(total, 1),
            progress=progress,
            task=task,
            judge_in_thread=config.judge.model is not None,
            rejudge=rejudge,
            keep_records=fresh,
        )
        try:
            stats = run_sync(lambda: _serve(pipe, lanes))
        except Exception:
            manifest.mark_failed(run_dir)  # a full disk, a failing judge: never left "running"
            raise
        for k, v in stats.not_applicable.items():
            not_applicable[k] = not_applicable.get(k, 0) + v
        store.flush()
        store.compact()
        failed_now = len(store.failed)
    finally:
        try:
            store.close()
        except Exception:
            if "manifest" in locals():
                manifest.mark_failed(run_dir)
            raise
    failure = stats.aborted
    if failure is None and failed_now > config.max_failures * max(total, 1):
        failure = (
            f"{failed_now} of {total} cells failed (more than the error budget of "
            f"{100 * config.max_failures:g} %); `mmrag run --resume {run_dir}` retries them"
        )
    manifest.status = "failed" if failure else ("complete" if not failed_now else "complete_with_failures")
    extra = {"not_applicable": not_applicable, "windows": {l.label: l.window for l in lanes}}
    state = results_state(run_dir, manifest.mmrag_version, manifest.git_revision)
    wrote = stats.new + stats.failed
    summary = None if wrote or previous is None else reuse_summary(run_dir, previous, state, extra, manifest.status)
    if summary is not None:  # nothing changed since the last summary: keep it (and its templates)
        manifest.templates.update(previous.get("templates") or {})  # type: ignore[union-attr]
        n_records = int(summary.get("n_records", 0))
    else:
        # a new run's records are the ones it just stored (in plan order): no need to read them back
        records = [r for _, r in sorted(pipe.stored, key=lambda x: x[0])] if pipe.stored is not None else None
        if records is None:
            records = read_records(run_dir)
        summary = write_summary(run_dir, records, extra=extra, status=manifest.status)
        for r in records:
            manifest.templates.update(_template_of(r.prompt))
        n_records = len(records)
    manifest.summary_state = state
    manifest.counts = {
        "planned": total,
        "records": n_records,
        "new": stats.new,
        "model_calls": stats.model_calls,
        "failed": failed_now,
        "judge_failed": len(store.judge_failed),
        "not_applicable": sum(not_applicable.values()),
    }
    manifest.stages = {k: round(v, 4) for k, v in {**stats.stages, "wall_s": stats.wall_s}.items()}
    manifest.write(run_dir)
    return RunResult(
        run_dir=run_dir,
        summary=summary,
        new_records=stats.new,
        model_calls=stats.model_calls,
        skipped=skipped,
        failed=failed_now,
        errors={**summary.get("errors", {}), **{f"judge_{k}": v for k, v in summary.get("judge_errors", {}).items()}},
        failure=failure,
    )


def _previous_manifest(run_dir: Path) -> dict[str, Any] | None:
    """The manifest a previous invocation left (its indices, templates and summary state), or None."""
    import json

    try:
        data = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _template_of(prompt) -> list[tuple[str, str]]:
    if prompt.template_id:
        return [(f"{prompt.template_id}@{prompt.template_version}", prompt.template_hash)]
    return []


def default_run_dir(name: str = "run") -> Path:
    return mmrag_home() / "runs" / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"


__all__ = ["execute", "RunResult", "BenchmarkPlan", "ModelSpec", "default_run_dir"]
