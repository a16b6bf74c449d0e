"""A run as Inspect AI eval logs: one ``.eval`` file per benchmark x model, built from
``inspect_ai``'s own types (``EvalLog``, ``EvalSample``, ``Score`` ...) and written with its
``write_eval_log``, so ``inspect view`` and ``read_eval_log`` read it like one of their own.

Mapping (inspect's names first):

* task = ``mmrag/BENCHMARK``; model = the run's model label; ``eval.metadata`` holds the run
  directory name, the model fingerprint and the judge id;
* sample ``id`` = the record key (one per sample x scenario x model cell); ``input`` = the prompt
  as chat messages (images by path); ``target`` = the gold answers (the option letter for
  multiple choice); ``choices`` = the options;
* ``output`` = the reply (``error`` set for a failed request); ``scores["mmrag"]`` = a dict with
  one 0/1 value per outcome (``correct``, ``deflection``, ``hallucination``, ``unparseable``),
  ``answer`` = what the judge extracted, ``explanation`` = its reason;
* ``metadata`` = the sample id, question id, scenario (id and knobs), source, and every context
  shown (doc id, role, modality, text, image path);
* ``results.scores``: the mean of each outcome over the scored samples (failed cells excluded).
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from typing import Any

from mmrag.errors import InputError
from mmrag.schema import OUTCOMES, stable_id

SCORER = "mmrag"


def _inspect():
    try:
        import inspect_ai.log as log
        import inspect_ai.model as model
        import inspect_ai.scorer as scorer
    except ImportError:
        raise InputError(
            "the inspect export needs inspect_ai: pip install 'mmrag[inspect]' (or pip install inspect-ai)",
            field="--format",
        ) from None
    return log, model, scorer


def contexts(rec: Any) -> list[dict[str, Any]]:
    """The contexts a prompt showed, as plain data (shared by every export format)."""
    out = []
    for c in rec.prompt.contexts:
        d = c.document
        out.append(
            {
                "doc_id": d.id,
                "role": c.role,
                "modality": d.modality,
                "title": d.title,
                "text": d.text,
                "image": d.image.path if d.image is not None else None,
                "score": c.score,
            }
        )
    return out


def target(rec: Any) -> str | list[str]:
    if rec.prompt.choices and rec.prompt.label:
        return rec.prompt.label
    return list(rec.sample.answers)


def _messages(rec: Any, m: Any) -> list[Any]:
    kinds = {"system": m.ChatMessageSystem, "user": m.ChatMessageUser, "assistant": m.ChatMessageAssistant}
    out = []
    for msg in rec.prompt.messages:
        parts = [
            m.ContentText(text=p.text or "") if p.type == "text" else m.ContentImage(image=p.image.path)
            for p in msg.content
        ]
        out.append(kinds[msg.role](content=parts))
    return out


def _sample(rec: Any, log: Any, m: Any, sc: Any) -> Any:
    r, v = rec.response, rec.verdict
    stop = {"stop": "stop", "length": "max_tokens", "content_filter": "content_filter"}.get(
        r.finish_reason or "stop", "unknown"
    )
    output = m.ModelOutput.from_content(rec.model, r.text, stop_reason=stop, error=r.error)  # type: ignore[arg-type]
    output.usage = m.ModelUsage(
        input_tokens=r.usage.prompt_tokens,
        output_tokens=r.usage.completion_tokens,
        total_tokens=r.usage.prompt_tokens + r.usage.completion_tokens,
        total_cost=r.usage.cost_usd or None,
    )
    scores = None
    error = None
    if r.error is None:
        scores = {
            SCORER: sc.Score(
                value={o: float(v.outcome == o) for o in OUTCOMES},
                answer=v.extracted,
                explanation=v.reason,
                metadata={"outcome": v.outcome, "judge_id": v.judge_id},
            )
        }
    else:
        error = log.EvalError(message=f"{r.error}: {r.error_detail}", traceback="", traceback_ansi="")
    meta = {
        "sample_id": rec.sample.id,
        "question_id": rec.sample.question_id,
        "question": rec.sample.question,
        "benchmark": rec.benchmark,
        "scenario_id": rec.scenario_id,
        "scenario": rec.scenario,
        "source": rec.sample.source,
        "contexts": contexts(rec),
        "outcome": v.outcome,
        "model_fingerprint": rec.model_fingerprint,
        "cached": r.cached,
        "latency_s": r.latency_s,
    }
    return log.EvalSample(
        id=rec.key,
        epoch=1,
        input=_messages(rec, m),
        target=target(rec),
        choices=[c.text for c in rec.prompt.choices] or None,
        messages=_messages(rec, m),
        output=output,
        scores=scores,
        metadata=meta,
        error=error,
        total_time=r.latency_s,
    )


def _results(samples: list[Any], log: Any) -> Any:
    scored = [s for s in samples if s.scores]
    metrics = []
    for o in OUTCOMES:
        mean = sum(s.scores[SCORER].value[o] for s in scored) / len(scored) if scored else 0.0
        metrics.append(
            log.EvalScore(
                name=o,
                scorer=SCORER,
                scored_samples=len(scored),
                unscored_samples=len(samples) - len(scored),
                metrics={"mean": log.EvalMetric(name="mean", value=mean)},
            )
        )
    return log.EvalResults(total_samples=len(samples), completed_samples=len(scored), scores=metrics)


def write_inspect(records: list[Any], manifest: dict[str, Any], out_dir: Path) -> list[Path]:
    from mmrag.export import slug

    log, m, sc = _inspect()
    groups: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for rec in records:
        groups[(rec.benchmark, rec.model)].append(rec)
    created = manifest.get("created_at") or ""
    run_id = stable_id(manifest.get("run_dir", ""), created, length=22)  # one id for the logs of one run
    written = []
    for (bench, model), recs in sorted(groups.items()):
        samples = [_sample(r, log, m, sc) for r in recs]
        spec = log.EvalSpec(
            created=created,
            task=f"mmrag/{bench}",
            task_id=stable_id(run_id, bench, length=22),
            task_version=0,
            run_id=run_id,
            model=model,
            dataset=log.EvalDataset(name=bench, samples=len(recs), sample_ids=[r.key for r in recs]),
            config=log.EvalConfig(),
            packages={"mmrag": str(manifest.get("mmrag_version", ""))},
            metadata={
                "run": Path(manifest.get("run_dir", "") or "").name or None,
                "model_fingerprint": recs[0].model_fingerprint,
                "judge_id": manifest.get("judge_id", ""),
                "exported_by": "mmrag export --format inspect",
            },
        )
        ev = log.EvalLog(
            eval=spec,
            status="success",
            plan=log.EvalPlan(),
            results=_results(samples, log),
            stats=log.EvalStats(started_at=created, completed_at=manifest.get("updated_at") or created),
            samples=samples,
        )
        path = out_dir / f"{slug(bench)}_{slug(model)}.eval"
        tmp = path.with_name(f".{path.name}.tmp.eval")
        log.write_eval_log(ev, str(tmp), format="eval")
        os.replace(tmp, path)  # a reader never sees half a log
        written.append(path)
    return written
