"""VLM-DeflectionBench's dynamic curation: keep only samples that truly need retrieval.

Stage I (parametric filter) -> Stage II (negative mining) -> Stage III (oracle filter).  Each stage
writes its decisions (kept or the reason for removal) to ``stageN_*.jsonl`` atomically when it
completes; a re-run loads finished stages instead of recomputing them, and every model call goes
through the shared response cache, so an interrupted curation resumes without paying twice.
The survivors are written in the DeflectionBench format (``curated.jsonl`` + ``curated.kb.jsonl``)
that ``mmrag run --benchmark deflection --source`` reads directly; their ``negative_doc_ids`` are
the Stage III survivors, which runs then show (``negatives: curated``).

Stage II takes a sample's own negatives when it has them (``negatives: curated``, the default; the
miner fills up to ``k_min``) or mines them from the indices (``negatives: regenerate``: how a user
tests their own retriever); either way Stage III filters them, so the guarantee "no shown negative
alone lets a gating model answer" holds for regenerated negatives too.  The miner is built by the
same code as ``mmrag run`` (``retrieval:`` section: the same retrievers, factory and cache), and
``manifest.json`` records the retrievers and index hashes used.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmrag.benchmarks import load_benchmark
from mmrag.curation.config import CurateConfig
from mmrag.curation.convert import document_to_kb, sample_to_record
from mmrag.errors import DependencyError
from mmrag.judging import judge_many
from mmrag.judging.llm import raise_judge_failures
from mmrag.redact import redact
from mmrag.retrieval.base import MiningResult
from mmrag.runs.config import RunConfig
from mmrag.runs.wiring import make_judge, make_model, model_settings
from mmrag.scenarios import compose
from mmrag.scenarios.kinds import ADVERSARIAL, ORACLE, PARAMETRIC
from mmrag.scenarios.spec import ScenarioSpec
from mmrag.schema import Document, Prompt, Sample, Verdict
from mmrag.util import atomic_write_json, atomic_write_text, iter_jsonl, write_jsonl_atomic


class FixedNegatives:
    """A NegativeMiner that returns negatives decided beforehand (Stage III tests them one by one)."""

    def __init__(self, store, docs: list[Document]) -> None:
        self.store = store
        self._docs = docs

    def negatives(self, sample: Sample, n: int, modality: str, seed: int = 0) -> MiningResult:
        docs = self._docs[:n]
        return MiningResult(documents=docs, requested=n, shortfall=max(0, n - len(docs)))


@dataclass
class Gate:
    """The gating models and the judge, with one call: verdicts of every model on every prompt."""

    models: list[Any]
    judge: Any
    settings: list[Any]  # one per model, in order: each is asked with the settings its fingerprint names
    batch_size: int

    def ask(self, items: list[tuple[Sample, Prompt]]) -> list[dict[str, Verdict]]:
        """Every gating model's verdict on every item.  A failed request or a failed judge call is
        no verdict: it raises :class:`~mmrag.errors.DependencyError` (the stage is not written,
        and running ``mmrag curate`` again redoes it; the response cache keeps what succeeded)."""
        out: list[dict[str, Verdict]] = [dict() for _ in items]
        for vlm, settings in zip(self.models, self.settings, strict=True):
            for start in range(0, len(items), self.batch_size):
                chunk = items[start : start + self.batch_size]
                responses = vlm.generate([p for _, p in chunk], settings)
                if len(responses) != len(chunk):
                    raise DependencyError(
                        f"gating model {vlm.fingerprint} returned {len(responses)} replies for {len(chunk)} prompts"
                    )
                failed = [r for r in responses if r.error]
                if failed:
                    raise DependencyError(
                        f"gating model {vlm.fingerprint} failed on {len(failed)} of {len(chunk)} prompts "
                        f"({failed[0].error}: {failed[0].error_detail[:160]}); no curation decision was made "
                        "from it; run `mmrag curate` again once it answers"
                    )
                verdicts = judge_many(self.judge, [(s, p, r) for (s, p), r in zip(chunk, responses)])
                raise_judge_failures(verdicts, "gating replies")
                for i, v in enumerate(verdicts):
                    out[start + i][vlm.fingerprint] = v
        return out


def _stage(path: Path, compute: Callable[[], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Load a finished stage, or compute it and write it atomically."""
    if path.exists():
        return [obj for _, obj in iter_jsonl(path)]
    rows = compute()
    write_jsonl_atomic(path, rows)
    return rows


