"""A benchmark family that lives outside mmrag: "notes".

Each sample is a question about a fictional object plus a handwritten note.  The plug-in adds

* a scenario kind ``note`` that shows the note as the only context (no knowledge base, no
  retrieval), ordered after mmrag's retrieval kinds;
* a benchmark family ``notes`` composed under ``note`` and mmrag's own ``parametric``, judged by
  mmrag's rule judge, with its own metric function (mmrag's outcome rates plus the share of
  replies that quote the note);
* a loader ``toy-notes`` whose samples carry the note in their metadata.

Everything registers through entry points (see pyproject.toml); nothing in mmrag names it.
"""

from __future__ import annotations

import hashlib
from typing import Any

from mmrag.benchmarks.family import BenchmarkFamily
from mmrag.metrics.rates import outcome_rates
from mmrag.scenarios.kinds import PARAMETRIC, ScenarioKind
from mmrag.schema import ContentPart, Context, Document, Message, Prompt, Sample

NOTE = ScenarioKind(
    id="note",
    label="note card",
    order=20,
    builder="mmrag_toy_family:build_note_prompt",
    applicability="mmrag_toy_family:has_note",
    description="the sample's note as the only context",
)

NOTES = BenchmarkFamily(
    id="notes",
    label="Toy notes",
    scenario_kinds=(NOTE.id, PARAMETRIC.id),
    metrics="mmrag_toy_family:notes_metrics",
    judge="rule",
)

#: (question, accepted answer, note): the third note misleads, the fourth says nothing useful
ITEMS = [
    ("What colour is the door of the Varnholt lighthouse?", "red", "The door of the Varnholt lighthouse is red."),
    ("How many bells hang in the Ostrava tower?", "seven", "Seven bells hang in the Ostrava tower."),
    ("What is the name of the Brennwald ferry?", "Marta", "The name of the Kelloway ferry is Osric."),
    ("Who built the Fenegrad mill?", "Ilse Varga", ""),
]


def has_note(sample: Sample, spec: Any, store: Any = None) -> str | None:
    return None if sample.metadata.get("note") else "the sample has no note"


def build_note_prompt(sample: Sample, spec: Any, miner: Any = None, store: Any = None) -> Prompt:
    note = Document(id=f"note-{sample.id}", modality="text", text=sample.metadata["note"], title="note")
    body = f"Note: {note.text}\n\nQuestion: {sample.question}\nAnswer briefly."
    return Prompt(
        sample_id=sample.id,
        messages=[Message(role="user", content=[ContentPart(type="text", text=body)])],
        scenario=spec.model_dump(mode="json"),
        scenario_id=spec.id,
        template_id="toy-note",
        contexts=[Context(document=note, role="gold")],
        metadata={"question": sample.question},
    )


def notes_metrics(items: list, **_: Any) -> dict[str, Any]:
    """mmrag's outcome rates (one definition) plus a family-specific figure."""
    quoting = sum(1 for it in items if it.sample.answers and it.sample.answers[0].lower() in it.response.text.lower())
    return {
        "overall": outcome_rates([it.verdict.outcome for it in items]),
        "quotes_answer": 100.0 * quoting / len(items) if items else None,
    }


class NotesBenchmark:
    name = "toy-notes"
    kind = NOTES.id

    def samples(self) -> list[Sample]:
        return [
            Sample(id=f"note{i}", benchmark=self.name, question=q, answers=[a], source="toy", metadata={"note": n})
            for i, (q, a, n) in enumerate(ITEMS)
        ]

    def documents(self) -> list[Document]:
        return []

    def fingerprint(self) -> str:
        return hashlib.sha256(repr(ITEMS).encode()).hexdigest()[:16]


def load_notes(source: str | None = None, **options: Any) -> NotesBenchmark:
    return NotesBenchmark()
