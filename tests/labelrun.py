"""A run whose verdicts come from each settler: the rules (some naming their evidence), the LLM
judge (``details["judged_by"] == "llm"``), and replies the rules left undecided — for the labels
side of the evidence rule (tests/test_labels_undecided.py, tests/test_label_page.py)."""

from __future__ import annotations

from pathlib import Path

from runfactory import deflection_records, humblebench_records, write_run

from mmrag.runs.summary import write_summary
from mmrag.schema import Evidence, Verdict

UNDECIDED_REASON = "undecided: no reference value in the reply to check"


def _undecided() -> Verdict:
    return Verdict(
        outcome="unparseable", judge_id="rule@18", reason=UNDECIDED_REASON, details={"undecided": "no_value"}
    )


def _evidence(text: str, answer: str) -> Evidence | None:
    at = text.find(answer)
    if at < 0 or not answer:
        return None
    return Evidence(
        step="reference_match",
        span=answer,
        start=at,
        end=at + len(answer),
        reference=answer,
        rule="the reference is the reply's final answer",
    )


def settled_run(root: Path, name: str = "run") -> Path:
    """Every fifth reply undecided, every fifth (offset one) decided by the LLM, the rest by rules
    (a correct rule verdict names its evidence); ``summary.json`` written as a run writes it."""
    recs = deflection_records(root, n_questions=2, full=False) + humblebench_records(root, n_questions=2)
    replied = [r for r in recs if r.response.error is None]
    for i, r in enumerate(replied):
        if i % 5 == 0:
            r.verdict = _undecided()
        elif i % 5 == 1:
            r.verdict.details.update({"judged_by": "llm", "rule_outcome": "unparseable"})
        elif r.verdict.outcome == "correct" and r.sample.answers:
            r.response.text = f"Looking at the image and the passage, the answer is {r.sample.answers[0]}."
            r.verdict.evidence = _evidence(r.response.text, r.sample.answers[0])
    run = write_run(root / name, recs)
    write_summary(run, recs)
    return run
