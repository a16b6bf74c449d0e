"""The run engine: benchmarks x scenarios x models -> prompts -> responses -> verdicts, on disk.

Why it looks like this:
- Every cell (sample, scenario, model) has a stable key; the engine plans all cells, skips those
  already in ``samples.jsonl`` and processes the rest in batches.  Each batch is appended and
  fsynced before the next starts, so a SIGKILL loses at most the batch in flight — and that batch
  is re-requested on resume, where the response cache usually answers it for free.
- Composition is pure and seeded, model responses are cached by content, judging is
  deterministic: a resumed run ends with exactly the records of an uninterrupted one.
- The engine wires stages together; no stage imports it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from mmrag.errors import InputError
from mmrag.judging import judge_many
from mmrag.models.base import GenerationSettings, ModelSpec
from mmrag.runs.config import RunConfig
from mmrag.models.inputs import check_plan_inputs
from mmrag.redact import redact
from mmrag.runs.manifest import RunManifest
from mmrag.runs.preflight import check_config
from mmrag.runs.plan import BenchmarkPlan, prepare_benchmarks
from mmrag.runs.records import RunRecord, record_key
from mmrag.runs.store import ResultStore
from mmrag.runs.summary import write_summary
from mmrag.runs.wiring import make_judge, make_model
from mmrag.util import mmrag_home


@dataclass
class RunResult:
    run_dir: Path
    summary: dict[str, Any]
    new_records: int
    model_calls: int
    skipped: int
    errors: dict[str, int] = field(default_factory=dict)


def _chunks(items: list, n: int) -> Iterable[list]:
    for i in range(0, len(items), n):
        yield items[i:i + n]


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
    new = redact(config.model_dump(mode="json"))   # the manifest holds the redacted config
    old.pop("out", None)
    new.pop("out", None)
    if old != new:
        changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
        raise InputError(f"this directory holds a run with a different config (differs in: {', '.join(changed)}); "
                         "use a new --out directory or `mmrag run --resume DIR`", path=path)


def _ensure_writable(run_dir: Path) -> None:
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        probe = run_dir / ".write-probe"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise InputError(f"output directory is not writable ({exc.strerror})", path=run_dir) from None


def execute(config: RunConfig, run_dir: str | Path, *, argv: list[str] | None = None,
            progress: Any = None) -> RunResult:
    """Run (or resume) ``config`` into ``run_dir``.  Safe to call again on the same directory."""
    run_dir = Path(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise InputError("output path exists and is not a directory", path=run_dir)
    _check_resume(run_dir, config)
    check_config(config)   # model options, plug-in names: errors before any index is built
    # Everything that can fail on bad input happens before the run directory is touched.
    plans = prepare_benchmarks(config, progress=progress)
    models = [(mspec, make_model(mspec, config)) for mspec in config.models]
    judges = {p.kind: make_judge(p.kind, config) for p in plans}
    check_plan_inputs(plans, [vlm for _, vlm in models])   # a backend refusing an input fails here, not mid-run
    _ensure_writable(run_dir)
    manifest = RunManifest.start(config.model_dump(mode="json"), argv)
    manifest.seeds = {"run": config.seed}
    for p in plans:
        manifest.datasets[p.ref.name] = p.fingerprint
        manifest.indices.update(p.index_hashes)
    manifest.judge_id = ", ".join(sorted({j.judge_id for j in judges.values()}))
    store = ResultStore(run_dir / "samples.jsonl")
    settings = config.settings or GenerationSettings()
    calls = 0
    new = 0
    skipped = 0
    #: cells a sample cannot be shown under (e.g. no image gold for an image-positive oracle):
    #: skipped and counted, never scored
    not_applicable: dict[str, int] = {}
    for mspec, vlm in models:
        manifest.models[mspec.label] = vlm.fingerprint
    manifest.write(run_dir)
    for plan in plans:
        # A cell (sample, spec) is composed once and shown to every model that still lacks it:
        # mining and rendering are shared work, and every model sees the very same prompt.
        cells = []
        for spec in plan.specs:
            for sample in plan.samples:
                missing = [(mspec, vlm) for mspec, vlm in models
                           if record_key(sample.id, spec.id, vlm.fingerprint) not in store]
                skipped += len(models) - len(missing)
                if not missing:
                    continue
                if plan.fits(sample, spec):
                    cells.append((sample, spec, missing))
                else:
                    not_applicable[spec.id] = not_applicable.get(spec.id, 0) + len(missing)
        plan.prefetch([(sample, spec) for sample, spec, _ in cells])
        task = None
        if progress is not None and cells:
            task = progress.add_task(f"{plan.ref.name}: {len(cells)} prompts x {len(models)} model(s)",
                                     total=sum(len(c[2]) for c in cells))
        for batch in _chunks(cells, config.batch_size):
            t0 = time.perf_counter()
            composed = []
            for sample, spec, missing in batch:
                prompt = plan.compose(sample, spec)
                if prompt is None:
                    not_applicable[spec.id] = not_applicable.get(spec.id, 0) + len(missing)
                else:
                    composed.append((sample, spec, missing, prompt))
            compose_s = (time.perf_counter() - t0) / max(len(batch), 1)
            for mspec, vlm in models:
                mine = [(sm, sp, pr) for sm, sp, missing, pr in composed if any(v is vlm for _, v in missing)]
                if not mine:
                    continue
                eff_settings = mspec.settings if mspec.settings != GenerationSettings() else settings
                t1 = time.perf_counter()
                responses = vlm.generate([pr for _, _, pr in mine], eff_settings)
                calls += sum(1 for r in responses if not r.cached)
                gen_s = (time.perf_counter() - t1) / len(mine)
                # batched so an LLM judge sends one batch of requests, not one per record
                verdicts = judge_many(judges[plan.kind], [(sm, pr, r) for (sm, _, pr), r in zip(mine, responses)])
                recs = [RunRecord(
                    key=record_key(sm.id, sp.id, vlm.fingerprint), benchmark=plan.ref.name, benchmark_kind=plan.kind,
                    scenario_id=sp.id, scenario=sp.model_dump(mode="json"), model=mspec.label,
                    model_fingerprint=vlm.fingerprint, sample=sm, prompt=pr, response=resp, verdict=verdict,
                    mining=dict(pr.metadata.get("mining", {})), timings={"compose_s": compose_s, "generate_s": gen_s})
                    for (sm, sp, pr), resp, verdict in zip(mine, responses, verdicts)]
                new += store.append(recs)
            if task is not None:
                progress.advance(task, sum(len(c[2]) for c in batch))
    records = store.records()
    summary = write_summary(run_dir, records, extra={"not_applicable": not_applicable})
    for r in records:
        manifest.templates.update(_template_of(r.prompt))
    manifest.status = "complete"
    manifest.counts = {"records": len(records), "new": new, "model_calls": calls,
                       "not_applicable": sum(not_applicable.values())}
    manifest.write(run_dir)
    errors = summary.get("errors", {})
    return RunResult(run_dir=run_dir, summary=summary, new_records=new, model_calls=calls,
                     skipped=skipped, errors=errors)


def _template_of(prompt) -> list[tuple[str, str]]:
    if prompt.template_id:
        return [(f"{prompt.template_id}@{prompt.template_version}", prompt.template_hash)]
    return []


def default_run_dir(name: str = "run") -> Path:
    return mmrag_home() / "runs" / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"


__all__ = ["execute", "RunResult", "BenchmarkPlan", "ModelSpec", "default_run_dir"]
