"""A run as lmms-eval 0.7.3 writes ``--log_samples`` output, key for key and type for type, so
lmms-eval's viewer and scripts written for its files open it (tests/test_export_lmms.py passes the
same samples through lmms-eval's own ``EvaluationTracker`` and compares).

Layout, per model (lmms-eval writes one folder per ``model_name_sanitized``)::

    OUT/MODEL/DATE_results.json
    OUT/MODEL/DATE_samples_TASK.jsonl      one per benchmark x scenario

A task is ``mmrag_BENCHMARK_SCENARIO`` (a scenario is the variant of a dataset an lmms-eval task
would be).  Samples are built as lmms-eval's evaluator logs them in memory (``doc_id``, ``doc``,
``target``, ``arguments``, ``resps``, ``filtered_resps``, ``token_counts``, ``doc_hash``, then
one 0/1 metric per outcome), then saved as its ``save_results_samples`` saves them: ``input`` =
``arguments[0]`` (the user turn's text, contexts and question), ``doc`` and ``arguments``
dropped, single responses flattened, ``resps`` dropped when it equals ``filtered_resps``,
``target`` a string.  ``doc_id`` is the position in the task; ``configs[TASK].metadata.doc_ids``
maps it back to mmrag's sample id and record key (lmms-eval drops ``doc`` from the file).

``results.json`` has lmms-eval's keys in its order: ``results`` (per task ``alias``,
``OUTCOME,none``, ``samples``, ``OUTCOME_stderr,none``, ``OUTCOME_stderr_clt,none``,
``OUTCOME_stderr_clustered,none``, clustered by question), ``group_subtasks``, ``configs``,
``versions``, ``n-shot``, ``higher_is_better``, ``n-samples``, ``config``, ``git_hash``,
``git_branch``, ``lmms_eval_version``, ``date``, ``usage``, ``task_hashes``, then the tracker's
``model_source``, ``model_name``, ``model_name_sanitized``, ``system_instruction(_sha)``,
``fewshot_as_multiturn``, ``chat_template(_sha)``, ``start_time``, ``end_time`` and
``total_evaluation_time_seconds``.  An unfinished run has ``n-samples`` original (planned) >
effective (done), and its configs' ``metadata.mmrag_state`` says ``incomplete: X of Y cells``.
Failed requests are left out: lmms-eval has no failed samples.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmrag.schema import OUTCOMES
from mmrag.util import atomic_write_text

FILTER = "none"
NA = "N/A"  # lmms-eval's stderr when it cannot be computed
#: True: a higher rate is better (lmms-eval's ``higher_is_better``)
HIGHER_IS_BETTER = {"correct": True, "deflection": False, "hallucination": False, "unparseable": False}


def hash_string(text: str) -> str:
    """sha256 hex, as lmms-eval's ``hash_string``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _plain(o: Any) -> Any:
    """lmms-eval's ``handle_non_serializable``: sets become lists, anything else its str."""
    return list(o) if isinstance(o, set) else str(o)


def _dumps(obj: Any, **kw: Any) -> str:
    return json.dumps(obj, default=_plain, ensure_ascii=False, **kw)


def sanitize_model_name(name: str) -> str:
    """The folder lmms-eval names after a model: the last two ``/`` parts, with ``"<>:/|\\?*[]``
    runs replaced by ``__``."""
    parts = name.split("/")
    return re.sub(r"[\"<>:/\|\\?\*\[\]]+", "__", "/".join(parts[-2:]))


def task_name(benchmark: str, scenario_id: str) -> str:
    from mmrag.export import slug

    return slug(f"mmrag_{benchmark}_{scenario_id}")


def _user_text(rec: Any) -> str:
    """The context string lmms-eval would log as ``arguments[0]``: the user turn's text (the
    system prompt is the run's ``system_instruction``; images travel as visuals, not text)."""
    return "\n".join(m.text() for m in rec.prompt.messages if m.role == "user")


