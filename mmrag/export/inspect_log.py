"""A run as Inspect AI eval logs: one ``.eval`` file per benchmark x scenario x model, built from
``inspect_ai``'s own types (``EvalLog``, ``EvalSample``, ``Score`` ...) and written with its
``write_eval_log``, so ``inspect view`` and ``read_eval_log`` show it as one of their own.

Mapping (inspect's names first):

* task = ``mmrag/BENCHMARK/SCENARIO`` (a scenario is the variant of a dataset an Inspect task
  would be; its knobs are the ``task_args``); model = the run's model label;
* sample ``id`` = ``SAMPLE_ID/SCENARIO``; ``input`` = the dataset item as Inspect keeps it: a user
  turn that starts with the question (then the query images); ``messages`` = the conversation as
  sent (system prompt as the system message, the user turn with its contexts) plus the reply as the
  assistant turn; ``target`` = the gold answers (the option letter for multiple choice);
  ``choices`` = the options;
* ``output`` = the reply with its usage (``error`` set for a failed request);
  ``scores["mmrag"]``: ``value`` = the verdict (``correct`` | ``deflection`` | ``hallucination`` |
  ``unparseable``), ``answer`` = what the judge extracted (else the reply), ``explanation`` = the
  verdict, its reason and its evidence (:class:`mmrag.schema.Evidence`);
* ``results.scores``: one scorer ``mmrag`` with the share of each outcome as its metrics;
  ``stats.model_usage``: the tokens of every reply;
* images travel inside the log (``data:`` URIs), so another machine shows them too;
* an unfinished run (killed, stopped by an error, or still running) is not ``success``:
  ``status`` is ``cancelled`` / ``error`` / ``started``, ``error.message`` says
  ``incomplete: X of Y cells``, and ``dataset.samples`` / ``results.total_samples`` hold the planned
  count while ``completed_samples`` counts the cells done.  A planned scenario with no cell yet gets
  an empty log, so it is not silently absent.
"""

from __future__ import annotations

import base64
import mimetypes
import os
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from mmrag.errors import InputError
from mmrag.schema import OUTCOMES, stable_id

SCORER = "mmrag"
_STOP = {"stop": "stop", "length": "max_tokens", "content_filter": "content_filter"}


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


class _Images:
    """Image files as ``data:`` URIs, each file read once (a query image shared by every scenario
    of a sample is encoded once per export); a missing file keeps its path."""

    def __init__(self) -> None:
        self.uris: dict[str, str] = {}

    def uri(self, path: str) -> str:
        if path not in self.uris:
            try:
                data = Path(path).read_bytes()
            except OSError:
                self.uris[path] = path
            else:
                mime = mimetypes.guess_type(path)[0] or "image/png"
                self.uris[path] = f"data:{mime};base64," + base64.b64encode(data).decode("ascii")
        return self.uris[path]


def _content(parts: Any, m: Any, images: _Images) -> list[Any]:
    return [
        m.ContentText(text=p.text or "") if p.type == "text" else m.ContentImage(image=images.uri(p.image.path))
        for p in parts
    ]


def _messages(rec: Any, m: Any, images: _Images, output: Any) -> list[Any]:
    """The conversation as sent, then the reply as the assistant turn."""
    kinds = {"system": m.ChatMessageSystem, "user": m.ChatMessageUser, "assistant": m.ChatMessageAssistant}
    out = [kinds[msg.role](content=_content(msg.content, m, images)) for msg in rec.prompt.messages]
    if rec.response.error is None:
        out.append(output.message)
    return out


def _input(rec: Any, m: Any, images: _Images) -> list[Any]:
    """The dataset item: the question first (what Inspect's sample list previews), then its images."""
    parts = [m.ContentText(text=rec.sample.question)]
    parts += [m.ContentImage(image=images.uri(i.path)) for i in rec.sample.images]
    return [m.ChatMessageUser(content=parts)]


