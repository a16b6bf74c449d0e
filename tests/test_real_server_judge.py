"""The LLM judge and curation's gating model against a real llama.cpp server (tests/real_server.py).

Gemma 3 270M is a base model: as a SimpleQA grader it mostly repeats the prompt.  That is the point
here: whatever free text a real judge returns is parsed into a verdict or counted as undecided
(``unparseable``), never a traceback and never a guessed grade; the prompt it is sent is the
template docs/judging.md names, filled as that page says; its replies are cached when complete.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from real_server import ALIAS, RecordingProxy

from mmrag.cli import main
from mmrag.judging.llm import GRADE_TO_OUTCOME, parse_grade
from mmrag.runs.frame import read_records

pytestmark = pytest.mark.real_server
ROOT = Path(__file__).resolve().parents[1]
GRADER_HEAD = "Your job is to look at a question, a gold target, and a predicted answer"


@pytest.fixture(scope="module")
def proxy(llama_server):
    with RecordingProxy(llama_server.port) as p:
        yield p


def run_config(path: Path, url: str, cache: Path, limit: int = 2, **judge_options) -> Path:
    """A run of the server as model *and* judge, written to ``path``.  Answers end at "?" or 24
    tokens.  The judge is asked one request at a time with a long timeout: llama.cpp decodes one
    request at a time, and on a loaded machine a queued 1,400-token grader prompt outlasts the
    client's default 120 s per attempt (a retry then sends it twice)."""
    cfg = {
        "benchmarks": [{"name": "demo"}],
        "scenarios": [{"kind": "parametric"}, {"kind": "oracle", "positive_modality": "text"}],
        "models": [
            {"backend": "openai", "model": ALIAS, "base_url": url, "settings": {"max_new_tokens": 24, "stop": ["?"]}}
        ],
        "judge": {
            "mode": "rule",
            "model": {
                "backend": "openai",
                "model": ALIAS,
                "base_url": url,
                "options": {"max_concurrency": 1, "timeout": 600, **judge_options},
            },
        },
        "limit": limit,
        "cache": {"path": str(cache)},
    }
    path.write_text(yaml.safe_dump(cfg))
    return path


def distinct(exchanges) -> dict[str, object]:
    """Requests by body (a retried request is one request)."""
    return {json.dumps(ex.body, sort_keys=True): ex for ex in exchanges}


def split(exchanges) -> tuple[list, list]:
    """(answer requests, judge requests) by the prompt they carry."""
    judge = [ex for ex in exchanges if ex.body["messages"][-1]["content"].startswith(GRADER_HEAD)]
    return [ex for ex in exchanges if ex not in judge], judge


def documented_grader_prompt() -> str:
    """The grader template at the path docs/judging.md names, read from that file."""
    doc = (ROOT / "docs" / "judging.md").read_text(encoding="utf-8")
    [path] = set(re.findall(r"`(mmrag/judging/templates/[\w.]+\.txt)`", doc))
    return (ROOT / path).read_text(encoding="utf-8").strip()


def gold_target(answers: list[str]) -> str:
    """The gold target as docs/judging.md describes it: the first reference, then the others."""
    return answers[0] + (f" (also accepted: {'; '.join(answers[1:])})" if answers[1:] else "")


def assert_verdict_read_from_reply(verdict, reply_text: str) -> None:
    """A decided grade is the one the reply states; anything else is undecided, with its reason."""
    grade = parse_grade(reply_text)
    assert verdict.details["judge_reply"] == reply_text
    if grade is None:
        assert verdict.outcome == "unparseable" and verdict.reason == "judge reply states no single grade"
    else:
        assert verdict.outcome == GRADE_TO_OUTCOME[grade]


@pytest.fixture(scope="module")
def llm_run(proxy, tmp_path_factory):
    """`mmrag run --config run.yaml --judge llm`: the flag sets the mode over the config's judge."""
    root = tmp_path_factory.mktemp("judge_llm")
    cfg = run_config(root / "run.yaml", proxy.url, root / "c.sqlite")
    proxy.reset()
    assert main(["run", "--config", str(cfg), "--judge", "llm", "--out", str(root / "run")]) == 0
    return root, list(proxy.chat())


