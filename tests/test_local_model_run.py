"""A local transformers VLM inside a whole run: the tiny random Qwen2-VL the backend tests build,
named on the command line as ``transformers:PATH``, answers real demo prompts with interleaved
query images and image evidence, and every answer is judged and written."""

from __future__ import annotations

import json

import pytest
from cli_runs import demo_run_argv
from test_transformers_backend import build_tiny_qwen2vl

from mmrag.cli import main


def _argv(ckpt, out) -> list[str]:
    """The demo run over the tiny local checkpoint: three scenarios, image negatives, 3 questions."""
    return demo_run_argv(
        out,
        "--negative-modality",
        "image",
        "--distractors",
        "1",
        "--max-new-tokens",
        "8",
        "--batch-size",
        "4",
        model=f"transformers:{ckpt}",
        scenarios="parametric,oracle,adversarial",
        limit=3,
    )


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    return build_tiny_qwen2vl(tmp_path_factory.mktemp("tiny_qwen2vl"))


def test_transformers_model_runs_the_demo_scenarios(ckpt, tmp_path, capsys):
    out = tmp_path / "run"
    code = main(_argv(ckpt, out))
    assert code == 0, capsys.readouterr().err
    from mmrag.runs import read_records

    recs = [r.model_dump(mode="json") for r in read_records(out)]
    kinds = {r["scenario"]["kind"] for r in recs}
    assert kinds == {"parametric", "oracle", "adversarial"}
    assert all(r["response"]["error"] is None for r in recs)
    assert all(r["verdict"]["outcome"] in {"correct", "deflection", "hallucination", "unparseable"} for r in recs)
    # image evidence reached the prompt that the processor received
    adversarial = [r for r in recs if r["scenario"]["kind"] == "adversarial"]
    assert any(p["type"] == "image" for r in adversarial for m in r["prompt"]["messages"] for p in m["content"])
    manifest = json.loads((out / "manifest.json").read_text())
    assert any(fp.startswith("transformers") or "transformers" in fp for fp in manifest["models"].values())
    # greedy answers are cached: the same command into a new directory makes no model call
    again = tmp_path / "again"
    assert main(_argv(ckpt, again)) == 0
    assert json.loads((again / "manifest.json").read_text())["counts"]["model_calls"] == 0
