"""The source registry, the `benchmark build-deflection` command, and the deflection loader reading
what the builders wrote: samples, images, gold documents and multiple-choice options."""

from __future__ import annotations

import json

import pytest
from sourcebuilds import FIX, build_infoseek, by_id, load, mmdoc_images, mrag_parquet
from typer.testing import CliRunner

from mmrag.benchmarks.sources import SOURCES, build_deflection, kb_path_for
from mmrag.commands.benchmark_build import app
from mmrag.errors import InputError


def test_registry_lists_the_six_sources():
    assert SOURCES.names() == ["evqa", "infoseek", "mmdocrag", "mragbench", "viquae", "webqa"]
    with pytest.raises(InputError, match="unknown deflection source 'okvqa'"):
        build_deflection("okvqa", FIX / "evqa_val.csv", "x.jsonl")


# ---------------------------------------------------------------- CLI
def test_cli_build_deflection(tmp_path):
    out = tmp_path / "cli" / "mm.jsonl"
    runner = CliRunner()
    res = runner.invoke(
        app,
        [
            "build-deflection",
            "--dataset",
            "mmdocrag",
            "--data",
            str(FIX / "mmdocrag_dev_15.jsonl"),
            "--images",
            str(mmdoc_images(tmp_path)),
            "--out",
            str(out),
            "--limit",
            "2",
            "--option",
            "image_quote_modality=image",
        ],
    )
    assert res.exit_code == 0, res.output
    stats = json.loads(res.stdout)
    assert stats["records_read"] == 2 and stats["samples_written"] == 2 and stats["kb_out"].endswith("mm.kb.jsonl")
    recs, kb = load(out)
    assert by_id(recs)["mmdocrag:1:0"].gold_contexts[0].modality == "image" and kb["mmdocrag:1:image1"].text == ""
    bad = runner.invoke(
        app,
        [
            "build-deflection",
            "--dataset",
            "mmdocrag",
            "--data",
            str(tmp_path / "nope.jsonl"),
            "--out",
            str(out),
            "--option",
            "novalue",
        ],
    )
    assert bad.exit_code != 0 and isinstance(bad.exception, InputError)
    assert "expected KEY=VALUE" in str(bad.exception)


# ---------------------------------------------------------------- the deflection loader reads the builds
def test_builds_load_as_deflection_benchmark(tmp_path):
    from mmrag.benchmarks.deflection import DeflectionBenchmark

    out, _ = build_infoseek(tmp_path)
    bench = DeflectionBenchmark(out, kb=kb_path_for(out))
    samples = {s.id: s for s in bench.samples()}
    height = samples["infoseek:infoseek_val_00000001:0"]
    assert height.answers == ["4478", "4,478 metre"] and height.numeric_ranges == [(4030.2, 4925.8)]
    assert height.images[0].load().size == (8, 8) and height.gold_doc_ids == ["infoseek:Q1374:p1"]
    assert {d.id for d in bench.documents()} >= {g for s in samples.values() for g in s.gold_doc_ids}
    out = tmp_path / "mrag.jsonl"
    build_deflection("mragbench", mrag_parquet(tmp_path), out)
    car = {s.id: s for s in DeflectionBenchmark(out, kb=kb_path_for(out)).samples()}["mragbench:0:0"]
    assert [c.letter for c in car.choices] == ["A", "B", "C", "D"] and car.label == "B"
    assert car.metadata["positive_modality"] == "image" and len(car.metadata["negative_doc_ids"]) == 1