def explanation(v: Any) -> str:
    """The verdict in words: outcome, the judge's reason and the evidence it names."""
    out = f"{v.outcome}: {v.reason}" if v.reason else v.outcome
    ev = getattr(v, "evidence", None)
    if ev is not None:
        bits = [f"decided by {ev.step}"]
        if ev.span:
            where = f" (chars {ev.start}-{ev.end})" if ev.start is not None and ev.end is not None else ""
            bits.append(f"read «{ev.span}»{where}")
        if ev.reference:
            bits.append(f"reference «{ev.reference}»")
        if ev.rule:
            bits.append(ev.rule)
        out += "\n\nevidence: " + "; ".join(bits)
    return out


def _usage(r: Any, m: Any) -> Any:
    return m.ModelUsage(
        input_tokens=r.usage.prompt_tokens,
        output_tokens=r.usage.completion_tokens,
        total_tokens=r.usage.prompt_tokens + r.usage.completion_tokens,
        total_cost=r.usage.cost_usd or None,
    )


def sample_id(rec: Any, label: str) -> str:
    """``SAMPLE_ID/SCENARIO`` (spaces of the label as ``_``): readable in Inspect's list and unique
    even when logs of several scenarios are read together."""
    return f"{rec.sample.id}/{'_'.join(label.split())}"


def _sample(rec: Any, label: str, log: Any, m: Any, sc: Any, images: _Images) -> Any:
    r, v = rec.response, rec.verdict
    stop = _STOP.get(r.finish_reason or "stop", "unknown")
    output = m.ModelOutput.from_content(rec.model, r.text, stop_reason=stop, error=r.error)  # type: ignore[arg-type]
    output.usage = _usage(r, m)
    scores = None
    error = None
    if r.error is None:
        ev = getattr(v, "evidence", None)
        scores = {
            SCORER: sc.Score(
                value=v.outcome,
                answer=v.extracted if v.extracted is not None else r.text,
                explanation=explanation(v),
                metadata={
                    "outcome": v.outcome,
                    "judge_id": v.judge_id,
                    "reason": v.reason,
                    "extracted": v.extracted,
                    "evidence": ev.model_dump(mode="json") if ev is not None else None,
                },
            )
        }
    else:
        error = log.EvalError(message=f"{r.error}: {r.error_detail}", traceback="", traceback_ansi="")
    meta = {
        "key": rec.key,
        "sample_id": rec.sample.id,
        "question_id": rec.sample.question_id,
        "question": rec.sample.question,
        "benchmark": rec.benchmark,
        "scenario_id": rec.scenario_id,
        "scenario_label": label,
        "scenario": rec.scenario,
        "source": rec.sample.source,
        "contexts": contexts(rec),
        "outcome": v.outcome,
        "model_fingerprint": rec.model_fingerprint,
        "cached": r.cached,
        "latency_s": r.latency_s,
    }
    return log.EvalSample(
        id=sample_id(rec, label),
        epoch=1,
        input=_input(rec, m, images),
        target=target(rec),
        choices=[c.text for c in rec.prompt.choices] or None,
        messages=_messages(rec, m, images, output),
        output=output,
        scores=scores,
        metadata=meta,
        model_usage={rec.model: output.usage},
        error=error,
        total_time=r.latency_s,
    )


def _results(samples: list[Any], planned: int, log: Any) -> Any:
    """One scorer, ``mmrag``, whose metrics are the outcome shares (Inspect's ``accuracy`` is the
    ``correct`` share); failed requests are unscored."""
    scored = [s for s in samples if s.scores]
    metrics = {
        o: log.EvalMetric(
            name=o, value=sum(s.scores[SCORER].value == o for s in scored) / len(scored) if scored else 0.0
        )
        for o in OUTCOMES
    }
    score = log.EvalScore(
        name=SCORER,
        scorer=SCORER,
        scored_samples=len(scored),
        unscored_samples=len(samples) - len(scored),
        metrics=metrics,
    )
    return log.EvalResults(total_samples=planned, completed_samples=len(scored), scores=[score])