def test_llm_judge_reads_free_text_into_a_verdict_or_undecided(llm_run, capsys):
    root, exchanges = llm_run
    answers, judged = split(exchanges)
    records = read_records(root / "run")
    assert len(distinct(answers)) == len(records)
    by_reply = {}
    for r in records:
        if r.response.incomplete:  # the one cut-off policy: never shown to the judge
            assert r.verdict.judge_id == "engine" and "not scored" in r.verdict.reason
            continue
        assert r.verdict.judge_id.startswith(f"llm-answer@2:openai:{ALIAS}@")
        by_reply[r.key] = r
    assert by_reply and len(distinct(judged)) == len(by_reply)  # one judge call per judged reply, no more
    replies = {ex.body["messages"][0]["content"]: ex.reply["choices"][0]["message"]["content"] for ex in judged}
    template = documented_grader_prompt()
    for r in by_reply.values():
        sent = template.format(
            question=r.sample.question, target=gold_target(r.sample.answers), predicted_answer=r.response.text.strip()
        )
        assert sent in replies, "the judge was not sent the documented grader prompt"
        assert_verdict_read_from_reply(r.verdict, replies[sent])
    for ex in judged:  # one user turn, greedy, short: as simple-evals sends its grader
        assert [m["role"] for m in ex.body["messages"]] == ["user"]
        assert ex.body["temperature"] == 0.0 and ex.body["max_tokens"] == 16


def test_judge_replies_cut_at_their_limit_are_judged_but_never_cached(llm_run, proxy):
    """The judge's replies run to its 16-token limit here (finish_reason length): they are read
    for a grade, but the response cache never stores an incomplete reply, so the same run again
    asks the judge again, for exactly those, and gets the same verdicts."""
    root, exchanges = llm_run
    answers, judged = split(exchanges)
    cut = {k for k, ex in distinct(judged).items() if ex.reply["choices"][0]["finish_reason"] == "length"}
    cut_answers = {k for k, ex in distinct(answers).items() if ex.reply["choices"][0]["finish_reason"] == "length"}
    proxy.reset()
    assert main(["run", "--config", str(root / "run.yaml"), "--judge", "llm", "--out", str(root / "again")]) == 0
    answers2, judged2 = split(proxy.chat())
    assert set(distinct(judged2)) == cut and set(distinct(answers2)) == cut_answers
    before = {r.key: (r.verdict.outcome, r.verdict.reason) for r in read_records(root / "run")}
    assert {r.key: (r.verdict.outcome, r.verdict.reason) for r in read_records(root / "again")} == before


def test_complete_judge_replies_are_served_from_the_cache(proxy, tmp_path, capsys):
    """With a stop string in the judge's request body (option ``extra_body``) its replies end
    before the limit: the second run of the same config makes no model and no judge call."""
    path = run_config(tmp_path / "run.yaml", proxy.url, tmp_path / "c.sqlite", limit=1, extra_body={"stop": [","]})
    run = ["run", "--config", str(path), "--judge", "llm", "--out"]
    proxy.reset()
    assert main([*run, str(tmp_path / "a")]) == 0
    _, judged = split(proxy.chat())
    assert judged and all(ex.reply["choices"][0]["finish_reason"] == "stop" for ex in judged)
    assert all(ex.body["stop"] == [","] for ex in judged)
    first = {r.key: r.verdict for r in read_records(tmp_path / "a") if r.verdict.judge_id != "engine"}
    assert first and all(v.details["judge_cached"] is False for v in first.values())
    complete = [r for r in read_records(tmp_path / "a") if not r.response.incomplete]
    proxy.reset()
    assert main([*run, str(tmp_path / "b")]) == 0
    _, judged2 = split(proxy.chat())
    assert judged2 == []  # the judge was not asked again
    again = {r.key: r for r in read_records(tmp_path / "b")}
    for r in complete:
        assert again[r.key].response.cached
    for key, v in first.items():
        assert again[key].verdict.details["judge_cached"] is True
        assert (again[key].verdict.outcome, again[key].verdict.details["judge_reply"]) == (
            v.outcome,
            v.details["judge_reply"],
        )