def _system_text(rec: Any) -> str:
    return "\n".join(m.text() for m in rec.prompt.messages if m.role == "system")


def logged_sample(doc_id: int, task: str, rec: Any, settings: dict[str, Any]) -> dict[str, Any]:
    """One sample as lmms-eval's evaluator holds it before saving (``_process_document``)."""
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
    usage = r.usage
    sample = {
        "doc_id": doc_id,
        "doc": doc,
        "target": target(rec),
        "arguments": [_user_text(rec), settings, doc_id, task, "test"],
        "resps": [[r.text]],
        "filtered_resps": [v.extracted if v.extracted is not None else r.text],
        "token_counts": [
            {"input_tokens": usage.prompt_tokens, "output_tokens": usage.completion_tokens, "reasoning_tokens": 0}
            if usage.prompt_tokens or usage.completion_tokens
            else None
        ],
        "doc_hash": hash_string(_dumps(doc, indent=2)),
    }
    sample.update({o: int(v.outcome == o) for o in OUTCOMES})
    return sample


def _strings(x: Any) -> Any:
    """lmms-eval's ``sanitize_list``: nested lists kept, every leaf its str."""
    if isinstance(x, list):
        return [_strings(i) for i in x]
    if isinstance(x, tuple):
        return tuple(_strings(i) for i in x)
    return str(x)


def saved_sample(sample: dict[str, Any]) -> dict[str, Any]:
    """The line ``save_results_samples`` writes for ``sample`` (a new dict; ``sample`` is kept)."""
    out = dict(sample)
    out["input"] = out["arguments"][0]
    resps, filtered = _strings(out["resps"]), _strings(out["filtered_resps"])
    if isinstance(resps, list) and len(resps) == 1:
        resps = resps[0]
    if isinstance(filtered, list) and len(filtered) == 1:
        filtered = filtered[0]
    out["resps"], out["filtered_resps"] = resps, filtered
    if resps == filtered or (isinstance(resps, list) and len(resps) == 1 and resps[0] == filtered):
        out.pop("resps")
    out["target"] = str(out["target"])
    out.pop("arguments")
    out.pop("doc")
    return out


def _stderr(values: list[int]) -> float | str:
    """lmms-eval's ``mean_stderr`` (sample standard deviation over sqrt(n)); ``N/A`` below two."""
    n = len(values)
    if n < 2:
        return NA
    mu = sum(values) / n
    return math.sqrt(sum((x - mu) ** 2 for x in values) / (n - 1) / n)


def _clustered_stderr(values: list[int], clusters: list[str]) -> float | str:
    """The clustered standard error lmms-eval reports (Miller 2024, eq. 4), clustered by question:
    the CLT variance plus the within-question covariance; ``N/A`` with one question or one sample."""
    n = len(values)
    if n < 2 or len(set(clusters)) < 2:
        return NA
    mu = sum(values) / n
    var = sum((x - mu) ** 2 for x in values) / (n - 1) / n
    by: dict[str, list[float]] = defaultdict(list)
    for x, c in zip(values, clusters):
        by[c].append(x - mu)
    cross = sum(sum(d) ** 2 - sum(e * e for e in d) for d in by.values())
    return math.sqrt(max(var + cross / (n * n), 0.0))


def _task_results(task: str, lines: list[dict[str, Any]], clusters: list[str]) -> dict[str, Any]:
    res: dict[str, Any] = {"alias": task}
    for o in OUTCOMES:
        vals = [x[o] for x in lines]
        res[f"{o},{FILTER}"] = sum(vals) / len(vals)
        res["samples"] = len(vals)
        res[f"{o}_stderr,{FILTER}"] = _stderr(vals)
        res[f"{o}_stderr_clt,{FILTER}"] = _stderr(vals)
        res[f"{o}_stderr_clustered,{FILTER}"] = _clustered_stderr(vals, clusters)
    return res


