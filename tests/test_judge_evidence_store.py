"""The evidence a verdict names is stored with the record: written as the records' ``evidence``
column, read back into ``Verdict.evidence`` (for the browser and the labelling page), absent for an
undecided verdict, and a run written before the column existed still opens."""

from __future__ import annotations

import pyarrow.parquet as pq

from mmrag.judging import RuleJudge
from mmrag.runs import read_records
from mmrag.runs.records import RunRecord, record_key
from mmrag.runs.store import RunStore
from mmrag.schema import ContentPart, Message, Prompt, Response, Sample


def _record(i: int, reply: str) -> RunRecord:
    s = Sample(id=f"s{i}", benchmark="t", question="When was the tower built?", answers=["1887"], source="viquae")
    p = Prompt(sample_id=s.id, messages=[Message(role="user", content=[ContentPart(type="text", text=s.question)])])
    r = Response(prompt_id=p.id, text=reply)
    return RunRecord(
        key=record_key(s.id, "scen", "m"),
        benchmark="t",
        benchmark_kind="deflection",
        scenario_id="scen",
        scenario={"kind": "oracle"},
        model="m",
        model_fingerprint="m",
        sample=s,
        prompt=p,
        response=r,
        verdict=RuleJudge().judge(s, p, r),
    )


def test_evidence_round_trips_through_the_run_store(tmp_path):
    recs = [_record(0, "It was built in 1887."), _record(1, "It was built in 1902."), _record(2, "Lyon.")]
    assert [r.verdict.outcome for r in recs] == ["correct", "hallucination", "unparseable"]
    with RunStore(tmp_path) as store:
        store.append(recs)
    back = {r.sample.id: r.verdict for r in read_records(tmp_path)}
    for r in recs:
        assert back[r.sample.id].evidence == r.verdict.evidence
    e = back["s1"].evidence
    assert e.step == "slot_conflict" and e.reference == "1887" and e.span == "It was built in 1902."
    assert back["s2"].evidence is None and back["s2"].details["undecided"]
    assert "evidence" in pq.read_schema(next((tmp_path / "records").glob("*.parquet"))).names


def test_a_run_without_the_evidence_column_still_opens(tmp_path):
    with RunStore(tmp_path) as store:
        store.append([_record(0, "It was built in 1887.")])
    seg = next((tmp_path / "records").glob("*.parquet"))
    t = pq.read_table(seg)
    pq.write_table(t.drop(["evidence"]), seg)  # as an older mmrag wrote it
    (v,) = [r.verdict for r in read_records(tmp_path)]
    assert v.outcome == "correct" and v.evidence is None
