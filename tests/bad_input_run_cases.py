"""The bad-input cases of ``mmrag run``: configs, flags, ``--resume``, ``--source`` files, the cache.

The largest group of :func:`bad_inputs.build_cases`, apart so that each file stays readable; the
files they name are :class:`bad_input_files.CaseFiles`.
"""

from __future__ import annotations

import json

from bad_input_files import HB_QUESTION, NOT_UTF8, CaseFiles, Cases, defl, jsonl, knowhal, parquet_file, write


def run_cases(f: CaseFiles) -> Cases:
    t, out, img, corrupt, bomb, kb_dir = f.t, f.out, f.img, f.corrupt, f.bomb, f.kb_dir
    hb_fake_pq, hb_bad_bytes, base, run, cfg, run_src = f.hb_fake_pq, f.hb_bad_bytes, f.base, f.run, f.cfg, f.run_src
    openai = list(f.openai)
    cases: Cases = {
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
        "gen-kwargs api key": (
            ["run", "--benchmark", "demo", *openai, "--gen-kwargs", "api_key=sk-planted-12345678", *run],
            ["--gen-kwargs", "api_key", "--api-key-env"],
            out,
        ),
        "gen-kwargs bearer value": (
            ["run", "--benchmark", "demo", *openai, "--gen-kwargs", "authorization=Bearer sk-planted-1234", *run],
            ["--gen-kwargs", "authorization", "--api-key-env"],
            out,
        ),
        "config settings extra token": (
            [
                "run",
                "--config",
                cfg(
                    "c15.yaml",
                    "benchmarks: [{name: demo}]\nmodels: [{backend: openai, model: m, base_url: "
                    "'http://127.0.0.1:9/v1', settings: {extra: {access_token: planted-123456}}}]\n",
                ),
                *run,
            ],
            ["c15.yaml", "settings.extra", "--api-key-env"],
            out,
        ),
        "base url with userinfo": (
            [
                "run",
                "--benchmark",
                "demo",
                "--model",
                "openai:m",
                "--base-url",
                "http://u:p-secret@127.0.0.1:9/v1",
                *run,
            ],
            ["user:password@", "--api-key-env"],
            out,
        ),
        "one model under two spellings": (
            ["run", "--benchmark", "demo", "--model", "sim-vlm,sim-vlm:text_prior=0.5", *run],
            ["--model", "'sim-vlm'", "'sim-vlm:text_prior=0.5'", "once"],
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
    }
    return cases
