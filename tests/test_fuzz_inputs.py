"""Fuzz: malformed records into every loader and ``validate`` — zero tracebacks.

From one valid record per format, a seeded generator makes malformed variants: random truncation,
type swaps (at any depth), non-finite numbers (``NaN``, ``Infinity``, ``1e999``), invalid UTF-8 byte
sequences, huge strings and lists, deep nesting, dropped and unknown keys.  Every variant goes
through every reader of its format; each must either be accepted or refused with an
:class:`~mmrag.errors.InputError` that names the file (and line or field where it is a record's
fault).  Any other exception is a failure that prints the variant.  Seeded (``random.Random``), so
a failure reproduces; ~1,500 variants in well under a minute.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from mmrag.errors import InputError

N_PER_FORMAT = 300
HB_QUESTION = "What is shown?\nA. a cat\nB. a dog\nC. a bird\nD. a fish\nE. None of the above"


def _valid(img: str) -> dict[str, dict[str, Any]]:
    return {
        "deflection": {
            "sample_id": "s1",
            "question_id": "q1",
            "question": "Capital of Varnholt?",
            "answer": "Quellmar",
            "aliases": ["Q"],
            "numeric_ranges": [[1.0, 2.0]],
            "query_images": [img],
            "gold_contexts": [{"doc_id": "d1", "modality": "text"}],
            "negative_doc_ids": [],
            "source": "demo",
            "metadata": {"w": 1},
        },
        "kb": {
            "id": "d2",
            "modality": "multimodal",
            "text": "A caption.",
            "image": img,
            "title": "T",
            "entity_id": "e1",
            "metadata": {"k": [1, 2]},
        },
        "knowhal": {
            "id": "k2",
            "pair_id": "p1",
            "entity_id": "e1",
            "image": img,
            "dimension": "E",
            "polarity": "negative",
            "question": "Why is it blue?",
            "false_premise": "it is red",
            "answers": [],
        },
        "humblebench": {"question_id": 2, "question": HB_QUESTION, "label": "E", "type": "Object", "file_name": img},
        "predictions": {
            "question_id": 2,
            "question": HB_QUESTION,
            "label": "E",
            "type": "Object",
            "image": img,
            "prediction": "E",
        },
        "judge": {"id": "r2", "question": "Capital?", "answers": ["Quellmar"], "response": "Quellmar"},
    }


#: the first line of each fuzzed file (a valid record the mutated one must coexist with)
_FIRST = {
    "deflection": {
        "sample_id": "s0",
        "question_id": "q0",
        "question": "Q?",
        "answer": "A",
        "gold_contexts": [{"doc_id": "d1", "modality": "text"}],
        "source": "demo",
    },
    "kb": {"id": "d1", "modality": "text", "text": "The capital of Varnholt is Quellmar."},
    "knowhal": {
        "id": "k1",
        "pair_id": "p1",
        "entity_id": "e1",
        "image": "IMG",
        "dimension": "E",
        "polarity": "positive",
        "question": "Who?",
        "answers": ["Ada"],
    },
    "humblebench": {"question_id": 1, "question": HB_QUESTION, "label": "A", "type": "Object", "file_name": "IMG"},
    "predictions": {
        "question_id": 1,
        "question": HB_QUESTION,
        "label": "A",
        "type": "Object",
        "image": "IMG",
        "prediction": "A",
    },
    "judge": {"id": "r1", "question": "Capital?", "answers": ["Quellmar"], "response": "Quellmar"},
}

_WEIRD_VALUES: list[Any] = [
    None,
    True,
    0,
    -1,
    2**70,
    1.5,
    "",
    "x",
    [],
    [None],
    {},
    {"a": {"b": []}},
    ["x", 1],
    "NaN",
    "../../etc/passwd",
    "\u0000",
    "\ud800x",
]


def _paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, prefix + (i,))
    return out


def _set(obj: Any, path: tuple, value: Any) -> None:
    for p in path[:-1]:
        obj = obj[p]
    obj[path[-1]] = value


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, allow_nan=True).encode("utf-8", "surrogatepass")


def mutate(rng: random.Random, rec: dict[str, Any]) -> bytes:
    """One malformed JSONL line (bytes, without the newline)."""
    rec = copy.deepcopy(rec)
    kind = rng.choice(["truncate", "swap", "swap", "nonfinite", "utf8", "huge", "nest", "drop", "extra"])
    paths = _paths(rec)
    if kind == "truncate":
        raw = _dumps(rec)
        return raw[: rng.randrange(0, len(raw))]
    if kind == "swap":
        for _ in range(rng.randint(1, 3)):
            _set(rec, rng.choice(_paths(rec) or [("x",)]), copy.deepcopy(rng.choice(_WEIRD_VALUES)))
        return _dumps(rec)
    if kind == "nonfinite":
        _set(rec, rng.choice(paths), rng.choice([float("nan"), float("inf"), float("-inf"), [float("nan"), 1.0]]))
        raw = _dumps(rec)
        return raw.replace(b"1.0", b"1e999") if rng.random() < 0.3 else raw
    if kind == "utf8":
        raw = _dumps(rec)
        at = rng.randrange(0, len(raw))
        return (
            raw[:at]
            + rng.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xe2\x82", b"\xf8\x88\x80\x80\x80"])
            + raw[at:]
        )
    if kind == "huge":
        _set(rec, rng.choice(paths), rng.choice(["x" * 300_000, ["y"] * 50_000, {"k": "z" * 100_000}]))
        return _dumps(rec)
    if kind == "nest":
        depth = rng.choice([50, 5_000, 100_000])
        return _dumps(rec)[:-1] + b', "deep": ' + b"[" * depth + b"]" * depth + b"}"
    if kind == "drop":
        top = rng.choice(list(rec))
        del rec[top]
        return _dumps(rec)
    rec[rng.choice(["extra", "Question", "sample_id ", "\u00e9"])] = rng.choice(_WEIRD_VALUES)
    return _dumps(rec)


def _readers(tmp: Path) -> dict[str, list[tuple[str, Callable[[Path], Any]]]]:
    from mmrag.benchmarks.deflection import DeflectionBenchmark, load_kb
    from mmrag.benchmarks.humblebench import HumbleBenchBenchmark
    from mmrag.benchmarks.knowhal import KnowHalBenchmark
    from mmrag.benchmarks.validate import validate_file
    from mmrag.commands.index import iter_kb
    from mmrag.judging import make_judge
    from mmrag.judging.records import judge_file
    from mmrag.metrics.agreement import agreement
    from mmrag.metrics.predictions import read_humblebench_predictions

    kb = tmp / "kb.jsonl"
    kb.write_text(json.dumps(_FIRST["kb"]) + "\n")
    judge = make_judge("rule")
    return {
        "deflection": [
            ("load", lambda p: DeflectionBenchmark(p, kb=kb).samples()),
            ("validate", lambda p: validate_file(p, "deflection")),
        ],
        "kb": [
            ("load_kb", load_kb),
            ("index iter_kb", lambda p: list(iter_kb(p))),
            ("validate", lambda p: validate_file(p, "kb")),
        ],
        "knowhal": [
            ("load", lambda p: KnowHalBenchmark(p).samples()),
            ("validate", lambda p: validate_file(p, "knowhal")),
        ],
        "humblebench": [
            ("load", lambda p: HumbleBenchBenchmark(p, cache_dir=tmp / "hbcache").samples()),
            ("validate", lambda p: validate_file(p, "humblebench")),
        ],
        "predictions": [("score", read_humblebench_predictions)],
        "judge": [
            ("judge", lambda p: judge_file(p, tmp / "judged.jsonl", judge)),
            ("agreement", lambda p: agreement(p, p)),
        ],
    }


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, dict[str, list[bytes]]]:
    tmp = tmp_path_factory.mktemp("fuzz")
    Image.new("RGB", (8, 8), "red").save(tmp / "img.png")
    rng = random.Random(17)
    valid = _valid("img.png")
    return tmp, {fmt: [mutate(rng, rec) for _ in range(N_PER_FORMAT)] for fmt, rec in valid.items()}


def test_the_corpus_is_large_and_varied(corpus):
    _, lines = corpus
    total = sum(len(v) for v in lines.values())
    assert total >= 1_000
    flat = [ln for v in lines.values() for ln in v]
    assert sum(b"NaN" in ln or b"Infinity" in ln or b"1e999" in ln for ln in flat) >= 50
    assert sum(len(ln) > 200_000 for ln in flat) >= 20
    assert sum(not _is_utf8(ln) for ln in flat) >= 50


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@pytest.mark.parametrize("fmt", ["deflection", "kb", "knowhal", "humblebench", "predictions", "judge"])
def test_no_malformed_record_gives_a_traceback(corpus, fmt):
    tmp, lines = corpus
    readers = _readers(tmp)[fmt]
    first = json.dumps(_FIRST[fmt]).replace("IMG", "img.png").encode()
    data = tmp / f"{fmt}.jsonl"
    outcomes = {"accepted": 0, "refused": 0}
    for i, line in enumerate(lines[fmt]):
        data.write_bytes(first + b"\n" + line + b"\n")
        for name, read in readers:
            try:
                result = read(data)
            except InputError as exc:
                outcomes["refused"] += 1
                assert exc.path, f"{fmt}/{name} variant {i}: error names no file: {str(exc)[:300]}\n{line[:300]!r}"
                assert exc.line or exc.field or "no " in exc.message, (
                    f"{fmt}/{name} variant {i}: error names no line or field: {str(exc)[:300]}\n{line[:300]!r}"
                )
                continue
            except Exception as exc:  # noqa: BLE001 - the point of the test
                pytest.fail(f"{fmt}/{name} variant {i}: {type(exc).__name__}: {str(exc)[:300]}\n{line[:300]!r}")
            outcomes["accepted"] += 1
            if name == "validate":  # a problem list: every problem is located
                assert all(p.line or p.field or p.message for p in result)
    assert outcomes["refused"] > 0


# -- model and judge replies ---------------------------------------------------------------------------
N_REPLIES = 240
_TEXTS: list[Any] = [
    "Paris",
    "Paris \ud800",
    "\udfff",
    "\ud83d",
    "A\u0000B",
    "\x07\x1b[31mred\x1b[0m",
    "\u202eevil",
    "",
    " ",
    "\n\n",
    "x" * 100_000,
    "B",
    "A \ud800",
    "\ufeffC",
    "\u200b",
    "NOT_ATTEMPTED",
]
_WRONG: list[Any] = [None, 5, -1, 1.5, True, "x", [], [None], {}, {"a": 1}, ["a", 2], 2**70]


def _reply_body(rng: random.Random) -> bytes:
    """One hostile chat-completions body (bytes as the server sends them)."""

    def completion(content: Any = "Paris", **over: Any) -> dict:
        base = {
            "id": "x",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1},
        }
        base.update(over)
        return base

    kind = rng.choice(
        [
            "text",
            "text",
            "usage",
            "choices",
            "message",
            "finish",
            "truncate",
            "bytes",
            "empty",
            "huge",
            "toplevel",
            "nest",
        ]
    )
    if kind == "text":
        return _dumps(completion(rng.choice(_TEXTS)))
    if kind == "usage":
        return _dumps(
            completion(
                rng.choice(_TEXTS),
                usage=rng.choice(
                    _WRONG + [{"prompt_tokens": w, "completion_tokens": rng.choice(_WRONG)} for w in _WRONG]
                ),
            )
        )
    if kind == "choices":
        return _dumps(completion(choices=rng.choice(_WRONG + [[{"message": w}] for w in _WRONG])))
    if kind == "message":
        return _dumps(completion(rng.choice(_WRONG)))
    if kind == "finish":
        body = completion(rng.choice(_TEXTS))
        body["choices"][0]["finish_reason"] = rng.choice(_WRONG + ["length", "content_filter", "\ud800", "x" * 1000])
        return _dumps(body)
    if kind == "truncate":
        raw = _dumps(completion(rng.choice(_TEXTS)))
        return raw[: rng.randrange(0, len(raw))]
    if kind == "bytes":
        raw = _dumps(completion("Paris"))
        at = raw.index(b"Paris")
        return raw[:at] + rng.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\x00", b"\xe2\x82"]) + raw[at:]
    if kind == "empty":
        return rng.choice([b"", b" ", b"null", b"{}", b"[]", b'""', b"\x00"])
    if kind == "huge":
        return _dumps(completion("y" * rng.choice([100_000, 9_000_000])))
    if kind == "toplevel":
        return _dumps(rng.choice(_WRONG))
    depth = rng.choice([50, 5_000, 100_000])
    return b'{"choices": ' + b"[" * depth + b"]" * depth + b"}"


@pytest.fixture(scope="module")
def hostile_replies():
    """Every hostile body sent by a real server on loopback, answered through the OpenAI client."""
    from loopback_core import Action
    from loopback_server import LoopbackServer

    from mmrag.models import GenerationSettings, OpenAICompatible
    from mmrag.schema import ContentPart, Message, Prompt

    rng = random.Random(26)
    bodies = [_reply_body(rng) for _ in range(N_REPLIES)]
    prompts = [
        Prompt(sample_id=f"s{i}", messages=[Message(role="user", content=[ContentPart(type="text", text=f"q{i}")])])
        for i in range(N_REPLIES)
    ]
    with LoopbackServer() as srv:
        srv.script(*[Action.status(200, body=b) for b in bodies])
        model = OpenAICompatible("m", srv.url, options={"max_retries": 0, "max_concurrency": 8})
        responses = model.generate(prompts, GenerationSettings())
    return bodies, prompts, responses


def test_no_hostile_reply_gives_a_traceback_or_invalid_text(hostile_replies, tmp_path):
    from mmrag.judging import make_judge
    from mmrag.judging.llm import LLMJudge, judge_failure
    from mmrag.runs.records import RunRecord
    from mmrag.runs.store import RunStore
    from mmrag.schema import Response, Sample

    bodies, prompts, responses = hostile_replies
    assert len(responses) == len(bodies)
    kinds = {r.error for r in responses}
    assert None in kinds and "bad_response" in kinds and "reply_too_large" in kinds
    for r in responses:
        r.text.encode("utf-8")  # valid text, whatever was sent
        r.error_detail.encode("utf-8")
        assert r.finish_reason is None or isinstance(r.finish_reason, str)
        r.finish_reason and r.finish_reason.encode("utf-8")
        assert r.usage.prompt_tokens >= 0 and r.usage.completion_tokens >= 0
    samples = [
        Sample(id=p.sample_id, benchmark="fuzz", question="Capital of France?", answers=["Paris"]) for p in prompts
    ]
    items, distinct = [], set()
    for it in zip(samples, prompts, responses):  # each distinct reply once: the rule judge is the slow part
        if (it[2].text, it[2].error, it[2].finish_reason) not in distinct:
            distinct.add((it[2].text, it[2].error, it[2].finish_reason))
            items.append(it)
    rule = make_judge("rule").judge_many(items)  # the rule judge (MiniLM) reads every distinct reply

    class Replay:  # the same hostile replies, now as the judge's
        fingerprint = "replay"

        def generate(self, ps, settings):
            return [responses[i % len(responses)].model_copy(update={"prompt_id": p.id}) for i, p in enumerate(ps)]

    ok = [it for it in items if it[2].error is None and it[2].text.strip()]
    llm = LLMJudge(Replay()).judge_many([(s, p, Response(prompt_id=p.id, text="Paris")) for s, p, _ in ok])
    assert any(judge_failure(v) for v in llm) and any(not judge_failure(v) for v in llm)
    store = RunStore(tmp_path / "run", lock=False)  # and every one of them is written to Parquet
    for i, ((s, p, r), v) in enumerate(zip(items, rule)):
        store.add(
            RunRecord(
                key=f"k{i}",
                benchmark="fuzz",
                benchmark_kind="deflection",
                scenario_id="x",
                scenario={"kind": "parametric"},
                model="m",
                model_fingerprint="m",
                sample=s,
                prompt=p,
                response=r,
                verdict=v,
            ),
            ord=i,
        )
    for i, ((s, p, _r), v) in enumerate(zip(ok, llm)):
        store.add(
            RunRecord(
                key=f"j{i}",
                benchmark="fuzz",
                benchmark_kind="deflection",
                scenario_id="x",
                scenario={"kind": "parametric"},
                model="m",
                model_fingerprint="m",
                sample=s,
                prompt=p,
                response=Response(prompt_id=p.id, text="Paris"),
                verdict=v,
            ),
            ord=len(items) + i,
        )
    store.flush()
    store.close()
