"""The cost of the checked JSONL reader, against the bare stdlib loop, in one script.

``mmrag.util.iter_jsonl`` reads bytes, decodes each line as strict UTF-8, parses it, and walks the
object for NaN/Infinity and lone surrogates.  The peer is the loop it replaced:
``for line in open(path, encoding="utf-8"): json.loads(line)`` with an object check.  Records are
DeflectionBench-shaped (question, answers, gold contexts, numeric ranges, metadata), ~600 bytes
each.  Best of N repeats; prints both rates and the ratio.  Usage:
``.venv/bin/python perf/jsonl_reader_bench.py [--quick] [--records 200000] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mmrag.util import iter_jsonl  # noqa: E402


def record(i: int) -> dict:
    return {
        "sample_id": f"s{i}",
        "question_id": f"q{i // 2}",
        "question": f"What is the capital of entity {i}?",
        "query_images": [f"images/{i}.png"],
        "answer": f"City {i}",
        "aliases": [f"C{i}", f"Town {i}"],
        "numeric_ranges": [[i * 0.5, i * 0.5 + 1.25]],
        "source": "demo",
        "entity_id": f"e{i}",
        "gold_contexts": [{"doc_id": f"d{i}", "modality": "text"}, {"doc_id": f"i{i}", "modality": "image"}],
        "negative_doc_ids": [f"d{i + k}" for k in range(1, 6)],
        "metadata": {"question_type": "capital", "difficulty": i % 5, "note": "café ✓ " * 8},
    }


def bare(path: Path) -> int:
    n = 0
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                obj = json.loads(line)
                if not isinstance(obj, dict):
                    raise ValueError("not an object")
                n += 1
    return n


def checked(path: Path) -> int:
    return sum(1 for _ in iter_jsonl(path))


def best(fn, path: Path, repeats: int) -> tuple[float, int]:
    times, n = [], 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        n = fn(path)
        times.append(time.perf_counter() - t0)
    return min(times), n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="20,000 records, 2 repeats")
    args = ap.parse_args()
    n, repeats = (20_000, 2) if args.quick else (args.records, args.repeats)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "records.jsonl"
        with open(path, "w", encoding="utf-8") as fh:
            for i in range(n):
                fh.write(json.dumps(record(i), ensure_ascii=False) + "\n")
        size = path.stat().st_size
        t_bare, n1 = best(bare, path, repeats)
        t_checked, n2 = best(checked, path, repeats)
    assert n1 == n2 == n
    print(f"{n:,} records, {size / 1e6:.1f} MB, best of {repeats}")
    print(f"{'reader':<36} {'time':>9} {'records/s':>12}")
    print(f"{'stdlib loop (json.loads per line)':<36} {t_bare:>8.3f}s {n / t_bare:>12,.0f}")
    print(f"{'mmrag iter_jsonl (checked)':<36} {t_checked:>8.3f}s {n / t_checked:>12,.0f}")
    print(f"ratio checked / bare: {t_checked / t_bare:.2f}x")


if __name__ == "__main__":
    main()
