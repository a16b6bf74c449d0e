"""Golden verdicts: the rule judge on every labelled file equals its snapshot in tests/labels/golden.

A failure lists the verdicts that moved.  After a deliberate change of the judge, regenerate the
snapshots (``PYTHONPATH=$PWD python tools/judge_golden.py``) and commit them with the change, so
that review sees every verdict it changed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parent.parent / "tools" / "judge_golden.py"
spec = importlib.util.spec_from_file_location("judge_golden", TOOL)
golden = importlib.util.module_from_spec(spec)
spec.loader.exec_module(golden)


def test_every_labelled_file_is_in_the_manifest_and_has_a_snapshot():
    listed = {p.name for p in golden.files()}
    assert listed == {p.name for p in golden.LABELS.glob("*.jsonl")} and len(listed) == 38
    assert listed == {p.name for p in golden.GOLDEN.glob("*.jsonl")}


@pytest.mark.parametrize("path", golden.files(), ids=lambda p: p.stem)
def test_verdicts_equal_the_snapshot(path):
    diff = golden.changes(path)
    assert not diff, f"{len(diff)} verdicts moved in {path.name}, e.g.:\n" + "\n".join(diff[:10])
