"""What a labeller sees of one record — on the page and in an exported sample.

Everything needed to judge a reply and nothing of the judge: question, query image(s), reference
answers (or the options and the gold letter), the reply, and the retrieved contexts with their
roles.  No outcome, extracted answer, reason or stratum (the stratum names the judge's outcome).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from mmrag.runs.records import RunRecord
from mmrag.scenarios.kinds import scenario_label
from mmrag.schema import ImageRef
from mmrag.util import write_jsonl_atomic

#: fields of an exported item (the tests check that none of them carries the verdict)
EXPORT_FIELDS = (
    "key",
    "benchmark",
    "source",
    "scenario",
    "question",
    "images",
    "answers",
    "choices",
    "gold",
    "response",
    "contexts",
)


def item_view(rec: RunRecord, image: Callable[[ImageRef | None], str | None]) -> dict[str, Any]:
    """The item as a plain dict; ``image`` turns an image reference into what the reader gets (a
    ``data:`` URI on the page, the file path in an export)."""
    choices = rec.prompt.choices or rec.sample.choices
    gold = rec.prompt.label if rec.prompt.label is not None else rec.sample.label
    return {
        "key": rec.key,
        "benchmark": rec.benchmark,
        "source": rec.sample.source or rec.benchmark,
        "scenario": scenario_label(rec.scenario),
        "question": rec.sample.question,
        "images": [image(im) for im in rec.sample.images],
        "answers": list(rec.sample.answers),
        "choices": [{"letter": c.letter, "text": c.text, "nota": c.is_nota} for c in choices],
        "gold": gold,
        "response": rec.response.text,
        "contexts": [
            {
                "role": c.role,
                "modality": c.document.modality,
                "title": c.document.title,
                "text": c.document.text,
                "image": image(c.document.image),
            }
            for c in rec.prompt.contexts
        ],
    }


def export_sample(path: str | Path, records: Iterable[RunRecord]) -> int:
    """Write the sample's items (image paths, no verdicts) as JSONL, atomically; returns the count."""
    rows = [item_view(r, lambda im: None if im is None else im.path) for r in records]
    write_jsonl_atomic(path, rows)
    return len(rows)
