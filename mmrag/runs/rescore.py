"""Re-judge a saved run without calling the model again (``mmrag score RUN_DIR --judge ...``).

The store holds the sample, the exact prompt and the response, so a new judge (or a fixed judge)
can be applied offline.  The new verdicts are appended as one new generation of verdict rows
(``RUN/verdicts/``); the records and every earlier verdict stay as they were, and readers take
the latest generation.  A judge that fails on any reply (an LLM judge that cannot be reached) is
one :class:`~mmrag.errors.JudgeError` and nothing is written.  Failed requests and incomplete
replies have nothing to judge and keep their verdict.  An old ``samples.jsonl`` run is still
re-judged in place (replaced atomically), as before.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mmrag.errors import InputError
from mmrag.judging import judge_many
from mmrag.judging.llm import raise_judge_failures
from mmrag.runs.config import JudgeConfig, RunConfig
from mmrag.runs.frame import read_records, record_row
from mmrag.runs.manifest import RunManifest
from mmrag.runs.store import RunLock, RunStore, is_columnar, verdict_columns
from mmrag.runs.summary import write_summary
from mmrag.runs.wiring import make_judge


def rescore(run_dir: str | Path, judge: JudgeConfig) -> dict[str, Any]:
    run_dir = Path(run_dir)
    mpath = run_dir / "manifest.json"
    columnar = is_columnar(run_dir)
    if not (columnar or (run_dir / "samples.jsonl").exists()) or not mpath.exists():
        raise InputError("not a run directory (needs manifest.json and records/ or samples.jsonl)", path=run_dir)
    cfg = RunConfig.model_validate(json.loads(mpath.read_text(encoding="utf-8"))["config"])
    cfg = cfg.model_copy(update={"judge": judge})
    lock = RunLock(run_dir).acquire()
    try:
        records = read_records(run_dir)
        changed = 0
        rows = []
        for kind in sorted({r.benchmark_kind for r in records}):
            group = [
                r
                for r in records
                if r.benchmark_kind == kind and r.response.error is None and not r.response.incomplete
            ]
            verdicts = judge_many(make_judge(kind, cfg), [(r.sample, r.prompt, r.response) for r in group])
            raise_judge_failures(verdicts, f"replies of {kind}")  # before anything is written
            for rec, verdict in zip(group, verdicts):
                changed += verdict.outcome != rec.verdict.outcome
                rec.verdict = verdict
                rows.append({"key": rec.key, **verdict_columns(rec, record_row(rec))})
        if columnar:
            RunStore(run_dir, lock=lock).add_verdicts(rows)
        else:
            from mmrag.runs.legacy import rewrite_jsonl

            rewrite_jsonl(run_dir, records)
        summary = write_summary(run_dir, records)
        # the manifest must name the judge the records now carry (a later --resume judges with it too)
        manifest = RunManifest.model_validate(json.loads(mpath.read_text(encoding="utf-8")))
        manifest.config = cfg.model_dump(mode="json")
        manifest.judge_id = ", ".join(sorted({r.verdict.judge_id for r in records if r.verdict.judge_id}))
        manifest.write(run_dir)
    finally:
        lock.release()
    summary["changed_outcomes"] = changed
    return summary
