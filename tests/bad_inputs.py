"""Bad inputs for tests/test_bad_input.py: every case, by name, written into one folder.

:func:`build_cases` writes every file once into a folder and returns ``name -> (argv, substrings
the error must contain, a path that must not exist afterwards)``.  The ``mmrag run`` cases are
``tests/bad_input_run_cases.py``; the cases of the other commands (validate, index, judge, score,
sweep, curate) are here; the writers and shared files are ``tests/bad_input_files.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

from bad_input_files import GOOD_KB, CaseFiles, Cases, defl, jsonl, write
from bad_input_run_cases import run_cases


def build_cases(t: Path) -> Cases:
    f = CaseFiles.write_all(t)
    pq, bad_utf8, empty, kb_dir, cfg, validate = f.pq, f.bad_utf8, f.empty, f.kb_dir, f.cfg, f.validate
    cases: Cases = {
        **run_cases(f),
        "validate reports line and field": (
            validate(jsonl(t / "v.jsonl", [defl(), defl(gold_contexts=[])]), "deflection"),
            ["v.jsonl", "2", "gold_contexts"],
            None,
        ),
        "validate deflection not utf-8": (validate(bad_utf8, "deflection"), ["bad.jsonl:1", "UTF-8"], None),
        "validate kb not utf-8": (validate(bad_utf8, "kb"), ["bad.jsonl:1", "UTF-8"], None),
        "validate knowhal not utf-8": (validate(bad_utf8, "knowhal"), ["bad.jsonl:1", "UTF-8"], None),
        "validate humblebench not utf-8": (validate(bad_utf8, "humblebench"), ["bad.jsonl:1", "UTF-8"], None),
        "validate deflection parquet": (validate(pq, "deflection"), ["data.parquet", "parquet"], None),
        "validate kb parquet": (validate(pq, "kb"), ["data.parquet", "parquet"], None),
        "validate knowhal parquet": (validate(pq, "knowhal"), ["data.parquet", "parquet"], None),
        "validate kb on a folder": (validate(kb_dir, "kb"), ["kbdir", "folder"], None),
        "validate NaN": (
            validate(
                write(t / "vn.jsonl", json.dumps(defl())[:-1] + ', "numeric_ranges": [[0, Infinity]]}\n'), "deflection"
            ),
            ["vn.jsonl:1", "numeric_ranges.0.1"],
            None,
        ),
        "validate empty file": (validate(empty, "kb"), ["empty.jsonl", "no records"], None),
        "kb record missing text": (
            [
                "index",
                "build",
                "--kb",
                str(jsonl(t / "kb2.jsonl", [GOOD_KB, {"id": "d2", "modality": "text"}])),
                "--kind",
                "text",
                "--out",
                str(t / "idx_bad"),
            ],
            ["kb2.jsonl:2"],
            t / "idx_bad",
        ),
        "empty kb": (
            [
                "index",
                "build",
                "--kb",
                str(write(t / "kb3.jsonl", "")),
                "--kind",
                "text",
                "--out",
                str(t / "idx_empty"),
            ],
            ["kb3.jsonl", "empty"],
            t / "idx_empty",
        ),
        "kb not utf-8": (
            ["index", "build", "--kb", str(bad_utf8), "--kind", "text", "--out", str(t / "idx_u")],
            ["bad.jsonl:1", "UTF-8"],
            t / "idx_u",
        ),
        "kb parquet as jsonl": (
            ["index", "build", "--kb", str(pq), "--kind", "text", "--out", str(t / "idx_p")],
            ["data.parquet", "parquet"],
            t / "idx_p",
        ),
        "index shard size negative": (
            [
                "index",
                "build",
                "--kb",
                str(jsonl(t / "kb4.jsonl", [GOOD_KB])),
                "--kind",
                "text",
                "--shard-size",
                "-1",
                "--out",
                str(t / "idx_s"),
            ],
            ["--shard-size"],
            t / "idx_s",
        ),
        "index dir missing": (["index", "info", str(t / "no_index")], ["no_index"], None),
        "judge input missing field": (
            [
                "judge",
                "--input",
                str(
                    jsonl(
                        t / "j.jsonl",
                        [{"question": "q", "answers": ["a"], "response": "a"}, {"question": "q", "response": "a"}],
                    )
                ),
                "--output",
                str(t / "j_out.jsonl"),
            ],
            ["j.jsonl:2", "answers"],
            t / "j_out.jsonl",
        ),
        "judge input not utf-8": (
            ["judge", "--input", str(bad_utf8), "--output", str(t / "j2.jsonl")],
            ["bad.jsonl:1", "UTF-8"],
            t / "j2.jsonl",
        ),
        "judge input parquet": (
            ["judge", "--input", str(pq), "--output", str(t / "j3.jsonl")],
            ["data.parquet", "parquet"],
            t / "j3.jsonl",
        ),
        "judge-agreement not utf-8": (
            ["judge-agreement", str(bad_utf8), str(bad_utf8)],
            ["bad.jsonl:1", "UTF-8"],
            None,
        ),
        "judge-agreement parquet": (["judge-agreement", str(pq), str(pq)], ["data.parquet", "parquet"], None),
        "judge-agreement id twice": (
            [
                "judge-agreement",
                str(jsonl(t / "ja_a.jsonl", [{"id": "x", "label": "correct"}, {"id": "y", "label": "deflection"}])),
                str(
                    jsonl(
                        t / "ja_b.jsonl",
                        [
                            {"id": "x", "outcome": "correct"},
                            {"id": "y", "outcome": "correct"},
                            {"id": "x", "outcome": "deflection"},
                        ],
                    )
                ),
            ],
            ["ja_b.jsonl:3", "'x'", "twice", "id"],
            None,
        ),
        **output_folder_cases(t),
        "judge-agreement two empty files": (
            ["judge-agreement", str(empty), str(empty)],
            ["empty.jsonl", "no labelled records"],
            None,
        ),
        "score predictions malformed": (
            ["score", "humblebench", "--predictions", str(jsonl(t / "p.jsonl", [{"question_id": 1}]))],
            ["p.jsonl:1"],
            None,
        ),
        "score predictions not utf-8": (
            ["score", "humblebench", "--predictions", str(bad_utf8)],
            ["bad.jsonl:1", "UTF-8"],
            None,
        ),
        "score predictions parquet": (
            ["score", "humblebench", "--predictions", str(pq)],
            ["data.parquet", "parquet"],
            None,
        ),
        "sweep bad field": (
            ["sweep", "--config", cfg("s.yaml", "name: x\naxes: {n_distractorz: [1, 2]}\n")],
            ["s.yaml", "n_distractorz"],
            None,
        ),
        "sweep duplicate key": (
            ["sweep", "--config", cfg("sd.yaml", "name: x\naxes: {n_distractors: [1]}\naxes: {strictness: [none]}\n")],
            ["sd.yaml:3", "duplicate key 'axes'"],
            None,
        ),
        "curate bad field": (
            [
                "curate",
                "--config",
                cfg("cu.yaml", "benchmark: {name: demo}\ngating_models: [{backend: always-deflect}]\nkmin: 3\n"),
            ],
            ["cu.yaml", "kmin"],
            None,
        ),
    }
    return cases


def output_folder_cases(t: Path) -> Cases:
    """``report --out`` / ``export --out`` into a folder of a user's files, and a label import whose
    ``at`` is not a time: on a small run written by ``tests/runfactory.py``."""
    from runfactory import build_run

    run = build_run(t / "labelled", full=False)
    notes = t / "notes"
    write(notes / "report.md", "my own notes\n")
    key = json.loads((run / "samples.jsonl").read_text().splitlines()[0])["key"]
    line = {"key": key, "label": "correct", "labeller": "ann", "at": "not-a-date"}
    return {
        "report out into a folder of other files": (
            ["report", str(run), "--out", str(notes), "--quiet", "--no-browser", "--n-boot", "100"],
            ["notes", "report.md", "--out"],
            notes / "tables",
        ),
        "export out into a folder of other files": (
            ["export", str(run), "--format", "lmms-eval", "--out", str(notes)],
            ["notes", "report.md", "--out"],
            notes / ".mmrag-export",
        ),
        "label import at not a date": (
            ["label", str(run), "--import", str(jsonl(t / "at.jsonl", [line]))],
            ["at.jsonl:1", "'at'", "not-a-date"],
            run / "labels" / "ann.jsonl",
        ),
    }
