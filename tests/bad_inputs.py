"""Writers of bad inputs for tests/test_bad_input.py and tests/test_fuzz_inputs.py.

:func:`build_cases` writes every file once into a folder and returns ``name -> (argv, substrings
the error must contain, a path that must not exist afterwards)``.
"""

from __future__ import annotations

import io
import json
import struct
import zlib
from pathlib import Path

from PIL import Image

GOOD_KB = {"id": "d1", "modality": "text", "text": "The capital of Varnholt is Quellmar.", "entity_id": "e1"}
HB_QUESTION = "What is shown?\nA. a cat\nB. a dog\nC. a bird\nD. a fish\nE. None of the above"
NOT_UTF8 = b'{"id": "d1", "modality": "text", "text": "caf\xe9 \xff"}\n'


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data)
    return path


def jsonl(path: Path, rows: list) -> Path:
    return write(path, "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))


def defl(**over):
    rec = {
        "sample_id": "s1",
        "question_id": "q1",
        "question": "What is the capital of Varnholt?",
        "answer": "Quellmar",
        "gold_contexts": [{"doc_id": "d1", "modality": "text"}],
        "source": "demo",
    }
    rec.update(over)
    return rec


def knowhal(**over):
    rec = {
        "id": "k1",
        "pair_id": "p1",
        "entity_id": "e1",
        "image": "img.png",
        "dimension": "E",
        "polarity": "positive",
        "question": "Who is this?",
        "answers": ["Ada"],
    }
    rec.update(over)
    return rec


def png_bytes(color: str = "red") -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), color).save(buf, format="PNG")
    return buf.getvalue()


def bomb_png(side: int = 100_000) -> bytes:
    """A valid PNG header declaring ``side`` x ``side`` pixels (a decompression bomb) with no pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b"")


def humblebench_parquet(path: Path, images: list[bytes]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [
        {
            "question_id": i + 1,
            "question": HB_QUESTION,
            "label": "A",
            "type": "Object",
            "image": {"bytes": b, "path": f"{i}.png"},
        }
        for i, b in enumerate(images)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def parquet_file(path: Path) -> Path:
    """Any parquet file (given where JSONL is expected)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": ["d1"], "text": ["x"]}), path)
    return path


