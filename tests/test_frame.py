"""mmrag.runs.frame.load: one row per record, effective scenario knobs, tolerant tail, strict middle."""

from __future__ import annotations

import json
import warnings

import pytest
from runfactory import MODELS, build_run, humblebench_records, write_run

from mmrag.errors import InputError
from mmrag.runs.frame import COLUMNS, TruncatedLineWarning, load, read_records


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return build_run(tmp_path_factory.mktemp("frame"))


def test_one_row_per_record_with_all_columns(run_dir):
    df = load(run_dir)
    n_lines = sum(1 for ln in (run_dir / "samples.jsonl").read_text().splitlines() if ln.strip())
    assert len(df) == n_lines
    assert list(df.columns) == list(COLUMNS)
    assert df.key.is_unique
    assert set(df.benchmark_kind) == {"deflection", "humblebench", "knowhal"}
    assert set(df.model) == set(MODELS)
    assert set(df.outcome) == {"correct", "deflection", "hallucination", "unparseable"}
    # exactly one outcome flag per row, matching the outcome column
    flags = df[["correct", "deflection", "hallucination", "unparseable"]]
    assert (flags.sum(axis=1) == 1).all()
    assert (df.loc[df.correct, "outcome"] == "correct").all()
    assert set(df.run) == {"run"}


def test_effective_scenario_knobs(run_dir):
    df = load(run_dir)
    par = df[df.kind == "parametric"]
    assert (par.n_distractors == 0).all() and par.positive_modality.isna().all() and par.negative_modality.isna().all()
    ora = df[df.kind == "oracle"]
    assert (ora.n_distractors == 0).all() and ora.negative_modality.isna().all()
    assert set(ora.positive_modality) == {"text", "image"}
    rea = df[df.kind == "realistic"]
    assert set(rea.n_distractors) == {1, 2, 4}
    assert set(rea.negative_modality) == {"text", "image", "multimodal"}
    # the number of negative contexts actually in the prompt matches the effective knob
    assert (rea.n_negative == rea.n_distractors).all() and (rea.n_gold == 1).all()
    adv = df[df.kind == "adversarial"]
    assert (adv.n_gold == 0).all() and (adv.n_negative == 2).all()
    assert set(df[df.benchmark_kind == "deflection"].strictness) == {"none", "soft", "moderate", "severe"}


def test_humblebench_and_knowhal_columns(run_dir):
    df = load(run_dir)
    hb = df[df.benchmark_kind == "humblebench"]
    assert set(hb.stress) == {"common", "noise_image", "nota_only", "shuffle_options", "cautious_prompt"}
    assert set(hb.type) == {"Object", "Attribute", "Relation"}
    assert (hb.nota_letter == "E").all()
    # NOTA-only relabels every item to the NOTA letter
    assert hb[hb.stress == "nota_only"].label_is_nota.all()
    assert (hb.chose_nota == (hb.extracted == "E")).all()
    kh = df[df.benchmark_kind == "knowhal"]
    assert set(kh.dimension) == {"E", "A", "R", "K"} and set(kh.pair_id) == {f"kh-pair-{q}" for q in range(8)}
    assert set(kh.polarity) == {"positive", "negative"}
    assert (df[df.benchmark_kind != "humblebench"].stress == "common").all()


def test_truncated_last_line_is_ignored_with_warning(tmp_path):
    recs = humblebench_records(tmp_path, n_questions=2)
    d = write_run(tmp_path / "killed", recs, truncated_tail=True)
    with pytest.warns(TruncatedLineWarning, match=r"samples.jsonl:\d+"):
        df = load(d)
    assert len(df) == len(recs)


def test_malformed_line_in_the_middle_names_file_and_line(tmp_path):
    recs = humblebench_records(tmp_path, n_questions=2)
    d = write_run(tmp_path / "bad", recs)
    lines = (d / "samples.jsonl").read_text().splitlines()
    lines[2] = lines[2][:40]
    (d / "samples.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as ei:
        load(d)
    assert ei.value.line == 3 and ei.value.path.endswith("samples.jsonl")


def test_invalid_record_names_the_field(tmp_path):
    recs = humblebench_records(tmp_path, n_questions=1)
    d = write_run(tmp_path / "badfield", recs)
    lines = (d / "samples.jsonl").read_text().splitlines()
    obj = json.loads(lines[1])
    obj["verdict"]["outcome"] = "maybe"
    lines[1] = json.dumps(obj)
    (d / "samples.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as ei:
        load(d)
    assert ei.value.line == 2 and ei.value.field == "verdict.outcome"


def test_missing_run_dir_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="samples.jsonl"):
        load(tmp_path / "nowhere")


def test_several_runs_are_concatenated_with_a_run_column(tmp_path):
    a = write_run(tmp_path / "a", humblebench_records(tmp_path, n_questions=2))
    b = write_run(tmp_path / "b", humblebench_records(tmp_path, n_questions=3))
    df = load([a, b])
    assert df.groupby("run").size().to_dict() == {"a": 2 * 5 * 2, "b": 3 * 5 * 2}
    # two runs with the same directory name are told apart by their full path
    c = write_run(tmp_path / "x" / "a", humblebench_records(tmp_path, n_questions=1))
    df2 = load([a, c])
    assert df2.run.nunique() == 2 and all("/" in r for r in df2.run.unique())


def test_empty_run_gives_empty_frame_with_columns(tmp_path):
    d = write_run(tmp_path / "empty", [])
    df = load(d)
    assert df.empty and list(df.columns) == list(COLUMNS)


def test_duplicate_key_keeps_last(tmp_path):
    recs = humblebench_records(tmp_path, n_questions=1)
    dup = recs[0].model_copy(deep=True)
    dup.verdict.outcome = "unparseable"
    d = write_run(tmp_path / "dup", [*recs, dup])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = read_records(d)
    assert any("duplicate key" in str(x.message) for x in w)
    assert len(got) == len(recs)
    assert [r for r in got if r.key == dup.key][0].verdict.outcome == "unparseable"
