"""The labels side of the evidence rule: the four confusions of ``judge-agreement`` (overall and
``--by`` any column), ``mmrag label --undecided`` (undecided replies first; a person's label
settles them), the verdict's evidence on the labelling page, and who settled each reply (rule,
LLM, person) with the undecided share in the summary and the report."""

from __future__ import annotations

import json

import httpx
import pytest
from labelrun import settled_run
from runfactory import build_run

import mmrag.labels as L
from mmrag.cli import main
from mmrag.labels.server import LabelServer
from mmrag.labels.settled import SETTLERS
from mmrag.labels.store import LabelFile
from mmrag.metrics.agreement import CONFUSIONS
from mmrag.runs import load, read_records

NAMES = [f"{t}→{j}" for t, j in CONFUSIONS]
CYCLE = ("correct", "deflection", "hallucination")


@pytest.fixture(scope="module")
def labelled_run(tmp_path_factory):
    """A run whose sample is labelled so that each class is sometimes confused with each other."""
    d = build_run(tmp_path_factory.mktemp("confusions"), full=True)
    sample = L.ensure_sample(d, load(d), n=120, seed=1)
    f = LabelFile(d, "ann")
    for i, key in enumerate(sample.keys):
        f.append(key, CYCLE[i % 3])
    return d


def _expected(pairs) -> dict[str, tuple[float | None, int]]:
    out = {}
    for t, j in CONFUSIONS:
        of_t = pairs[pairs["truth"] == t]
        out[f"{t}→{j}"] = ((100.0 * (of_t["outcome"] == j).mean()) if len(of_t) else None, len(of_t))
    return out