def _check_same_curation(out: Path, config: CurateConfig) -> None:
    """Refuse an output folder that holds a different curation: its finished stage files would be
    reused as if they answered this config (``run`` refuses the same way)."""
    from mmrag.errors import InputError
    from mmrag.mapping_files import read_json_mapping

    path = out / "config.json"
    if not path.exists():
        if out.exists() and any(out.glob("stage*_*.jsonl")):
            raise InputError("this folder holds curation stage files but no config.json; use a new --out", path=out)
        return
    old = read_json_mapping(path, "a curation config")
    new = json.loads(json.dumps(redact(config.model_dump(mode="json")), default=str))  # as written
    old.pop("out", None)
    new.pop("out", None)
    if old != new:
        changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
        raise InputError(
            f"this folder holds a different curation (differs in: {', '.join(changed)}); use a new "
            "--out directory, or delete it to start again",
            path=path,
        )


def _spec(kind: str, seed: int, n: int = 0) -> ScenarioSpec:
    # "regenerate": Stage III shows exactly the negative under test (FixedNegatives), never the
    # sample's curated list
    return ScenarioSpec(kind=kind, n_distractors=n, negative_modality="any", negatives="regenerate", seed=seed)


def curate(config: CurateConfig, out: str | Path, progress: Any = None) -> dict[str, Any]:
    out = Path(out)
    _check_same_curation(out, config)
    out.mkdir(parents=True, exist_ok=True)
    # through the one redaction helper, as a run's manifest: URL userinfo, header values, env secrets
    atomic_write_json(out / "config.json", redact(config.model_dump(mode="json")))
    bench = load_benchmark(config.benchmark.name, config.benchmark.source, **config.benchmark.options)
    samples = list(bench.samples())[: config.limit] if config.limit else list(bench.samples())
    by_id = {s.id: s for s in samples}
    docs = list(bench.documents())
    run_cfg = RunConfig(
        benchmarks=[config.benchmark],
        models=config.gating_models,
        judge=config.judge,
        cache=config.cache,
        retrieval=config.retrieval,
    )
    gate = Gate(
        [make_model(m, run_cfg) for m in config.gating_models],
        make_judge(bench.kind, run_cfg),
        [model_settings(m, config.settings) for m in config.gating_models],
        config.batch_size,
    )
    from mmrag.runs.plan import build_miner, index_hashes

    miner = build_miner(docs, run_cfg)  # the configured retrievers, exactly as `mmrag run` builds them
    store = miner.store
    atomic_write_json(
        out / "manifest.json",
        redact(
            {
                "retrieval": config.retrieval.model_dump(mode="json"),
                "index_hashes": index_hashes(miner),
                "retrievers": {k: getattr(r, "fingerprint", type(r).__name__) for k, r in miner.retrievers.items()},
                "negatives": config.negatives,
                "gating_models": [m.model_dump(mode="json") for m in config.gating_models],
            }
        ),
    )

    # Stage I: parametric filtering
    def stage1() -> list[dict[str, Any]]:
        spec = _spec(PARAMETRIC.id, config.seed)
        verdicts = gate.ask([(s, compose(s, spec, miner=None, store=store)) for s in samples])
        rows = []
        for s, v in zip(samples, verdicts):
            solved = sorted(m for m, vd in v.items() if vd.outcome == "correct")
            rows.append(
                {
                    "sample_id": s.id,
                    "source": s.source,
                    "kept": not solved,
                    "reason": f"answered without context by {', '.join(solved)}" if solved else "",
                    "outcomes": {m: vd.outcome for m, vd in v.items()},
                }
            )
        return rows

    s1 = _stage(out / "stage1_parametric.jsonl", stage1)
    survivors1 = [by_id[r["sample_id"]] for r in s1 if r["kept"]]

    # Stage II: negative mining from each modality's index
    def stage2() -> list[dict[str, Any]]:
        rows = []
        for s in survivors1:
            found: dict[str, list[str]] = {}
            shortfall = 0
            curated = [d for d in s.metadata.get("negative_doc_ids") or [] if d in store]
            if config.negatives == "curated" and curated:
                found["curated"] = curated
                if len(curated) < config.k_min:  # the miner fills the shortfall, counted per modality
                    for mod in config.modalities:
                        res = miner.negatives(s, config.k_min - len(curated), mod, seed=config.seed)
                        found[mod] = [d.id for d in res.documents if d.id not in curated]
            for mod in config.modalities if "curated" not in found else []:
                res = miner.negatives(s, config.negatives_per_modality, mod, seed=config.seed)
                found[mod] = [d.id for d in res.documents]
                shortfall += res.shortfall
            total = len({d for ids in found.values() for d in ids})
            ok = total >= config.k_min
            rows.append(
                {
                    "sample_id": s.id,
                    "source": s.source,
                    "kept": ok,
                    "negatives": found,
                    "shortfall": shortfall,
                    "reason": "" if ok else f"only {total} negatives found (k_min={config.k_min})",
                }
            )
        return rows

    s2 = _stage(out / "stage2_mining.jsonl", stage2)
    mined = {r["sample_id"]: r for r in s2 if r["kept"]}
    survivors2 = [by_id[sid] for sid in mined]

    # Stage III: oracle filtering of samples, then of each negative
    def stage3() -> list[dict[str, Any]]:
        oracle = gate.ask([(s, compose(s, _spec(ORACLE.id, config.seed), miner=None, store=store)) for s in survivors2])
        checks: list[tuple[Sample, Prompt]] = []
        owners: list[tuple[str, str]] = []
        for s in survivors2:
            neg_ids = list(dict.fromkeys(d for ids in mined[s.id]["negatives"].values() for d in ids))
            for did in neg_ids:
                fixed = FixedNegatives(store, [store.get(did)])
                checks.append((s, compose(s, _spec(ADVERSARIAL.id, config.seed, 1), miner=fixed, store=store)))
                owners.append((s.id, did))
        leak_verdicts = gate.ask(checks)
        leaky: dict[str, list[dict[str, str]]] = defaultdict(list)
        clean: dict[str, list[str]] = defaultdict(list)
        for (sid, did), v in zip(owners, leak_verdicts):
            solvers = sorted(m for m, vd in v.items() if vd.outcome == "correct")
            (
                leaky[sid].append({"doc_id": did, "answered_by": ", ".join(solvers)})
                if solvers
                else clean[sid].append(did)
            )
        rows = []
        for s, v in zip(survivors2, oracle):
            if all(vd.outcome != "correct" for vd in v.values()):
                kept, reason = False, "every gating model fails with gold evidence"
            elif len(clean[s.id]) < config.k_min:
                kept, reason = (
                    False,
                    f"only {len(clean[s.id])} negatives survive the oracle check (k_min={config.k_min})",
                )
            else:
                kept, reason = True, ""
            rows.append(
                {
                    "sample_id": s.id,
                    "source": s.source,
                    "kept": kept,
                    "reason": reason,
                    "oracle_outcomes": {m: vd.outcome for m, vd in v.items()},
                    "negatives": clean[s.id],
                    "dropped_negatives": leaky[s.id],
                }
            )
        return rows

    s3 = _stage(out / "stage3_oracle.jsonl", stage3)
    final = [r for r in s3 if r["kept"]]
    records, needed = [], set()
    for r in final:
        s = by_id[r["sample_id"]]
        records.append(sample_to_record(s, store, r["negatives"]).model_dump(mode="json", exclude_none=True))
        needed.update(s.gold_doc_ids)
        needed.update(r["negatives"])
    write_jsonl_atomic(
        out / "curated.kb.jsonl",
        [document_to_kb(store.get(d)).model_dump(mode="json", exclude_none=True) for d in sorted(needed)],
    )
    write_jsonl_atomic(out / "curated.jsonl", records)
    report = _report(samples, s1, s2, s3)
    atomic_write_json(out / "report.json", report)
    atomic_write_text(out / "report.md", _report_md(report))
    return report


