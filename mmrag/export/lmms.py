"""A run as lmms-eval's ``--log_samples`` output, field for field, so its readers (and scripts
written for them) open it.

Layout, per model (lmms-eval writes one folder per model)::

    OUT/MODEL/DATE_results.json
    OUT/MODEL/DATE_samples_TASK.jsonl      one per benchmark x scenario

A task is ``mmrag_BENCHMARK_SCENARIO`` (a scenario is the variant of a dataset that an lmms-eval
task would be).  A sample line has lmms-eval's keys: ``doc_id`` (its position in the task),
``doc`` (the sample as data: question, answers, sample/question ids, scenario, source, the
contexts shown, and mmrag's record ``key``), ``target``, ``arguments`` (the prompt text and the
generation settings), ``resps`` (``[[reply]]``), ``filtered_resps`` (``[extracted or reply]``),
``doc_hash`` / ``prompt_hash`` / ``target_hash`` (sha256 hex, as lmms-eval's ``hash_string``), then
one metric per outcome (``correct``, ``deflection``, ``hallucination``, ``unparseable``: 0 or 1).
Failed requests have nothing to score and are left out, as lmms-eval has no failed samples.

``results.json`` has ``results`` (``{task: {"alias": task, "correct,none": mean,
"correct_stderr,none": se, ...}}``), ``configs``, ``versions``, ``n-shot``, ``higher_is_better``,
``n-samples``, ``config`` (model, model_args, limit, gen_kwargs, seed), ``git_hash`` and ``date``.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from mmrag.schema import OUTCOMES
from mmrag.util import atomic_write_json, atomic_write_text

FILTER = "none"
#: True: a higher rate is better (lmms-eval's ``higher_is_better``)
HIGHER_IS_BETTER = {"correct": True, "deflection": False, "hallucination": False, "unparseable": False}


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def task_name(benchmark: str, scenario_id: str) -> str:
    from mmrag.export import slug

    return slug(f"mmrag_{benchmark}_{scenario_id}")


def _line(doc_id: int, rec: Any, settings: dict[str, Any]) -> dict[str, Any]:
    from mmrag.export.inspect_log import contexts, target

    r, v = rec.response, rec.verdict
    doc = {
        "key": rec.key,
        "sample_id": rec.sample.id,
        "question_id": rec.sample.question_id,
        "question": rec.sample.question,
        "answers": list(rec.sample.answers),
        "choices": [c.model_dump(mode="json") for c in rec.prompt.choices],
        "label": rec.prompt.label,
        "source": rec.sample.source,
        "benchmark": rec.benchmark,
        "scenario_id": rec.scenario_id,
        "scenario": rec.scenario,
        "contexts": contexts(rec),
        "images": [i.path for i in rec.prompt.images()],
        "model_fingerprint": rec.model_fingerprint,
        "judge_id": v.judge_id,
        "reason": v.reason,
    }
    prompt_text = "\n\n".join(f"[{m.role}] {m.text()}" for m in rec.prompt.messages)
    tgt = target(rec)
    line = {
        "doc_id": doc_id,
        "doc": doc,
        "target": tgt,
        "arguments": [prompt_text, settings],
        "resps": [[r.text]],
        "filtered_resps": [v.extracted if v.extracted is not None else r.text],
        "doc_hash": _hash(json.dumps(doc, indent=2, ensure_ascii=False, default=str)),
        "prompt_hash": _hash(prompt_text),
        "target_hash": _hash(str(tgt)),
    }
    line.update({o: int(v.outcome == o) for o in OUTCOMES})
    return line


def _stderr(values: list[int]) -> float | None:
    """lmms-eval's ``mean_stderr``: the sample standard deviation over sqrt(n) (None for one sample:
    JSON has no NaN)."""
    n = len(values)
    if n < 2:
        return None
    mu = sum(values) / n
    return math.sqrt(sum((x - mu) ** 2 for x in values) / (n - 1) / n)


def _settings(manifest: dict[str, Any], model: str) -> dict[str, Any]:
    cfg = manifest.get("config") or {}
    for m in cfg.get("models") or []:
        label = f"{m.get('backend')}:{m.get('model')}" if m.get("model") else m.get("backend")
        if label == model:
            return m.get("settings") or cfg.get("settings") or {}
    return cfg.get("settings") or {}


def write_lmms_eval(records: list[Any], manifest: dict[str, Any], out_dir: Path) -> list[Path]:
    from mmrag.export import slug

    by_model: dict[str, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for rec in records:
        if rec.response.error is None:
            by_model[rec.model][task_name(rec.benchmark, rec.scenario_id)].append(rec)
    date = time.strftime("%Y%m%d_%H%M%S")
    cfg = manifest.get("config") or {}
    written: list[Path] = []
    for model, tasks in sorted(by_model.items()):
        folder = out_dir / slug(model)
        settings = _settings(manifest, model)
        results, configs, n_samples = {}, {}, {}
        for task, recs in sorted(tasks.items()):
            lines = [_line(i, r, settings) for i, r in enumerate(recs)]
            path = folder / f"{date}_samples_{task}.jsonl"
            atomic_write_text(path, "".join(json.dumps(x, ensure_ascii=False, default=str) + "\n" for x in lines))
            written.append(path)
            res: dict[str, Any] = {"alias": task}
            for o in OUTCOMES:
                vals = [x[o] for x in lines]
                res[f"{o},{FILTER}"] = sum(vals) / len(vals)
                res[f"{o}_stderr,{FILTER}"] = _stderr(vals)
            results[task] = res
            r0 = recs[0]
            configs[task] = {
                "task": task,
                "dataset_path": r0.benchmark,
                "output_type": "generate_until",
                "generation_kwargs": settings,
                "metadata": {"scenario": r0.scenario, "scenario_id": r0.scenario_id},
            }
            n_samples[task] = {"original": len(recs), "effective": len(recs)}
        doc: dict[str, Any] = {
            "results": results,
            "group_subtasks": {t: [] for t in sorted(tasks)},
            "configs": configs,
            "versions": {t: 0 for t in sorted(tasks)},
            "n-shot": {t: 0 for t in sorted(tasks)},
            "higher_is_better": {t: dict(HIGHER_IS_BETTER) for t in sorted(tasks)},
            "n-samples": n_samples,
            "config": {
                "model": model,
                "model_args": f"fingerprint={next(iter(tasks.values()))[0].model_fingerprint}",
                "batch_size": cfg.get("batch_size"),
                "limit": cfg.get("limit"),
                "gen_kwargs": settings,
                "random_seed": cfg.get("seed"),
            },
            "git_hash": manifest.get("git_revision"),
            "date": date,
        }
        path = folder / f"{date}_results.json"
        atomic_write_json(path, doc)
        written.append(path)
    return written


def read_samples(path: str | Path) -> list[dict[str, Any]]:
    """The lines of an lmms-eval samples file (for round trips and for reading lmms-eval output)."""
    from mmrag.util import iter_jsonl

    return [obj for _, obj in iter_jsonl(path)]