def test_rule_then_llm_sends_only_the_undecided_replies(proxy, tmp_path):
    cfg = run_config(tmp_path / "run.yaml", proxy.url, tmp_path / "c.sqlite", limit=3)
    proxy.reset()
    assert main(["run", "--config", str(cfg), "--judge", "rule+llm", "--out", str(tmp_path / "run")]) == 0
    answers, judged = split(proxy.chat())
    records = read_records(tmp_path / "run")
    assert len(distinct(answers)) == len(records)
    by_llm = [r for r in records if r.verdict.details.get("judged_by") == "llm"]
    by_rules = [r for r in records if r.verdict.details.get("judged_by") == "rules"]
    assert len(distinct(judged)) == len(by_llm)  # only what the rules left undecided went to the judge
    for r in by_llm:
        assert r.verdict.details["rule_outcome"] == "unparseable"
        assert r.verdict.details["rule_reason"].startswith("undecided")
        replies = [ex.reply["choices"][0]["message"]["content"] for ex in judged]
        assert r.verdict.details["judge_reply"] in replies
        assert_verdict_read_from_reply(r.verdict, r.verdict.details["judge_reply"])
    for r in by_rules:
        assert "judge_reply" not in r.verdict.details
    assert len(by_llm) + len(by_rules) + sum(r.verdict.judge_id == "engine" for r in records) == len(records)


def test_curate_with_the_real_server_as_gating_model(proxy, tmp_path):
    """Stages I-III with the server as the only gating model, on two demo samples: each sample gets
    a decision from its reply, each request is sent with the gating model's own token limit (the
    one its fingerprint names), and running the curation again asks the server nothing."""
    cfg = {
        "benchmark": {"name": "demo"},
        "gating_models": [
            {"backend": "openai", "model": ALIAS, "base_url": proxy.url, "settings": {"max_new_tokens": 8}}
        ],
        "modalities": ["text"],
        "negatives_per_modality": 1,
        "k_min": 1,
        "negatives": "regenerate",
        "retrieval": {"retrievers": {"text": "bm25"}},
        "limit": 2,
        "cache": {"path": str(tmp_path / "c.sqlite")},
    }
    path = tmp_path / "curate.yaml"
    path.write_text(yaml.safe_dump(cfg))
    proxy.reset()
    out = tmp_path / "out"
    assert main(["curate", "--config", str(path), "--out", str(out)]) == 0
    sent = proxy.chat()
    assert sent and all(ex.status == 200 and ex.body["model"] == ALIAS for ex in sent)
    assert all(ex.body["max_tokens"] == 8 for ex in sent)
    stage1 = [json.loads(line) for line in (out / "stage1_parametric.jsonl").read_text().splitlines()]
    stage3 = [json.loads(line) for line in (out / "stage3_oracle.jsonl").read_text().splitlines()]
    assert len(stage1) == 2
    for row in stage1:  # kept exactly when the gating model did not answer correctly without context
        [outcome] = row["outcomes"].values()
        assert outcome in ("correct", "deflection", "hallucination", "unparseable")
        assert row["kept"] == (outcome != "correct")
    for row in stage3:
        [outcome] = row["oracle_outcomes"].values()
        if outcome != "correct":
            assert not row["kept"] and row["reason"] == "every gating model fails with gold evidence"
    curated = (out / "curated.jsonl").read_text().splitlines()
    assert len(curated) == sum(r["kept"] for r in stage3)
    proxy.reset()
    assert main(["curate", "--config", str(path), "--out", str(out)]) == 0
    assert proxy.chat() == []  # finished stages are read back from disk