def _report(samples: list[Sample], *stages: list[dict[str, Any]]) -> dict[str, Any]:
    names = ["input", "stage1_parametric", "stage2_mining", "stage3_oracle"]
    per_source: dict[str, dict[str, float]] = defaultdict(dict)
    totals = {"input": len(samples)}
    for s in samples:
        per_source[s.source or "?"]["input"] = per_source[s.source or "?"].get("input", 0) + 1
    reasons: dict[str, Counter] = {}
    for name, rows in zip(names[1:], stages):
        kept = [r for r in rows if r["kept"]]
        totals[name] = len(kept)
        for r in kept:
            src = r.get("source") or "?"
            per_source[src][name] = per_source[src].get(name, 0) + 1
        # group reasons by their wording, not their numbers ("only 2 negatives ..." ~ "only 3 ...")
        reasons[name] = Counter(re.sub(r"\d+", "N", r["reason"].split(" by ")[0]) for r in rows if not r["kept"])
    for row in per_source.values():
        row["retained_pct"] = round(100.0 * row.get("stage3_oracle", 0) / max(row.get("input", 0), 1), 2)
    return {
        "totals": totals,
        "per_source": dict(per_source),
        "removal_reasons": {k: dict(v) for k, v in reasons.items()},
    }


def _report_md(rep: dict[str, Any]) -> str:
    lines = ["# Curation report", "", "| stage | samples |", "| --- | ---: |"]
    lines += [f"| {k} | {v} |" for k, v in rep["totals"].items()]
    lines += [
        "",
        "| source | input | after I | after II | after III | retained % |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for src, r in sorted(rep["per_source"].items()):
        lines.append(
            f"| {src} | {r.get('input', 0)} | {r.get('stage1_parametric', 0)} | {r.get('stage2_mining', 0)} | "
            f"{r.get('stage3_oracle', 0)} | {r['retained_pct']} |"
        )
    lines += ["", "Removal reasons:"]
    for stage, rs in rep["removal_reasons"].items():
        for reason, n in sorted(rs.items()):
            lines.append(f"- {stage}: {reason} — {n}")
    return "\n".join(lines) + "\n"