def _settings(manifest: dict[str, Any], model: str) -> dict[str, Any]:
    cfg = manifest.get("config") or {}
    for m in cfg.get("models") or []:
        label = f"{m.get('backend')}:{m.get('model')}" if m.get("model") else m.get("backend")
        if label == model:
            return m.get("settings") or cfg.get("settings") or {}
    return cfg.get("settings") or {}


def model_name(label: str) -> str:
    """The ``model_name`` lmms-eval reads from ``model_args`` (its value runs to the first comma)."""
    return label.replace(",", ";")


def _usage(recs: list[Any], tasks: dict[str, list[Any]]) -> dict[str, Any]:
    def agg(rs: list[Any]) -> dict[str, int]:
        i = sum(r.response.usage.prompt_tokens for r in rs)
        o = sum(r.response.usage.completion_tokens for r in rs)
        return {
            "input_tokens": i,
            "output_tokens": o,
            "reasoning_tokens": 0,
            "total_tokens": i + o,
            "n_api_calls": len(rs),
        }

    return {
        "total": agg(recs),
        "by_task": {t: agg(rs) for t, rs in sorted(tasks.items())},
        "by_source": {"mmrag": agg(recs)},
        "budget_exceeded": False,
        "budget_total_tokens": None,
    }


def _seconds(manifest: dict[str, Any]) -> float:
    stages = manifest.get("stages") or {}
    return float(stages.get("wall_s") or 0.0)


def results_document(
    model: str,
    tasks: dict[str, list[Any]],
    lines: dict[str, list[dict[str, Any]]],
    manifest: dict[str, Any],
    state: Any,
    date: str,
) -> dict[str, Any]:
    """``results.json`` before the tracker adds ``task_hashes`` and its own fields (the dict
    lmms-eval's ``simple_evaluate`` returns, ``samples`` popped)."""
    cfg = manifest.get("config") or {}
    settings = _settings(manifest, model)
    names = sorted(tasks)
    notice = state.notice()
    configs, n_samples, results = {}, {}, {}
    for t in names:
        recs = tasks[t]
        r0 = recs[0]
        results[t] = _task_results(t, lines[t], [r.sample.question_id for r in recs])
        planned = state.planned_by.get((r0.benchmark, r0.scenario_id, model))
        meta = {
            "scenario": r0.scenario,
            "scenario_id": r0.scenario_id,
            "doc_ids": [{"sample_id": r.sample.id, "key": r.key} for r in recs],
        }
        if notice:
            meta["mmrag_state"] = f"{notice}; this task: {len(recs)} of {planned or '?'} cells"
        configs[t] = {
            "task": t,
            "dataset_path": r0.benchmark,
            "test_split": "test",
            "output_type": "generate_until",
            "generation_kwargs": settings,
            "metadata": meta,
        }
        n_samples[t] = {"original": max(planned or 0, len(recs)), "effective": len(recs)}
    fingerprint = tasks[names[0]][0].model_fingerprint
    return {
        "results": results,
        "group_subtasks": {t: [] for t in reversed(names)},
        "configs": configs,
        "versions": {t: 0 for t in names},
        "n-shot": {t: 0 for t in names},
        "higher_is_better": {t: dict(HIGHER_IS_BETTER) for t in names},
        "n-samples": n_samples,
        "config": {
            "model": model,
            "model_args": f"model={model_name(model)},fingerprint={fingerprint}",
            "model_backend": f"mmrag ({model})",
            "batch_size": cfg.get("batch_size"),
            "batch_sizes": [],
            "device": None,
            "use_cache": None,
            "limit": cfg.get("limit"),
            "offset": 0,
            "bootstrap_iters": 0,
            "process_docs_parallel": 1,
            "gen_kwargs": settings,
            "random_seed": cfg.get("seed"),
            "numpy_seed": cfg.get("seed"),
            "torch_seed": cfg.get("seed"),
            "fewshot_seed": cfg.get("seed"),
        },
        "git_hash": manifest.get("git_revision"),
        "git_branch": None,
        "lmms_eval_version": f"mmrag {manifest.get('mmrag_version', '')}".strip(),
        "date": date,
        "usage": _usage([r for rs in tasks.values() for r in rs], tasks),
    }