def build_cases(t: Path) -> dict[str, tuple[list[str], list[str], Path | None]]:
    out = t / "out"
    img = t / "img.png"
    Image.new("RGB", (8, 8), "red").save(img)
    (t / "defl").mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (8, 8), "red").save(t / "defl" / "q.tiff")
    corrupt = write(t / "corrupt.png", "definitely not a png")
    bomb = write(t / "defl" / "bomb.png", bomb_png())
    jsonl(t / "defl" / "kb.jsonl", [GOOD_KB])  # the knowledge base beside the deflection files
    pq = parquet_file(t / "data.parquet")
    bad_utf8 = write(t / "bad.jsonl", NOT_UTF8)
    empty = write(t / "empty.jsonl", "")
    write(t / "hb" / "img.png", img.read_bytes())
    hb_fake_pq = write(t / "hbfake" / "h.parquet", json.dumps({"question_id": 1}) + "\n")
    hb_bad_bytes = humblebench_parquet(t / "hbbytes" / "h.parquet", [b"these bytes are not an image"])
    kb_dir = t / "kbdir"
    kb_dir.mkdir()
    base = "benchmarks: [{name: demo}]\nmodels: [{backend: always-deflect}]\n"
    run = ["--out", str(out)]

    def cfg(name: str, text: str | bytes) -> str:
        return str(write(t / name, text))

    def run_src(bench: str, src: Path, *extra: str) -> list[str]:
        return ["run", "--benchmark", bench, "--source", str(src), "--model", "always-deflect", *extra, *run]

    def validate(path: Path, kind: str) -> list[str]:
        return ["benchmark", "validate", str(path), "--benchmark", kind]

    openai = ["--model", "openai:m", "--base-url", "http://127.0.0.1:9/v1"]
    cases = {
        "config misspelt field": (
            ["run", "--config", cfg("c1.yaml", base + "limitt: 3\n")],
            ["c1.yaml", "limitt"],
            out,
        ),
        "config invalid yaml": (["run", "--config", cfg("c2.yaml", "benchmarks: [\n")], ["c2.yaml", "YAML"], out),
        "config missing": (["run", "--config", str(t / "nope.yaml")], ["nope.yaml", "not found"], out),
        "config wrong type": (
            ["run", "--config", cfg("c3.yaml", base + "batch_size: many\n")],
            ["c3.yaml", "batch_size"],
            out,
        ),
        "config not utf-8": (
            ["run", "--config", cfg("c4.yaml", base.encode() + b"# caf\xe9\n")],
            ["c4.yaml:3", "UTF-8"],
            out,
        ),
        "config duplicate key": (
            ["run", "--config", cfg("c5.yaml", base + "limit: 2\nlimit: 3\n")],
            ["c5.yaml:4", "duplicate key 'limit'"],
            out,
        ),
        "config limit true": (["run", "--config", cfg("c6.yaml", base + "limit: true\n")], ["c6.yaml", "limit"], out),
        "config temperature negative": (
            ["run", "--config", cfg("c7.yaml", base + "settings: {temperature: -1}\n")],
            ["c7.yaml", "settings.temperature"],
            out,
        ),
        "config max_new_tokens zero": (
            [
                "run",
                "--config",
                cfg(
                    "c8.yaml",
                    "benchmarks: [{name: demo}]\nmodels: [{backend: always-deflect, settings: {max_new_tokens: 0}}]\n",
                ),
            ],
            ["c8.yaml", "max_new_tokens"],
            out,
        ),
        "config oracle with distractors": (
            ["run", "--config", cfg("c9.yaml", base + "scenarios: [{kind: oracle, n_distractors: 5}]\n")],
            ["c9.yaml", "scenarios", "n_distractors"],
            out,
        ),
        "config benchmark option wrongly typed": (
            [
                "run",
                "--config",
                cfg(
                    "c10.yaml", "benchmarks: [{name: demo, options: {seed: x}}]\nmodels: [{backend: always-deflect}]\n"
                ),
                *run,
            ],
            ["options.seed", "integer"],
            out,
        ),
        "config retriever path names a non-class": (
            [
                "run",
                "--config",
                cfg(
                    "c11.yaml", base + "scenarios: [{kind: realistic}]\nretrieval: {retrievers: {text: 'os:getcwd'}}\n"
                ),
                "--allow-code",
                *run,
            ],
            ["os:getcwd", "not a class"],
            out,
        ),
        "config retriever path without allow-code": (
            [
                "run",
                "--config",
                cfg(
                    "c12.yaml",
                    base
                    + "scenarios: [{kind: realistic}]\nretrieval: {retrievers: {text: 'custom_retriever_mod:KeywordRetriever'}}\n",
                ),
                *run,
            ],
            ["custom_retriever_mod:KeywordRetriever", "--allow-code"],
            out,
        ),
        "config ftp base url": (
            [
                "run",
                "--config",
                cfg(
                    "c13.yaml",
                    "benchmarks: [{name: demo}]\nmodels: [{backend: openai, model: m, base_url: 'ftp://host/v1'}]\n",
                ),
            ],
            ["c13.yaml", "models.0.base_url", "http"],
            out,
        ),
        "config negative timeout": (
            [
                "run",
                "--config",
                cfg(
                    "c14.yaml",
                    "benchmarks: [{name: demo}]\nmodels: [{backend: openai, model: m, base_url: 'http://127.0.0.1:9/v1', options: {timeout: -1}}]\n",
                ),
                *run,
            ],
            ["models.0.options.timeout"],
            out,
        ),
        "unknown benchmark": (
            ["run", "--benchmark", "nosuchbench", "--model", "always-deflect", *run],
            ["nosuchbench"],
            out,
        ),
        "unknown model backend": (["run", "--benchmark", "demo", "--model", "nosuch:model", *run], ["nosuch"], out),
        "unknown baseline": (["run", "--benchmark", "demo", "--model", "always-wrong", *run], ["always-wrong"], out),
        "unknown scenario": (
            ["run", "--benchmark", "demo", "--model", "always-deflect", "--scenarios", "oracel", *run],
            ["oracel", "--scenarios"],
            out,
        ),
        "distractors not ints": (
            ["run", "--benchmark", "demo", "--model", "always-deflect", "--distractors", "two", *run],
            ["--distractors"],
            out,
        ),
        "distractors negative": (
            [
                "run",
                "--benchmark",
                "demo",
                "--model",
                "always-deflect",
                "--scenarios",
                "realistic",
                "--distractors",
                "-1",
                *run,
            ],
            ["'--distractors'"],
            out,
        ),
        "unknown strictness": (
            ["run", "--benchmark", "demo", "--model", "always-deflect", "--strictness", "harsh", *run],
            ["strictness"],
            out,
        ),
        "unknown negative modality": (
            [
                "run",
                "--benchmark",
                "demo",
                "--model",
                "always-deflect",
                "--scenarios",
                "realistic",
                "--negative-modality",
                "audio",
                *run,
            ],
            ["negative-modality"],
            out,
        ),
        "max-new-tokens negative": (
            ["run", "--benchmark", "demo", "--model", "always-deflect", "--max-new-tokens", "-1", *run],
            ["--max-new-tokens"],
            out,
        ),
        "max-new-tokens zero": (
            ["run", "--benchmark", "demo", "--model", "always-deflect", "--max-new-tokens", "0", *run],
            ["--max-new-tokens"],
            out,
        ),
        "resume without manifest": (["run", "--resume", str(t)], ["manifest.json"], None),
        "resume with damaged manifest": (
            ["run", "--resume", str(write(t / "dmg" / "manifest.json", b"\xff{").parent)],
            ["manifest.json", "unreadable"],
            None,
        ),
        "api key env unset": (
            ["run", "--benchmark", "demo", *openai, "--api-key-env", "MMRAG_TEST_UNSET_KEY", *run],
            ["MMRAG_TEST_UNSET_KEY"],
            out,
        ),
        "source file missing": (run_src("deflection", t / "missing.jsonl"), ["missing.jsonl"], out),
        "deflection invalid json": (
            run_src("deflection", jsonl(t / "defl" / "a.jsonl", [defl(), "{oops"])),
            ["a.jsonl:2"],
            out,
        ),
        "deflection missing field": (
            run_src(
                "deflection",
                jsonl(
                    t / "defl" / "b.jsonl", [defl(), {k: v for k, v in defl(sample_id="s2").items() if k != "answer"}]
                ),
            ),
            ["b.jsonl:2", "answer"],
            out,
        ),
        "deflection missing image": (
            run_src("deflection", jsonl(t / "defl" / "c.jsonl", [defl(query_images=["no_such.png"])])),
            ["c.jsonl", "no_such.png"],
            out,
        ),
        "deflection corrupt image": (
            run_src("deflection", jsonl(t / "defl" / "d.jsonl", [defl(query_images=[str(corrupt)])])),
            ["corrupt.png"],
            out,
        ),
        "deflection unknown source": (
            run_src("deflection", jsonl(t / "defl" / "e.jsonl", [defl(source="okvqa")])),
            ["e.jsonl:1", "source"],
            out,
        ),
        "deflection not utf-8": (
            run_src("deflection", write(t / "defl" / "f.jsonl", json.dumps(defl()).encode() + b"\n" + NOT_UTF8)),
            ["f.jsonl:2", "UTF-8"],
            out,
        ),
        "deflection parquet as jsonl": (
            run_src("deflection", parquet_file(t / "defl" / "g.jsonl")),
            ["g.jsonl", "parquet"],
            out,
        ),
        "deflection NaN in numeric_ranges": (
            run_src(
                "deflection",
                write(t / "defl" / "h.jsonl", json.dumps(defl())[:-1] + ', "numeric_ranges": [[NaN, 2.0]]}\n'),
            ),
            ["h.jsonl:1", "numeric_ranges.0.0", "non-finite"],
            out,
        ),
        "deflection Infinity in metadata": (
            run_src(
                "deflection", write(t / "defl" / "i.jsonl", json.dumps(defl())[:-1] + ', "metadata": {"w": 1e999}}\n')
            ),
            ["i.jsonl:1", "metadata.w", "non-finite"],
            out,
        ),
        "deflection empty file": (
            run_src("deflection", write(t / "defl" / "j.jsonl", "\n")),
            ["j.jsonl", "no samples"],
            out,
        ),
        "deflection TIFF image for an openai model": (
            [
                "run",
                "--benchmark",
                "deflection",
                "--source",
                str(jsonl(t / "defl" / "k.jsonl", [defl(query_images=["q.tiff"])])),
                *openai,
                "--scenarios",
                "parametric",
                *run,
            ],
            ["q.tiff", "image/tiff", "does not accept", "openai:m"],
            out,
        ),
        "deflection decompression bomb": (
            run_src("deflection", jsonl(t / "defl" / "l.jsonl", [defl(query_images=[bomb.name])])),
            ["l.jsonl:1", "query_images.0", "too many pixels"],
            out,
        ),
        "knowhal bad dimension": (
            run_src("knowhal", jsonl(t / "kh.jsonl", [knowhal(image=str(img), dimension="X")])),
            ["kh.jsonl:1", "dimension"],
            out,
        ),
        "knowhal not utf-8": (run_src("knowhal", write(t / "kh2.jsonl", NOT_UTF8)), ["kh2.jsonl:1", "UTF-8"], out),
        "humblebench bad label": (
            run_src(
                "humblebench",
                jsonl(
                    t / "hb" / "metadata.jsonl",
                    [
                        {
                            "question_id": 1,
                            "question": HB_QUESTION,
                            "label": "F",
                            "type": "Object",
                            "file_name": "img.png",
                        }
                    ],
                ),
            ),
            ["metadata.jsonl:1", "label"],
            out,
        ),
        "humblebench jsonl as parquet": (run_src("humblebench", hb_fake_pq), ["h.parquet", "cannot read parquet"], out),
        "humblebench parquet with non-image bytes": (
            run_src("humblebench", hb_bad_bytes),
            ["h.parquet:1", "image.bytes", "cannot be decoded"],
            out,
        ),
        "cache file is not sqlite": (
            [
                "run",
                "--benchmark",
                "demo",
                "--model",
                "always-deflect",
                "--cache-path",
                str(write(t / "cache.sqlite", b"garbage" * 2000)),
                *run,
            ],
            ["cache.sqlite", "--no-cache", "delete"],
            out,
        ),
        "cache path is a folder": (
            ["run", "--benchmark", "demo", "--model", "always-deflect", "--cache-path", str(kb_dir), *run],
            ["kbdir", "--no-cache"],
            out,
        ),
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
