"""A synthetic 10^6-record run through the run store's real write path: size, load, resume, memory.

The records look like a sweep's: ``--samples`` samples (question, image ref, answers) x
``--specs`` scenario specs (kinds, distractor counts 0-4, modalities, strictness) x ``--models``
models; each (sample, spec) prompt carries its gold and negative contexts drawn from a pool of
knowledge-base passages, so prompts are as large as real ones (~1-2 KB of JSON).  Every record
goes through :meth:`RunStore.add` and a flush every ``--flush-every`` records (one committed
segment each), then the end-of-run compaction — exactly what the engine does.

Figures: bytes per record on disk (records + objects), ``mmrag.runs.load`` wall time and rows
(fresh process), opening the directory to resume (``RunStore(dir)``: lock, torn-segment sweep, the
finished-key set; fresh process), the lazy form (``mmrag.runs.dataset`` filtered count), and the
writer's resident memory at 10 %, 50 % and 100 % of the records (flat = independent of run size).
Usage: ``.venv/bin/python perf/run_store_bench.py [--samples 5000 --specs 100 --models 2]``
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WORDS = (
    "river stone copper violet harbor lantern meadow falcon orchard granite ember willow quartz "
    "saffron tundra beacon cobalt thistle marble cedar"
).split()


def rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def write(run_dir: Path, n_samples: int, n_specs: int, n_models: int, flush_every: int) -> dict:
    from mmrag.runs.records import RunRecord, record_key
    from mmrag.runs.store import RunStore
    from mmrag.scenarios.spec import ScenarioSpec
    from mmrag.schema import ContentPart, Context, Document, ImageRef, Message, Prompt, Response, Sample, Usage, Verdict

    rng = random.Random(0)
    docs = [Document(id=f"doc{i}", modality="text", text=f"Entity {i} " + _text(rng, 25)) for i in range(2000)]
    kinds = [("parametric", 0), ("oracle", 0)] + [(k, n) for k in ("realistic", "adversarial") for n in range(1, 5)]
    specs = []
    for i in range(n_specs):
        kind, n = kinds[i % len(kinds)]
        specs.append(
            ScenarioSpec(
                kind=kind,
                n_distractors=n,
                strictness=("none", "soft", "moderate", "severe")[i // 10 % 4],
                negative_modality="text",
                seed=i // 40,
            )
        )
    samples = [
        Sample(
            id=f"s{i:06d}",
            benchmark="synthetic",
            question_id=f"q{i // 2}",
            question=f"What is {_text(rng, 6)}?",
            images=[ImageRef(path=f"/data/img/{i}.png", sha256=f"{i:064x}")],
            answers=[rng.choice(WORDS)],
            metadata={"type": "open"},
        )
        for i in range(n_samples)
    ]
    models = [f"model-{m}" for m in range(n_models)]
    total = n_samples * n_specs * n_models
    marks = {total // 10: "10%", total // 2: "50%", total: "100%"}
    mem: dict[str, float] = {}
    t0 = time.perf_counter()
    n = 0
    with RunStore(run_dir) as store:
        for spec in specs:
            sdump, sid = spec.model_dump(mode="json"), spec.id
            for sample in samples:
                ctx = []
                if spec.uses_gold:
                    ctx.append(Context(document=docs[int(sample.id[1:]) % 2000], role="gold", score=0.9))
                for _k in range(spec.n_distractors if spec.uses_negatives else 0):
                    ctx.append(Context(document=docs[rng.randrange(2000)], role="negative", score=0.5))
                parts = [ContentPart(type="image", image=sample.images[0])]
                parts += [ContentPart(type="text", text=f"Context: {c.document.text}") for c in ctx]
                parts.append(ContentPart(type="text", text=f"Question: {sample.question}"))
                prompt = Prompt(
                    sample_id=sample.id,
                    scenario=sdump,
                    scenario_id=sid,
                    template_id=spec.kind,
                    template_version="1",
                    contexts=ctx,
                    messages=[
                        Message(role="system", content=[ContentPart(type="text", text="Answer briefly.")]),
                        Message(role="user", content=parts),
                    ],
                )
                for m in models:
                    outcome = rng.choice(("correct", "deflection", "hallucination", "unparseable"))
                    text = rng.choice(WORDS) if outcome != "deflection" else "Sorry, I cannot answer."
                    rec = RunRecord.model_construct(
                        key=record_key(sample.id, sid, m),
                        benchmark="synthetic",
                        benchmark_kind="deflection",
                        scenario_id=sid,
                        scenario=sdump,
                        model=m,
                        model_fingerprint=m,
                        sample=sample,
                        prompt=prompt,
                        response=Response.model_construct(
                            prompt_id=prompt.id,
                            text=text,
                            model=m,
                            usage=Usage(prompt_tokens=rng.randrange(200, 900), completion_tokens=rng.randrange(1, 20)),
                            latency_s=round(rng.lognormvariate(-1.2, 1.0), 4),
                            error=None,
                            error_detail="",
                            finish_reason="stop",
                            cached=False,
                        ),
                        verdict=Verdict.model_construct(
                            outcome=outcome, extracted=text, judge_id="rule-v1", reason="", score=None, details={}
                        ),
                        mining={},
                        timings={},
                    )
                    store.add(rec, ord=n)
                    n += 1
                    if store.pending >= flush_every:
                        store.flush()
                    if n in marks:
                        mem[marks[n]] = rss_mib()
        store.flush()
        t_write = time.perf_counter() - t0
        t1 = time.perf_counter()
        segments = len(list((run_dir / "records").glob("*.parquet")))
        store.compact()
        t_compact = time.perf_counter() - t1
    size = sum(p.stat().st_size for t in ("records", "objects") for p in (run_dir / t).glob("*.parquet"))
    return {
        "records": n,
        "write_s": t_write,
        "compact_s": t_compact,
        "segments_before_compaction": segments,
        "bytes": size,
        "rss_mib": mem,
    }


def _child(code: str, run_dir: Path) -> str:
    res = subprocess.run(
        [sys.executable, "-c", code, str(run_dir)],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    if res.returncode != 0:
        raise SystemExit(res.stderr[-2000:])
    return res.stdout.strip()


LOAD = (
    "import sys, time; import mmrag.runs as R, mmrag.runs.columnar, mmrag.runs.frame; t = time.perf_counter(); "
    "df = R.load(sys.argv[1]); "
    "print(f'{time.perf_counter() - t:.3f} {len(df)} {df.memory_usage(deep=True).sum() / 2**20:.0f}')"
)
OPEN = (
    "import sys, time; from mmrag.runs.store import RunStore; t = time.perf_counter(); s = RunStore(sys.argv[1]); "
    "dt = time.perf_counter() - t; print(f'{dt:.3f} {len(s.done)}'); s.close()"
)
LAZY = (
    "import sys, time; import pyarrow.compute as pc; import mmrag.runs as R, mmrag.runs.columnar, pyarrow.dataset; "
    "t = time.perf_counter(); "
    "n = R.dataset(sys.argv[1]).count_rows(filter=pc.field('outcome') == 'correct'); "
    "print(f'{time.perf_counter() - t:.3f} {n}')"
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=5000)
    ap.add_argument("--specs", type=int, default=100)
    ap.add_argument("--models", type=int, default=2)
    ap.add_argument("--flush-every", type=int, default=1000)
    ap.add_argument("--keep", default=None, help="write the run here and keep it")
    a = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as d:
        run_dir = Path(a.keep) if a.keep else Path(d) / "run"
        w = write(run_dir, a.samples, a.specs, a.models, a.flush_every)
        n = w["records"]
        print(
            f"write: {n} records in {w['write_s']:.1f} s ({n / w['write_s']:.0f} records/s through RunStore.add), "
            f"{w['segments_before_compaction']} segments compacted in {w['compact_s']:.1f} s"
        )
        print("writer RSS at 10 % / 50 % / 100 %: " + " / ".join(f"{v:.0f} MiB" for v in w["rss_mib"].values()))
        print(f"on disk: {w['bytes'] / 2**20:.1f} MiB = {w['bytes'] / n:.0f} bytes/record (target <= 400)")
        t, rows, mib = _child(LOAD, run_dir).split()
        print(f"mmrag.runs.load: {rows} rows in {float(t):.2f} s (target <= 5 s), frame {mib} MiB")
        t, done = _child(OPEN, run_dir).split()
        print(f"open to resume (RunStore: lock + finished keys): {float(t):.2f} s for {done} keys (target <= 2 s)")
        t, k = _child(LAZY, run_dir).split()
        print(f"lazy: dataset(...).count_rows(outcome == 'correct') = {k} in {float(t):.2f} s")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
