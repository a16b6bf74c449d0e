"""Re-judge a saved run without calling the model again (``mmrag score RUN_DIR --judge ...``).

The records already hold the sample, the exact prompt and the response, so a new judge (or a
fixed judge) can be applied offline; the file is replaced atomically and the summary rebuilt.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmrag.errors import InputError
from mmrag.judging import judge_many
from mmrag.runs.config import JudgeConfig, RunConfig
from mmrag.runs.manifest import RunManifest
from mmrag.runs.store import ResultStore
from mmrag.runs.summary import write_summary
from mmrag.runs.wiring import make_judge


def rescore(run_dir: str | Path, judge: JudgeConfig) -> dict[str, Any]:
    import json

    run_dir = Path(run_dir)
    mpath = run_dir / "manifest.json"
    if not (run_dir / "samples.jsonl").exists() or not mpath.exists():
        raise InputError("not a run directory (needs manifest.json and samples.jsonl)", path=run_dir)
    cfg = RunConfig.model_validate(json.loads(mpath.read_text(encoding="utf-8"))["config"])
    cfg = cfg.model_copy(update={"judge": judge})
    store = ResultStore(run_dir / "samples.jsonl")
    records = store.records()
    changed = 0
    for kind in sorted({r.benchmark_kind for r in records}):
        group = [r for r in records if r.benchmark_kind == kind]
        verdicts = judge_many(make_judge(kind, cfg), [(r.sample, r.prompt, r.response) for r in group])
        for rec, verdict in zip(group, verdicts):
            changed += verdict.outcome != rec.verdict.outcome
            rec.verdict = verdict
    store.rewrite(records)
    summary = write_summary(run_dir, records)
    # the manifest must name the judge the records now carry (a later --resume judges with it too)
    manifest = RunManifest.model_validate(json.loads(mpath.read_text(encoding="utf-8")))
    manifest.config = cfg.model_dump(mode="json")
    manifest.judge_id = ", ".join(sorted({r.verdict.judge_id for r in records if r.verdict.judge_id}))
    manifest.write(run_dir)
    summary["changed_outcomes"] = changed
    return summary
