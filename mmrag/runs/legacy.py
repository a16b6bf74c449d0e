"""Old run directories: one ``samples.jsonl`` line per record, each carrying its whole sample and prompt.

They are still read everywhere (:func:`mmrag.runs.load`, the browser, reports, ``mmrag score``),
but a run no longer appends to them.  To resume or extend one, convert it to the columnar store::

    python -m mmrag.runs.legacy RUN_DIR

which writes ``RUN_DIR/records/`` and ``RUN_DIR/objects/`` from the JSONL (the samples file is
renamed ``samples.jsonl.converted``, kept for reference, and no longer read).
"""

from __future__ import annotations

import sys
from pathlib import Path

from mmrag.runs.records import RunRecord


def rewrite_jsonl(run_dir: Path, records: list[RunRecord]) -> None:
    """Replace an old run's samples file atomically (re-judging an unconverted run)."""
    from mmrag.util import atomic_write_text

    atomic_write_text(Path(run_dir) / "samples.jsonl", "".join(r.model_dump_json() + "\n" for r in records))


def convert(run_dir: str | Path) -> int:
    """Write an old run's records into the columnar store; returns how many records."""
    from mmrag.runs.frame import read_jsonl_records
    from mmrag.runs.store import RunStore, is_columnar, write_format_marker

    run_dir = Path(run_dir)
    if is_columnar(run_dir):
        return 0
    records = read_jsonl_records(run_dir)
    with RunStore(run_dir) as store:
        for i, rec in enumerate(records):
            store.add(rec, ord=i)
        store.flush()
        store.compact()
    write_format_marker(run_dir)
    (run_dir / "samples.jsonl").rename(run_dir / "samples.jsonl.converted")
    return len(records)


if __name__ == "__main__":  # python -m mmrag.runs.legacy RUN_DIR [RUN_DIR ...]
    for d in sys.argv[1:]:
        print(f"{d}: converted {convert(d)} records")
