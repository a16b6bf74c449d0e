"""The run layer's features through the CLI, on the demo world, with models served over real HTTP
by the loopback server: re-judging a saved run, an LLM judge inside a run, custom retrievers named
in a run config, sweep idempotence and growth, and several benchmark families in one run + report.

One MMRAG_HOME per module (the demo world and its indices are built once).  Every OpenAI-compatible
model here is a LoopbackServer whose responder plays the model; its request counter is the
timing-free evidence of how many model calls a command made.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest
import yaml
from cli_runs import cli_run
from loopback_core import last_user_text
from loopback_server import LoopbackServer

import mmrag
from mmrag.cli import main

GUESS = "Es ist wahrscheinlich das alte Rathaus am Marktplatz."  # another language: the rules abstain
SWEEP = Path(mmrag.__file__).parent / "configs" / "sweeps" / "distractor-curve.yaml"


@pytest.fixture(scope="module")
def home(module_home):
    return module_home


@pytest.fixture(scope="module")
def demo(home):
    from mmrag.benchmarks import load_benchmark

    b = load_benchmark("demo")
    return b, list(b.samples())


def cli(*args: str) -> None:
    assert main([str(a) for a in args]) == 0


def records(run_dir: Path) -> list[dict]:
    from mmrag.runs import read_records

    return [r.model_dump(mode="json") for r in read_records(run_dir)]


def write_yaml(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


def question_of(body: dict) -> str:
    found = re.findall(r"Question: (.*)", last_user_text(body))  # the last one: the grader's examples come first
    assert found, last_user_text(body)
    return found[-1].strip()


def requests(srv: LoopbackServer) -> int:
    return srv.stats()["requests"]


# -- mmrag score: re-judging a saved run -----------------------------------------------------------
def test_score_rejudges_saved_responses_without_model_calls(demo, tmp_path, capsys):
    _, samples = demo
    first = samples[:8]
    unique = [s.question for s in first if sum(t.question == s.question for t in samples) == 1]
    knows = {q: next(s.answers[0] for s in first if s.question == q) for q in unique[::2]}

    def model(body: dict) -> str:
        return knows.get(question_of(body), GUESS)  # a reply the rules cannot settle (undecided)

    with LoopbackServer(responder=model) as srv, LoopbackServer(answer="A") as grader:
        out = tmp_path / "run"
        cli(
            "run",
            "--benchmark",
            "demo",
            "--model",
            "openai:m",
            "--base-url",
            srv.url,
            "--scenarios",
            "parametric",
            "--limit",
            "8",
            "--judge",
            "rule",
            "--out",
            out,
        )
        sent = requests(srv)
        assert sent == 8
        before = records(out)
        assert len(before) == 8
        undecided = [r["key"] for r in before if r["verdict"]["details"].get("decided") is False]
        decided = {r["key"]: r["verdict"]["outcome"] for r in before if r["key"] not in undecided}
        assert undecided and "correct" in decided.values()
        assert all(r["response"]["text"] == GUESS for r in before if r["key"] in undecided)

        cli("score", out, "--judge", "rule")
        assert "outcomes changed: 0" in capsys.readouterr().out
        assert requests(srv) == sent
        assert [(r["key"], r["verdict"]) for r in records(out)] == [(r["key"], r["verdict"]) for r in before]

        cli("score", out, "--judge", "rule+llm", "--judge-model", "openai:judge", "--judge-base-url", grader.url)
        assert f"outcomes changed: {len(undecided)}" in capsys.readouterr().out
        assert requests(srv) == sent  # the model is never asked again
        after = {r["key"]: r for r in records(out)}
        assert len(after) == 8 and set(after) == {r["key"] for r in before}
        for key in undecided:
            v = after[key]["verdict"]
            assert v["outcome"] == "correct" and v["details"]["judged_by"] == "llm"
            assert v["details"]["rule_outcome"] == "unparseable" and v["details"]["judge_reply"] == "A"
        for key, outcome in decided.items():
            assert after[key]["verdict"]["outcome"] == outcome
            assert after[key]["verdict"]["details"]["judged_by"] == "rules"
        # one grading request per distinct undecided item (identical gradings are answered once)
        grading = {json.dumps(rec.body["messages"]) for rec in grader.records}
        assert requests(grader) == len(grading) and 0 < len(grading) <= len(undecided)
        assert all(GUESS in last_user_text(rec.body) for rec in grader.records)
        summary = json.loads((out / "summary.json").read_text())
        assert summary["groups"][0]["rates"]["correct"] == pytest.approx(
            100.0 * sum(r["verdict"]["outcome"] == "correct" for r in after.values()) / 8
        )


def test_rescoring_updates_the_judge_named_in_the_manifest(demo, tmp_path):
    with LoopbackServer(answer="A") as grader:
        out = tmp_path / "run"
        cli_run(out)
        cli("score", out, "--judge", "llm", "--judge-model", "openai:judge", "--judge-base-url", grader.url)
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["config"]["judge"]["mode"] == "llm"
        assert "llm" in manifest["judge_id"]


# -- an LLM judge over HTTP inside a run -----------------------------------------------------------
def test_llm_judge_in_a_run_grades_every_record_and_counts_unparseable(demo, tmp_path):
    _, samples = demo
    vague = samples[0].question

    def grader(body: dict) -> str:
        text = last_user_text(body)
        if question_of(body) == vague:
            return "maybe"  # states no grade
        reply = text.rsplit("Predicted answer:", 1)[1].split("```", 1)[0].strip()
        refs = re.split(r" \(also accepted: |; |\)$", text.rsplit("Gold target:", 1)[1].split("\n", 1)[0])
        if any(r.strip() and r.strip().lower() in reply.lower() for r in refs):
            return "A"
        return "C" if "know" in reply.lower() or "cannot" in reply.lower() else "B"

    with LoopbackServer(responder=grader) as srv:
        cfg = write_yaml(
            tmp_path / "run.yaml",
            {
                "benchmarks": [{"name": "demo"}],
                "limit": 4,
                "cache": {"enabled": False},
                "scenarios": [{"kind": "parametric"}, {"kind": "oracle"}],
                "models": [{"backend": "context-reader"}],
                "judge": {"mode": "llm", "model": {"backend": "openai", "model": "grader", "base_url": srv.url}},
            },
        )
        out = tmp_path / "run"
        cli("run", "--config", cfg, "--out", out)
        recs = records(out)
        assert len(recs) == 8
        assert requests(srv) == len(recs)  # one grading request per record
    graded = [r for r in srv.records if question_of(r.body) == vague]
    assert len(graded) == 2 and all("Predicted answer:" in last_user_text(r.body) for r in graded)
    for r in recs:
        v = r["verdict"]
        assert v["judge_id"].startswith("llm-answer@")
        if r["sample"]["question"] == vague:
            assert v["outcome"] == "unparseable" and v["details"]["judge_reply"] == "maybe"
            assert v["reason"] == "judge reply states no single grade"
        else:
            assert v["outcome"] != "unparseable" and v["details"]["grade"] in "ABC"
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["groups"]) == 2
    for g in summary["groups"]:
        mine = [r for r in recs if r["scenario_id"] == g["scenario_id"]]
        n_unp = sum(r["verdict"]["outcome"] == "unparseable" for r in mine)
        assert n_unp == 1
        assert g["rates"]["unparseable"] == pytest.approx(100.0 * n_unp / len(mine))
        assert sum(g["rates"].values()) == pytest.approx(100.0)
    # the oracle shows the gold passage: the context-reader answers it and the grader says A
    oracle = [r for r in recs if r["scenario"]["kind"] == "oracle" and r["sample"]["question"] != vague]
    assert any(r["verdict"]["outcome"] == "correct" for r in oracle)


# -- custom retrievers named in a run config -------------------------------------------------------
def _negatives(run_dir: Path) -> dict[str, list[str]]:
    return {
        r["sample"]["id"]: [c["document"]["id"] for c in r["prompt"]["contexts"] if c["role"] == "negative"]
        for r in records(run_dir)
    }


def test_a_retriever_named_in_the_config_changes_the_negatives(demo, tmp_path):
    from custom_retriever_mod import KeywordRetriever

    from mmrag.retrieval import IndexMiner, InMemoryDocStore

    bench, samples = demo
    base = {
        "benchmarks": [{"name": "demo"}],
        "limit": 6,
        "models": [{"backend": "always-deflect"}],
        "scenarios": [
            {"kind": "realistic", "n_distractors": 2, "negative_modality": "text", "negatives": "regenerate"}
        ],
    }  # mined: the retriever decides
    dirs = {}
    for name, retrievers in (
        ("default", {}),
        ("bm25", {"text": "bm25"}),
        ("custom", {"text": "custom_retriever_mod:KeywordRetriever"}),
    ):
        cfg = write_yaml(tmp_path / f"{name}.yaml", {**base, "retrieval": {"retrievers": retrievers}})
        dirs[name] = tmp_path / name
        cli("run", "--config", cfg, "--out", dirs[name], *(["--allow-code"] if name == "custom" else []))
    neg = {k: _negatives(d) for k, d in dirs.items()}
    for name, d in dirs.items():
        assert len(neg[name]) == 6, name
        for r in records(d):  # a lexical retriever may find fewer: the shortfall is recorded, not hidden
            assert r["mining"]["found"] == len(neg[name][r["sample"]["id"]]) >= 1
            assert r["mining"]["found"] + r["mining"]["shortfall"] == 2
    assert all(len(ids) == 2 for ids in neg["default"].values())
    assert neg["custom"] != neg["default"] and neg["bm25"] != neg["default"]
    # the custom run's negatives are exactly those a miner over that retriever picks
    docs = list(bench.documents())
    keyword = KeywordRetriever(documents=docs)
    miner = IndexMiner(InMemoryDocStore(docs), {"text": keyword})
    for s in samples[:6]:
        # (the composer arranges contexts, so compare as sets)
        assert sorted(neg["custom"][s.id]) == sorted(d.id for d in miner.negatives(s, 2, "text", seed=0).documents)
    indices = {k: json.loads((d / "manifest.json").read_text())["indices"] for k, d in dirs.items()}
    assert indices["custom"]["text"] == f"retriever:{keyword.fingerprint}"
    assert indices["bm25"]["text"].startswith("retriever:bm25:")
    assert not indices["default"]["text"].startswith("retriever:")
    # only the text retriever was replaced
    for kind in ("visual", "multimodal"):
        assert indices["custom"][kind] == indices["default"][kind] == indices["bm25"][kind]


# -- sweeps: idempotent, and growing one costs only the new cells ----------------------------------
def test_sweep_command_takes_an_openai_model(demo, tmp_path):
    with LoopbackServer(answer=GUESS) as srv:
        assert (
            main(
                [
                    "sweep",
                    "--config",
                    str(SWEEP),
                    "--benchmark",
                    "demo",
                    "--model",
                    "openai:m",
                    "--base-url",
                    srv.url,
                    "--limit",
                    "2",
                    "--out",
                    str(tmp_path / "sweep"),
                ]
            )
            == 0
        )
        assert requests(srv) > 0


def test_usage_errors_exit_with_code_2(capsys):
    assert main(["run", "--no-such-flag"]) == 2


def test_sweep_runs_once_and_a_new_axis_value_costs_only_its_cells(demo, tmp_path):
    with LoopbackServer(answer=GUESS) as srv:
        model = {"backend": "openai", "model": "m", "base_url": srv.url}
        cfg = write_yaml(
            tmp_path / "sweep.yaml",
            {"benchmarks": [{"name": "demo"}], "models": [model], "sweeps": [str(SWEEP)], "limit": 5},
        )
        out = tmp_path / "sweep"
        cli("sweep", "--config", cfg, "--out", out)
        first = requests(srv)
        recs = records(out)
        specs = {r["scenario_id"] for r in recs}
        assert len(specs) == 6 and len(recs) == 30
        assert first == sum(not r["response"]["cached"] for r in recs) > 0
        data = {p.name: p.read_bytes() for p in (out / "records").iterdir()}
        cli("sweep", "--config", cfg, "--out", out)  # again: nothing left to do
        assert requests(srv) == first
        assert {p.name: p.read_bytes() for p in (out / "records").iterdir()} == data
        counts = json.loads((out / "manifest.json").read_text())["counts"]
        assert counts["new"] == 0 and counts["model_calls"] == 0 and counts["records"] == 30

        grown = yaml.safe_load(SWEEP.read_text())
        grown["axes"]["n_distractors"] = [0, 1, 2, 3, 4, 8]
        sweep2 = write_yaml(tmp_path / "grown-sweep.yaml", grown)
        cfg2 = write_yaml(
            tmp_path / "run.yaml",
            {"benchmarks": [{"name": "demo"}], "models": [model], "sweeps": [str(sweep2)], "limit": 5},
        )
        out2 = tmp_path / "grown"  # a new directory, the same response cache
        cli("run", "--config", cfg2, "--out", out2)
        recs2 = records(out2)
        assert len(recs2) == 35 and {r["scenario_id"] for r in recs2} > specs
        fresh = [r for r in recs2 if not r["response"]["cached"]]
        assert requests(srv) - first == len(fresh) > 0
        assert all(r["scenario"]["n_distractors"] == 3 for r in fresh)
        assert all(r["response"]["cached"] for r in recs2 if r["scenario_id"] in specs)
        assert sum(r["scenario"]["n_distractors"] == 3 for r in recs2) == 5


# -- several benchmark families in one run, then the report ----------------------------------------
def _sha(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _letter(text: str, option: str) -> str | None:
    m = re.search(rf"^([A-Z])[.)]\s*{re.escape(option)}\s*$", text, re.MULTILINE)
    return m.group(1) if m else None


@pytest.fixture(scope="module")
def knower(demo):
    """A model that knows every answer of the three demo benchmarks: it finds the sample by the
    image it is sent (and the question), answers open questions with the gold answer, picks the
    gold option by its text (else "None of the above"), and rejects false premises."""
    from mmrag.benchmarks import load_benchmark

    by_image: dict[str, list] = defaultdict(list)
    by_question: dict[str, list] = defaultdict(list)
    for name in ("demo", "demo-humblebench", "demo-knowhal"):
        for s in list(load_benchmark(name).samples())[:40]:
            if s.images:
                by_image[_sha(s.images[0].path)].append(s)
            by_question[s.question].append(s)

    def respond(body: dict) -> str:
        text = last_user_text(body)
        cands = []
        for m in body["messages"]:
            for part in m["content"] if isinstance(m["content"], list) else []:
                if part.get("type") == "image_url":
                    data = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
                    cands += by_image.get(hashlib.sha256(data).hexdigest(), [])
        cands = [s for s in cands if s.question.splitlines()[0] in text]
        if not cands:  # no query image (or only knowledge-base images): the question must say it
            cands = [s for q, ss in by_question.items() if q.splitlines()[0] in text for s in ss]
        if len({s.id for s in cands}) != 1:
            return "I don't know."
        s = cands[0]
        if s.metadata.get("polarity") == "negative":
            return s.metadata["reference_answers"][0]
        if s.choices and s.label:
            gold = next(c.text for c in s.choices if c.letter == s.label)
            return _letter(text, gold) or _letter(text, "None of the above") or "I don't know."
        return s.answers[0]

    with LoopbackServer(responder=respond) as srv:
        yield srv


def test_three_benchmark_families_in_one_run_and_the_report(demo, knower, tmp_path):
    cfg = write_yaml(
        tmp_path / "run.yaml",
        {
            "benchmarks": [{"name": "demo"}, {"name": "demo-humblebench"}, {"name": "demo-knowhal"}],
            "scenarios": [
                {"kind": "parametric"},
                {"kind": "oracle"},
                {"kind": "humblebench"},
                {"kind": "humblebench", "stress": ["nota_only"]},
                {"kind": "knowhal"},
            ],
            "models": [
                {"backend": "context-reader"},
                {"backend": "always-deflect"},
                {"backend": "always-nota"},
                {"backend": "openai", "model": "knower", "base_url": knower.url},
            ],
            "limit": 8,
        },
    )
    out = tmp_path / "run"
    cli("run", "--config", cfg, "--out", out)
    summary = json.loads((out / "summary.json").read_text())
    groups = {
        (g["benchmark"], g["scenario"].get("stress") and "nota_only" or g["scenario"]["kind"], g["model"]): g
        for g in summary["groups"]
    }
    assert {b for b, _, _ in groups} == {"demo", "demo-humblebench", "demo-knowhal"}
    assert len(summary["groups"]) == (2 + 2 + 1) * 4 and summary["n_records"] == 5 * 4 * 8
    assert Counter(g["benchmark_kind"] for g in summary["groups"]) == {"deflection": 8, "humblebench": 8, "knowhal": 4}

    def hb(kind, model):
        return groups[("demo-humblebench", kind, model)]["metrics"]["official"]

    for kind in ("humblebench", "nota_only"):
        for model in ("context-reader", "always-deflect", "always-nota", "openai:knower"):
            assert set(hb(kind, model)["Accuracy"]) >= {
                "Overall_accuracy",
                "Object_accuracy",
                "Attribute_accuracy",
                "Relation_accuracy",
                "E_accuracy",
            }
        assert hb(kind, "openai:knower")["Accuracy"]["Overall_accuracy"] == 100.0
        assert hb(kind, "always-deflect")["Proportions"]["NA_proportion"] == 100.0
        assert hb(kind, "always-nota")["Proportions"]["E_proportion"] == 100.0
    # NOTA-only removes the gold option: "None of the above" becomes right
    assert hb("nota_only", "always-nota")["Accuracy"]["Overall_accuracy"] == 100.0
    assert hb("humblebench", "always-nota")["Accuracy"]["Overall_accuracy"] < 100.0
    kh = groups[("demo-knowhal", "knowhal", "openai:knower")]["metrics"]
    assert kh["positive"] == 100.0 and kh["per_dimension"]["E"]["negative"] == 100.0
    assert set(kh["per_dimension"]) == {"E", "A", "R", "K"}
    # HPS = (1 - Acc_neg / Acc_pos) x 100; the next test checks the rule judge on the negatives
    assert kh["hps"] == pytest.approx((1 - kh["negative"] / kh["positive"]) * 100)
    assert kh["overall"] == pytest.approx((kh["positive"] + kh["negative"]) / 2)
    assert groups[("demo-knowhal", "knowhal", "always-deflect")]["metrics"]["hps"] is None  # positive accuracy 0
    for (bench, _kind, _model), g in groups.items():
        if bench == "demo":
            assert g["metrics"]["overall"] is not None
    assert groups[("demo", "oracle", "openai:knower")]["rates"]["correct"] == 100.0

    assert main(["report", str(out), "-q", "--n-boot", "200"]) == 0
    rep = out / "report"
    md = (rep / "report.md").read_text()
    for bench in ("demo", "demo-humblebench", "demo-knowhal"):
        assert bench in md
    figures = sorted(p.name for p in (rep / "figures").iterdir())
    assert any(f.endswith(".png") for f in figures) and any(f.endswith(".svg") for f in figures)
    assert all((rep / "figures" / f).stat().st_size > 200 for f in figures)
    html = (rep / "browser.html").read_text()
    assert html.lstrip().lower().startswith("<!doctype html") and "openai:knower" in html


def test_knowhal_rule_judge_counts_the_reference_rejections_as_correct(home):
    from mmrag.benchmarks import load_benchmark
    from mmrag.runs.config import RunConfig
    from mmrag.runs.wiring import make_judge
    from mmrag.scenarios import compose
    from mmrag.scenarios.spec import ScenarioSpec
    from mmrag.schema import Response

    judge = make_judge(
        "knowhal",
        RunConfig.model_validate({"benchmarks": [{"name": "demo-knowhal"}], "models": [{"backend": "always-deflect"}]}),
    )
    negatives = [s for s in load_benchmark("demo-knowhal").samples() if s.metadata["polarity"] == "negative"][:40]
    prompts = [compose(s, ScenarioSpec(kind="knowhal")) for s in negatives]
    items = [
        (s, p, Response(prompt_id=p.id, text=s.metadata["reference_answers"][0])) for s, p in zip(negatives, prompts)
    ]
    outcomes = Counter((s.metadata["dimension"], judge.judge(s, p, r).outcome) for s, p, r in items)
    assert {d for d, _ in outcomes} == {"E", "A", "R", "K"}
    assert all(o == "correct" for _, o in outcomes), outcomes
