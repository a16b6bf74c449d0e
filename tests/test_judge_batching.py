"""``RuleJudge.judge_many`` batches every MiniLM encode of one call (issue 13b).

Why: judging reply by reply encoded each reply on its own (~48 ms CPU), which starved the run
engine's HTTP client.  The batched call must give exactly the verdicts one-by-one judging gives,
and call the encoder a bounded number of times however many replies need embeddings.  Real MiniLM,
real tuning replies (every source, MCQ, KnowHal premises, failed requests); the encoder is counted
through a wrapper, never timed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmrag.judging import RuleJudge
from mmrag.judging.records import record_to_item
from mmrag.judging.semantic import PrototypeBank, SemanticDeflectionDetector, default_semantic_detector

DATA = Path(__file__).parent / "data"


class CountingEncoder:
    """The real MiniLM encoder, counting its ``encode_text`` calls and texts."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.fingerprint = inner.fingerprint
        self.calls: list[int] = []

    def encode_text(self, texts):
        self.calls.append(len(texts))
        return self.inner.encode_text(texts)


def fresh_judge() -> tuple[RuleJudge, CountingEncoder]:
    """A rule judge with its own (empty) embedding memo and a counted encoder."""
    enc = CountingEncoder(default_semantic_detector().bank.encoder)
    bank = PrototypeBank(encoder=enc)
    bank.prototypes()  # classifier weights (cached .npz) loaded before counting
    enc.calls.clear()
    judge = RuleJudge()
    judge.open.rules._semantic = SemanticDeflectionDetector(bank)
    return judge, enc


@pytest.fixture(scope="module")
def items():
    out = []
    for name, step in (("judge_tuning.jsonl", 1), ("judge_tuning2.jsonl", 3), ("hand_labelled.jsonl", 4)):
        path = DATA / name
        lines = path.read_text(encoding="utf-8").splitlines()
        out += [record_to_item(json.loads(x), path, i) for i, x in enumerate(lines, 1) if i % step == 0]
    failed = {"question": "Which river is this?", "answers": ["Vltava"], "response": None, "error": "timeout"}
    return out[:40] + [record_to_item(failed, DATA / "inline", 1)] + out[40:]


def test_judge_many_equals_one_by_one_with_bounded_encodes(items):
    sources = {s.source for s, _, _ in items}
    assert {"knowhal", "humblebench", "webqa", "mmdocrag"} <= sources and any(r.error for _, _, r in items)

    single, single_enc = fresh_judge()
    one_by_one = [single.judge(*it) for it in items]

    batched, enc = fresh_judge()
    many = batched.judge_many(items)

    got = [(v.outcome, v.extracted, v.reason) for v in many]
    want = [(v.outcome, v.extracted, v.reason) for v in one_by_one]
    assert got == want
    assert [v.details for v in many] == [v.details for v in one_by_one]
    outcomes = {v.outcome for v in many}
    assert {"correct", "hallucination", "deflection"} <= outcomes

    # a decision needs at most two embedding steps: at most two encodes for the whole call
    assert 1 <= len(enc.calls) <= 2, enc.calls
    # one-by-one judging encodes per reply; the batch encodes each distinct text once, and only for
    # the replies the rules leave to MiniLM
    assert len(single_enc.calls) > 10 * len(enc.calls)
    assert sum(enc.calls) <= sum(single_enc.calls)
    # an undecided reply needs a few texts (clauses, masked reply, key phrases, the question since
    # the slot features): bounded by twice the items, never one encode per text
    assert sum(enc.calls) < 2 * len(items)

    # the memo now holds everything: judging the call again encodes nothing and changes nothing
    again = batched.judge_many(items)
    assert len(enc.calls) <= 2 and [(v.outcome, v.extracted, v.reason) for v in again] == got