def _model_usage(samples: list[Any], m: Any) -> dict[str, Any]:
    total: dict[str, Any] = {}
    for s in samples:
        for name, u in (s.model_usage or {}).items():
            total[name] = total[name] + u if name in total else m.ModelUsage(**u.model_dump())
    return total


def _status(state: Any) -> str:
    """Inspect's status for the run: ``success`` only when the plan was worked through."""
    if state.complete:
        return "success"
    if state.live:
        return "started"
    return "error" if state.status == "failed" else "cancelled"


def _groups(records: list[Any], state: Any) -> dict[tuple[str, str, str], list[Any]]:
    groups: dict[tuple[str, str, str], list[Any]] = defaultdict(list)
    for rec in records:
        groups[(rec.benchmark, rec.scenario_id, rec.model)].append(rec)
    if not state.complete:
        for g in state.planned_by:
            groups.setdefault(g, [])  # a scenario not started yet: an empty log says so
    return groups


def write_inspect(records: list[Any], manifest: dict[str, Any], out_dir: Path) -> list[Path]:
    from mmrag.export import slug
    from mmrag.runs.state import records_state
    from mmrag.scenarios.kinds import scenario_label

    log, m, sc = _inspect()
    state = records_state(manifest.get("run_dir", ""), records, manifest=manifest)
    status = _status(state)
    # an old or hand-made run directory may record no start time; Inspect needs one
    created = manifest.get("created_at") or time.strftime("%Y-%m-%dT%H:%M:%S%z")
    run_id = stable_id(manifest.get("run_dir", ""), created, length=22)  # one id for the logs of one run
    images = _Images()
    written = []
    for (bench, sid, model), recs in sorted(_groups(records, state).items()):
        spec = recs[0].scenario if recs else {}
        label = scenario_label(spec) if recs else state.labels.get(sid, sid)
        samples = [_sample(r, label, log, m, sc, images) for r in recs]
        planned = max(state.planned_by.get((bench, sid, model), 0), len(recs))
        eval_spec = log.EvalSpec(
            created=created,
            task=f"mmrag/{bench}/{label}",
            task_display_name=f"{bench} · {label}",
            task_id=stable_id(run_id, bench, sid, length=22),
            task_version=0,
            task_args={k: v for k, v in spec.items() if v is not None},
            run_id=run_id,
            model=model,
            dataset=log.EvalDataset(name=bench, samples=planned, sample_ids=[s.id for s in samples]),
            config=log.EvalConfig(),
            packages={"mmrag": str(manifest.get("mmrag_version", ""))},
            metadata={
                "run": Path(manifest.get("run_dir", "") or "").name or None,
                "scenario_id": sid,
                "model_fingerprint": recs[0].model_fingerprint if recs else manifest.get("models", {}).get(model),
                "judge_id": manifest.get("judge_id", ""),
                "run_status": state.status,
                "exported_by": "mmrag export --format inspect",
            },
        )
        notice = state.notice()
        ev = log.EvalLog(
            eval=eval_spec,
            status=status,  # type: ignore[arg-type]
            plan=log.EvalPlan(),
            results=_results(samples, planned, log),
            stats=log.EvalStats(
                started_at=created,
                completed_at=manifest.get("updated_at") or created if state.complete else "",
                model_usage=_model_usage(samples, m),
            ),
            error=log.EvalError(
                message=f"{notice}; this task: {len(recs)} of {planned} cells", traceback="", traceback_ansi=""
            )
            if notice
            else None,
            samples=samples,
        )
        path = out_dir / f"{slug(bench)}_{slug(sid)}_{slug(model)}.eval"
        tmp = path.with_name(f".{path.name}.tmp.eval")
        log.write_eval_log(ev, str(tmp), format="eval")
        os.replace(tmp, path)  # a reader never sees half a log
        written.append(path)
    return written