def tracker_fields(model: str, system: str, seconds: float) -> dict[str, Any]:
    """What lmms-eval's ``GeneralConfigTracker`` adds to ``results.json``."""
    name = model_name(model)
    return {
        "model_source": "mmrag",
        "model_name": name,
        "model_name_sanitized": sanitize_model_name(name),
        "system_instruction": system or None,
        "system_instruction_sha": hash_string(system) if system else None,
        "fewshot_as_multiturn": False,
        "chat_template": None,
        "chat_template_sha": None,
        "start_time": 0.0,
        "end_time": seconds,
        "total_evaluation_time_seconds": str(seconds),
    }


def task_hashes(lines: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    """lmms-eval's cumulative hash of each task's samples."""
    return {t: hash_string("".join(f"sample_{i}" + s["doc_hash"] for i, s in enumerate(ls))) for t, ls in lines.items()}


@dataclass
class ModelLog:
    """What lmms-eval holds for one model just before its tracker saves: the results dict (without
    ``task_hashes`` and the tracker's fields) and each task's logged samples."""

    model: str
    results: dict[str, Any]
    samples: dict[str, list[dict[str, Any]]]
    system: str
    seconds: float

    @property
    def folder(self) -> str:
        return sanitize_model_name(model_name(self.model))

    def results_json(self) -> dict[str, Any]:
        """``results.json`` as the tracker completes it."""
        doc = {**self.results, "task_hashes": task_hashes(self.samples)}
        doc.update(tracker_fields(self.model, self.system, self.seconds))
        return doc


def model_logs(records: list[Any], manifest: dict[str, Any], date: str) -> list[ModelLog]:
    """One :class:`ModelLog` per model of the run (failed requests left out)."""
    from mmrag.runs.state import records_state

    state = records_state(manifest.get("run_dir", ""), records, manifest=manifest)
    by_model: dict[str, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for rec in records:
        if rec.response.error is None:
            by_model[rec.model][task_name(rec.benchmark, rec.scenario_id)].append(rec)
    out = []
    for model, tasks in sorted(by_model.items()):
        settings = _settings(manifest, model)
        lines = {t: [logged_sample(i, t, r, settings) for i, r in enumerate(recs)] for t, recs in sorted(tasks.items())}
        first = next(iter(tasks.values()))[0]
        out.append(
            ModelLog(
                model=model,
                results=results_document(model, tasks, lines, manifest, state, date),
                samples=lines,
                system=_system_text(first),
                seconds=_seconds(manifest),
            )
        )
    return out


def write_lmms_eval(records: list[Any], manifest: dict[str, Any], out_dir: Path) -> list[Path]:
    date = time.strftime("%Y%m%d_%H%M%S")
    written: list[Path] = []
    for ml in model_logs(records, manifest, date):
        folder = out_dir / ml.folder
        path = folder / f"{date}_results.json"
        atomic_write_text(path, _dumps(ml.results_json(), indent=2))
        written.append(path)
        for t, ls in ml.samples.items():
            path = folder / f"{date}_samples_{t}.jsonl"
            atomic_write_text(path, "".join(_dumps(saved_sample(s)) + "\n" for s in ls))
            written.append(path)
    return written


def read_samples(path: str | Path) -> list[dict[str, Any]]:
    """The lines of an lmms-eval samples file (for round trips and for reading lmms-eval output)."""
    from mmrag.util import iter_jsonl

    return [obj for _, obj in iter_jsonl(path)]


__all__ = ["ModelLog", "model_logs", "logged_sample", "read_samples", "saved_sample", "write_lmms_eval"]
