"""Long replies: judging stays linear in a reply's length up to the reply cap.

The rule judge reads at most a reply's last ``READ_LIMIT`` characters (a final answer is at its
end), and every reading step is linear in what it reads, so the pathological replies of a model
that loops ("Paris " * 8000, a repeated final-answer line, an 8,000-row table, a megabyte) are each
judged in well under a second; and each step, called directly on 1 KB, 10 KB and 100 KB replies,
grows at most ~12x per 10x length (a quadratic step grows 100x).
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Callable

import pytest
from judgeinputs import DATA

from mmrag.judging import KnowHalJudge, MCQJudge, RuleJudge, make_judge
from mmrag.judging.contradict import conflicts
from mmrag.judging.final import concluding_clause, final_answer, table_answer
from mmrag.judging.keyphrase import key_phrase_match
from mmrag.judging.mcq import extract_choice
from mmrag.judging.mcq_official import official_extract
from mmrag.judging.normalize import vqa_normalize
from mmrag.judging.numwords import digits_for_words
from mmrag.judging.open_answer import context_of
from mmrag.judging.premise import DEFAULT_PREMISE_DETECTOR
from mmrag.judging.quantity import quantities
from mmrag.judging.refusal import DEFAULT_DETECTOR
from mmrag.judging.relation import relation_conflicts
from mmrag.judging.rules import rule_for
from mmrag.schema import Choice, Prompt, Response, Sample

Q = "What is the capital of France?"
CHOICES = [Choice(letter=l, text=t) for l, t in zip("ABCD", ["Paris", "Lyon", "Nice", "Lille"])]


def _item(text: str, source: str = "viquae", **kw):
    s = Sample(id="s", benchmark="t", question=Q, answers=["Paris"], source=source, **kw)
    p = Prompt(sample_id="s", messages=[])
    return s, p, Response(prompt_id=p.id, text=text)


LONG = {
    "paris": "Paris " * 8000,
    "final answer lines": "Final answer: Paris. " * 8000,
    "table of 8,000 rows": "| City | Country |\n|---|---|\n"
    + "".join(f"| Paris {i} | France |\n" for i in range(8000)),
    "1 MB": ("The capital is Paris, on the Seine; it was 1,200 m wide in 1887. " * 16000)[:1_000_000],
}


@pytest.fixture(scope="module", autouse=True)
def warm():
    """Load what the judge loads once per process (the unit registry, the lexicon) before timing."""
    for source in ("viquae", "webqa", "evqa", "infoseek"):
        RuleJudge().judge(*_item("It is 1,200 m wide, about 3 ft, and cost £5; I can't tell more.", source))


@pytest.mark.parametrize("name", list(LONG))
def test_a_pathological_reply_is_judged_well_under_a_second(name):
    judge = RuleJudge()
    for source in ("viquae", "infoseek", "webqa", "evqa"):
        t0 = time.perf_counter()
        v = judge.judge(*_item(LONG[name], source))
        assert time.perf_counter() - t0 < 0.5, (name, source)
        assert v.outcome in ("correct", "unparseable")
    t0 = time.perf_counter()
    judge.judge(*_item(LONG[name], choices=CHOICES, label="A"))  # multiple choice
    assert time.perf_counter() - t0 < 0.5, name


def _corpus(size: int) -> str:
    """Real labelled replies, one after another, to ``size`` characters: varied wording, names,
    numbers, tables and refusals, as a model that rambles would write."""
    texts = [json.loads(x)["response"] or "" for x in DATA.read_text(encoding="utf-8").splitlines()]
    out, i = [], 0
    while sum(map(len, out)) < size:
        out.append(texts[i % len(texts)])
        i += 1
    return "\n".join(out)[:size]


def _growth(step: Callable[[str], object], big: str) -> float:
    """Time on ``big`` over the summed time on its ten tenths: 1.0 for a linear step, 10 for a
    quadratic one.  Both are timed in turns (best of five, after an untimed call, the garbage
    collector paused: its passes over every live object, the judge's word caches among them,
    would bill one step for the whole process), so load on the machine and the text's make-up
    weigh on both alike."""
    parts = [big[i * len(big) // 10 : (i + 1) * len(big) // 10] for i in range(10)]
    for t in (big, *parts):
        step(t)
    whole = tenths = float("inf")
    gc.collect()
    gc.disable()
    try:
        for _ in range(5):
            t0 = time.perf_counter()
            step(big)
            t1 = time.perf_counter()
            for t in parts:
                step(t)
            t2 = time.perf_counter()
            whole, tenths = min(whole, t1 - t0), min(tenths, t2 - t1)
    finally:
        gc.enable()
    return whole / max(tenths, 1e-3)  # below a millisecond a timer measures noise, not growth


_REFS = ["The Eiffel Tower, designed by Gustave Eiffel, is 330 m tall and opened in 1889."]
_CTX = context_of(Sample(id="s", benchmark="t", question=Q, answers=_REFS, source="viquae"))
_KNOWHAL = Sample(
    id="s", benchmark="t", question=Q, answers=["No"], source="knowhal", metadata={"polarity": "negative"}
)
STEPS: dict[str, Callable[[str], object]] = {
    "rule judge": lambda t: RuleJudge().judge(*_item(t)),
    "rule judge, webqa": lambda t: RuleJudge().judge(*_item(t, "webqa")),
    "mcq judge": lambda t: MCQJudge().judge(*_item(t, choices=CHOICES, label="A")),
    "knowhal judge": lambda t: KnowHalJudge().judge(
        _KNOWHAL, Prompt(sample_id="s", messages=[]), Response(prompt_id="p", text=t)
    ),
    "mcq via make_judge": lambda t: make_judge("mcq").judge(*_item(t, choices=CHOICES, label="A")),
    "final answer": final_answer,
    "table rows": lambda t: table_answer(t, Q),
    "conclusion": lambda t: concluding_clause(t, Q),
    "refusal": DEFAULT_DETECTOR.analyse,
    "premise": lambda t: DEFAULT_PREMISE_DETECTOR.analyse(t, Q),
    "option extraction": lambda t: extract_choice(t, CHOICES),
    "official option extraction": official_extract,
    "answer rule": lambda t: rule_for("viquae").match(_CTX, t),
    "key phrase": lambda t: key_phrase_match(Q, _REFS, t),
    "conflicts": lambda t: conflicts(_REFS, t, Q),
    "relations": lambda t: relation_conflicts(_REFS, t, Q),
    "quantities": quantities,
    "number words": digits_for_words,
    "vqa normalise": vqa_normalize,
}


@pytest.mark.parametrize("name", list(STEPS))
def test_every_step_grows_linearly_with_reply_length(name):
    """1 KB -> 10 KB -> 100 KB: at most ~12x per 10x length (a ratio of 1.2 to the tenths)."""
    for size in (10_000, 100_000):
        ratio = _growth(STEPS[name], _corpus(size))
        for _ in range(3):  # a loaded machine can slow one turn; a quadratic step is ~10x every time
            if ratio <= 1.2:
                break
            ratio = min(ratio, _growth(STEPS[name], _corpus(size)))
        assert ratio <= 1.2, f"{name}: {ratio:.2f}x the time of its tenths at {size} characters"


def test_the_judge_command_on_long_replies_names_its_evidence(tmp_path):
    """What a user types: ``mmrag judge`` over a file of pathological replies finishes quickly and
    writes each verdict's evidence beside it."""
    from mmrag.cli import main

    rows = [
        {"id": name, "question": Q, "answers": ["Paris"], "response": text, "source": "viquae"}
        for name, text in LONG.items()
    ]
    rows.append({"id": "wrong year", "question": "When was it built?", "answers": ["1887"], "response": "In 1902."})
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    t0 = time.perf_counter()
    assert main(["judge", "--input", str(src), "--output", str(out), "--judge", "rule"]) == 0
    assert time.perf_counter() - t0 < 10
    got = {r["id"]: r for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    e = got["paris"]["evidence"]
    assert got["paris"]["outcome"] == "correct" and e["reference"] == "Paris" and e["step"] == "reference"
    assert LONG["paris"][e["start"] : e["end"]] == e["span"]
    assert got["wrong year"]["outcome"] == "hallucination" and got["wrong year"]["evidence"]["span"] == "In 1902."
