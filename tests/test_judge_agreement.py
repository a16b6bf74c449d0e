"""Agreement with people is the rule judge's guard: every labelled file in tests/labels/manifest.yaml
holds the bounds its ``guard`` records on κ over decided replies, coverage and the four confusions
that bend the deflection-vs-hallucination measure (hallucination→correct, correct→hallucination,
deflection→hallucination, hallucination→deflection).

The bounds are the judge's measured figures with a 0.01 margin (``tools/judge_eval.py
--write-guard`` records them), so a change that moves the judge away from people on any file fails
here, and a change that improves it tightens the bounds when they are rewritten.  The issue's
targets (κ ≥ 0.92, h→c ≤ 3 %, c→h ≤ 3 %, d→h ≤ 3 %, h→d ≤ 5 %, coverage ≥ 0.80 on styles already
labelled) are recorded beside them in the manifest's header; docs/judging.md lists the files that
do not reach them.
"""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

TOOL = Path(__file__).resolve().parent.parent / "tools" / "judge_eval.py"
spec = importlib.util.spec_from_file_location("judge_eval", TOOL)
judge_eval = importlib.util.module_from_spec(spec)
spec.loader.exec_module(judge_eval)

MANIFEST = yaml.safe_load((judge_eval.LABELS / "manifest.yaml").read_text(encoding="utf-8"))["files"]


@lru_cache(maxsize=1)
def figures_by_file() -> dict[str, dict]:
    """The rule judge over every labelled file at once (one pass, ~20 s)."""
    rows = judge_eval.judged(judge_eval.manifest_files())
    return judge_eval.table(rows, "_file")


def test_every_labelled_file_is_in_the_manifest_with_a_guard():
    listed = {f["file"] for f in MANIFEST}
    assert listed == {p.name for p in judge_eval.LABELS.glob("*.jsonl")} and len(listed) >= 38
    names = {name for name, *_ in judge_eval.GUARD}
    assert all(set(f.get("guard") or {}) == names for f in MANIFEST), "run tools/judge_eval.py --write-guard"


@pytest.mark.parametrize("entry", MANIFEST, ids=lambda f: f["file"])
def test_agreement_holds_its_guard(entry):
    figures = figures_by_file()[Path(entry["file"]).stem]
    failures = judge_eval.guard_failures(figures, entry["guard"])
    assert not failures, f"{entry['file']}: " + "; ".join(failures)


def test_a_regression_breaks_the_guard():
    """The guard can fail: a judge that called every decided reply correct would break it."""
    figures = figures_by_file()["judge_heldout"]
    entry = next(f for f in MANIFEST if f["file"] == "judge_heldout.jsonl")
    worse = {**figures, "confusions": {**figures["confusions"], "h→c": 0.5}, "kappa_decided": 0.5}
    assert {f.split()[0] for f in judge_eval.guard_failures(worse, entry["guard"])} == {"kappa_decided", "h_to_c"}