def test_judge_agreement_prints_the_four_confusions_overall_and_by_any_column(labelled_run, capsys):
    pairs = L.labelled_pairs(load(labelled_run), L.load(labelled_run))
    argv = ["judge-agreement", str(labelled_run), "--n-boot", "100", "--by", "source", "--by", "model"]
    assert main([*argv, "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    for name, (value, n) in _expected(pairs).items():
        assert res["confusions"][name]["n"] == n
        assert res["confusions"][name]["value"] == pytest.approx(value)
    assert sum(v["value"] > 0 for v in res["confusions"].values()) >= 3  # the fixture does confuse
    for field in ("source", "model"):
        for value, block in res["by"][field].items():
            want = _expected(pairs[pairs[field].astype(str) == value])
            assert {k: v["n"] for k, v in block["confusions"].items()} == {k: n for k, (_, n) in want.items()}
    assert main(argv) == 0
    text = capsys.readouterr().out
    lines = [ln for ln in text.splitlines() if ln.strip().startswith("confusions (people → judge)")]
    n_groups = 1 + len(res["by"]["source"]) + len(res["by"]["model"])
    assert len(lines) == n_groups and all(all(f"{k}=" in ln for k in NAMES) for ln in lines)


def test_the_two_file_form_prints_them_too(tmp_path, capsys):
    rows = [("hallucination", "correct"), ("correct", "hallucination"), ("deflection", "hallucination")]
    rows += [("hallucination", "deflection"), ("hallucination", "hallucination"), ("correct", "correct")]
    a, b = tmp_path / "people.jsonl", tmp_path / "judge.jsonl"
    a.write_text("".join(json.dumps({"id": i, "label": t, "kind": "k"}) + "\n" for i, (t, _) in enumerate(rows)))
    b.write_text("".join(json.dumps({"id": i, "outcome": j}) + "\n" for i, (_, j) in enumerate(rows)))
    assert main(["judge-agreement", str(a), str(b), "--json", "--by", "kind"]) == 0
    res = json.loads(capsys.readouterr().out)
    got = {k: (round(v["value"], 1), v["n"]) for k, v in res["confusions"].items()}
    assert got == {
        "hallucination→correct": (33.3, 3),
        "correct→hallucination": (50.0, 2),
        "deflection→hallucination": (100.0, 1),
        "hallucination→deflection": (33.3, 3),
    }
    assert res["by"]["kind"]["k"]["confusions"] == res["confusions"]
    assert main(["judge-agreement", str(a), str(b), "--by", "kind"]) == 0
    assert capsys.readouterr().out.count("hallucination→deflection=33.3% of 3") == 2  # overall and kind=k


# -- mmrag label --undecided; who settled each reply ------------------------------------------------
def _undecided_keys(run) -> list[str]:
    return [r.key for r in read_records(run) if r.response.error is None and r.verdict.details.get("undecided")]


def test_label_undecided_puts_them_first_and_a_persons_label_settles_them(tmp_path, capsys):
    run = settled_run(tmp_path)
    open_ = _undecided_keys(run)
    assert len(open_) >= 5
    plain = L.open_session(run, "ann", n=12)
    assert plain.keys == plain.sample.keys and plain.n_undecided == 0
    session = L.open_session(run, "ann", undecided=True)
    k = len(open_)
    assert session.n_undecided == k and set(session.keys[:k]) == set(open_)
    in_sample = [key for key in session.sample.keys if key in set(open_)]
    assert session.keys[: len(in_sample)] == in_sample  # the sample's own undecided first, in its order
    assert session.keys[k:] == [key for key in session.sample.keys if key not in set(open_)]
    with LabelServer(session) as srv, httpx.Client() as c:
        state = c.get(srv.url + "api/state").json()
        assert state["keys"][:k] == session.keys[:k] and state["undecided"] == k
        assert c.get(srv.url + f"api/item/{k - 1}").json()["key"] == session.keys[k - 1]
        for key in open_[:3]:  # a person settles three of them on the page
            assert c.post(srv.url + "api/label", json={"key": key, "label": "deflection"}).status_code == 200
    out = tmp_path / "first.jsonl"  # the command: --undecided orders an export the same way
    assert main(["label", str(run), "--labeller", "ann", "--undecided", "--export", str(out)]) == 0, capsys.readouterr()
    assert [json.loads(ln)["key"] for ln in out.read_text().splitlines()][:k] == session.keys[:k]
    imp = tmp_path / "imp.jsonl"
    imp.write_text(json.dumps({"key": open_[3], "label": "hallucination", "labeller": "bob"}) + "\n")
    assert main(["label", str(run), "--import", str(imp)]) == 0, capsys.readouterr().err  # refreshes the summary
    summary = json.loads((run / "summary.json").read_text())
    total = summary["settled_by"][-1]
    assert total["benchmark"] == "all" and total["person"] == 4 and total["undecided"] == k - 4
    recs = [r for r in read_records(run) if r.response.error is None]
    llm = sum(r.verdict.details.get("judged_by") == "llm" and r.verdict.outcome != "unparseable" for r in recs)
    assert total["llm"] == llm > 0 and total["rule"] > 0
    assert sum(total[s] for s in SETTLERS) == len(recs)
    md = (run / "summary.md").read_text()
    assert "## Who settled the replies" in md and "| still undecided |" in md.replace(" | not judged", "")
    rep = tmp_path / "report"
    assert main(["report", str(run), "--out", str(rep), "--quiet", "--n-boot", "100", "--no-browser"]) == 0
    report_md = (rep / "report.md").read_text()
    assert "### Who settled the replies" in report_md
    row = next(ln for ln in report_md.splitlines() if ln.startswith("| all |"))
    assert row.endswith(f"| {total['rule']} | {total['llm']} | 4 | {k - 4} | {total['not_judged']} |")


def test_the_summary_shows_the_undecided_share_and_which_rates_exclude_it(tmp_path):
    run = settled_run(tmp_path)
    summary = json.loads((run / "summary.json").read_text())
    recs = read_records(run)
    for g in summary["groups"]:
        mine = [
            r for r in recs if (r.benchmark, r.scenario_id, r.model) == (g["benchmark"], g["scenario_id"], g["model"])
        ]
        ok = [r for r in mine if r.response.error is None]
        want = 100.0 * sum(bool(r.verdict.details.get("undecided")) for r in ok) / len(ok)
        assert g["undecided"] == pytest.approx(want) and g["undecided"] <= g["rates"]["unparseable"] + 1e-9
    md = (run / "summary.md").read_text()
    assert "| undecided % all |" in md and "none excludes it" in md and "kappa over decided" in md
    assert "settled_by" not in summary  # counted where labels exist
