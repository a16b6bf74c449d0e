"""Nothing lost, nothing silently wrong: a damaged response cache, a curation
folder holding another curation, a full disk, the spool folders of killed index builds, one model
under two spellings, a labelled file holding one id twice, and ``report``/``export`` pointed at a
folder they did not make."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from PIL import Image

from mmrag.cli import main
from mmrag.errors import InputError
from mmrag.models.cache import ResponseCache
from mmrag.schema import Response


# -- item 5: the response cache ---------------------------------------------------------------------
def _filled_cache(path: Path, n: int = 400) -> list[str]:
    keys = [f"{i:064x}" for i in range(n)]
    with ResponseCache(path) as c:
        c.put_many([(k, "fp", Response(prompt_id=f"p{i}", text="answer " * 40)) for i, k in enumerate(keys)])
    return keys


def test_an_unreadable_cache_row_is_a_miss_and_is_replaced(tmp_path):
    path = tmp_path / "c.sqlite"
    keys = _filled_cache(path, 3)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE responses SET response = '{not json' WHERE key = ?", (keys[1],))
    conn.commit()
    conn.close()
    with ResponseCache(path) as c:
        found = c.get_many(keys)
        assert set(found) == {keys[0], keys[2]} and c.unreadable == 1 and c.misses == 1
        c.put(keys[1], "fp", Response(prompt_id="p1", text="again"))
        assert c.get(keys[1]).text == "again"


def test_damaged_cache_pages_are_one_clear_error(tmp_path):
    path = tmp_path / "c.sqlite"
    keys = _filled_cache(path)
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    data = bytearray(path.read_bytes())
    page = 4096
    for off in range(2 * page, len(data), page):  # keep the header page, scramble the b-tree pages
        data[off : off + 64] = b"\xa5" * 64
    path.write_bytes(bytes(data))
    with pytest.raises(InputError) as info:
        with ResponseCache(path) as c:
            c.get_many(keys)
    msg = str(info.value)
    assert str(path) in msg and "--no-cache" in msg and "delete" in msg


# -- item 6: curate --out ------------------------------------------------------------------------------
def test_curate_refuses_a_folder_holding_another_curation(tmp_path, capsys):
    from mmrag.curation import load_curate_config

    base = {"benchmark": {"name": "demo"}, "gating_models": [{"backend": "always-deflect"}], "limit": 30}
    first = tmp_path / "a.yaml"
    first.write_text(yaml.safe_dump(base))
    out = tmp_path / "out"
    out.mkdir()
    (out / "config.json").write_text(json.dumps(load_curate_config(first).model_dump(mode="json")))
    (out / "stage1_parametric.jsonl").write_text('{"sample_id": "s1", "kept": true}\n')
    second = tmp_path / "b.yaml"
    second.write_text(yaml.safe_dump({**base, "limit": 20}))
    assert main(["curate", "--config", str(second), "--out", str(out)]) != 0
    err = capsys.readouterr().err
    assert "different curation" in err and "limit" in err and "config.json" in err
    orphan = tmp_path / "orphan"
    orphan.mkdir()
    (orphan / "stage1_parametric.jsonl").write_text("{}\n")
    assert main(["curate", "--config", str(second), "--out", str(orphan)]) != 0
    assert "no config.json" in capsys.readouterr().err


# -- item 7: a full disk ---------------------------------------------------------------------------------
def _small_filesystem(where: Path, size: str) -> bool:
    """A real tmpfs of ``size`` (root, or a user+mount namespace is not available from pytest)."""
    where.mkdir()
    if os.geteuid() != 0:
        return False
    return (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True
        ).returncode
        == 0
    )


def _records(run: Path) -> dict[str, dict]:
    """The run's committed records by key (a torn segment is not committed, so it is not read)."""
    from mmrag.runs import read_records

    if not (run / "manifest.json").exists():
        return {}
    return {r.key: r.model_dump(mode="json") for r in read_records(run)}


def test_a_full_disk_is_one_clear_error_and_the_run_resumes(tmp_path, capsys, monkeypatch, module_home):
    mnt = tmp_path / "small"
    real_fs = _small_filesystem(mnt, "1m")
    try:
        run = mnt / "run"
        cfg = tmp_path / "run.yaml"  # small segments: the disk fills between two commits, not before the first
        cfg.write_text(
            "benchmarks: [{name: demo}]\nmodels: [{backend: always-deflect}]\n"
            "scenarios: [{kind: parametric}]\nlimit: 60\nflush_every: 4\nflush_seconds: 0.01\n"
            "cache: {enabled: false}\n"
        )
        argv = ["run", "--config", str(cfg), "--out", str(run)]
        filler = mnt / "filler"
        if real_fs:
            filler.write_bytes(b"\0" * 1_000_000)  # room for the manifest and a few segments, not 60 records
        else:  # fault injection: the 6th fsync of the run finds the disk full
            import errno

            calls = {"n": 0}
            real_fsync = os.fsync

            def fsync(fd):
                calls["n"] += 1
                if calls["n"] >= 6:
                    raise OSError(errno.ENOSPC, "No space left on device")
                return real_fsync(fd)

            monkeypatch.setattr(os, "fsync", fsync)
        code = main(argv)
        err = capsys.readouterr().err
        assert code != 0 and "no space left on device" in err and "Traceback" not in err
        assert str(mnt) in err and "free space" in err
        before = _records(run)
        assert 0 < len(before) < 60
        if real_fs:
            filler.unlink()
        else:
            monkeypatch.setattr(os, "fsync", real_fsync)
        assert main(["run", "--resume", str(run)]) == 0, capsys.readouterr().err
        after = _records(run)
        assert len(after) == 60
        assert all(after[k] == r for k, r in before.items())  # what was committed before the failure is intact
    finally:
        if real_fs:
            subprocess.run(["umount", str(mnt)], capture_output=True)


# -- item 8: spool folders of killed index builds ----------------------------------------------------------
def test_stale_build_folders_are_removed_and_reported(tmp_path, capsys):
    kb = tmp_path / "kb.jsonl"
    rows = []
    for i, color in enumerate(("red", "green", "blue")):
        Image.new("RGB", (16, 16), color).save(tmp_path / f"{i}.png")
        rows.append(json.dumps({"id": f"d{i}", "modality": "image", "image": f"{i}.png"}))
    kb.write_text("\n".join(rows) + "\n")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".idx.tmp-{dead.pid}-deadbeef"
    stale.mkdir()
    (stale / "embeddings.f32").write_bytes(b"\0" * 2_000_000)
    live = tmp_path / f".idx.tmp-{os.getpid()}-cafecafe"  # a build still running: kept
    live.mkdir()
    assert main(["index", "build", "--kb", str(kb), "--kind", "visual", "--out", str(tmp_path / "idx")]) == 0
    err = capsys.readouterr().err
    assert "removed 1 stale build folder" in err and "2.0 MB" in err
    assert not stale.exists() and live.exists() and (tmp_path / "idx" / "manifest.json").is_file()
    manifest = json.loads((tmp_path / "idx" / "manifest.json").read_text())
    manifest["shards"] = []  # "an index of 0 shards" must not load as an empty index
    (tmp_path / "idx" / "manifest.json").write_text(json.dumps(manifest))
    assert main(["index", "info", str(tmp_path / "idx")]) != 0
    assert "0 shard(s)" in capsys.readouterr().err


# -- one model under two spellings ----------------------------------------------------------------
def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "error" in ln]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_one_model_under_two_spellings_is_refused_naming_both(tmp_path, capsys, module_home):
    run = tmp_path / "run"
    flags = ["--scenarios", "parametric", "--limit", "2", "--out", str(run)]
    assert main(["run", "-b", "demo", "-m", "sim-vlm,sim-vlm:text_prior=0.5", *flags]) != 0
    line = _one_error_line(capsys)
    assert "'sim-vlm'" in line and "'sim-vlm:text_prior=0.5'" in line and "once" in line
    assert not run.exists()
    cfg = tmp_path / "two.yaml"  # vision=0.8 is the default: a config spelling it is the same model
    models = [{"backend": "sim-vlm"}, {"backend": "sim-vlm", "model": "vision=0.8"}]
    cfg.write_text(
        yaml.safe_dump({"benchmarks": [{"name": "demo"}], "scenarios": [{"kind": "parametric"}], "models": models})
    )
    assert main(["run", "--config", str(cfg), "--out", str(run)]) != 0
    assert "one model" in _one_error_line(capsys) and not run.exists()
    # two real variants still run side by side
    assert main(["run", "-b", "demo", "-m", "sim-vlm,sim-vlm:text_prior=0.9", *flags]) == 0, capsys.readouterr().err


# -- judge-agreement: one id twice ------------------------------------------------------------------
def test_judge_agreement_refuses_an_id_given_twice_naming_file_line_and_id(tmp_path, capsys):
    people = tmp_path / "people.jsonl"
    judge = tmp_path / "judge.jsonl"
    rows = [("a", "correct"), ("b", "deflection"), ("c", "hallucination")]
    people.write_text("".join(json.dumps({"id": i, "label": lab}) + "\n" for i, lab in rows))
    twice = [*rows[:2], ("a", "deflection")]  # 'a' twice, 'c' missing: used to pair rows wrongly, rc 0
    judge.write_text("".join(json.dumps({"id": i, "outcome": lab}) + "\n" for i, lab in twice))
    for a, b in ((people, judge), (judge, people)):
        assert main(["judge-agreement", str(a), str(b)]) != 0
        line = _one_error_line(capsys)
        assert "judge.jsonl:3" in line and "'a'" in line and "lines 1 and 3" in line
    judge.write_text("".join(json.dumps({"id": i, "outcome": lab}) + "\n" for i, lab in reversed(rows)))
    assert main(["judge-agreement", str(people), str(judge)]) == 0  # same ids in another order: fine
    assert "kappa=1.000" in capsys.readouterr().out


# -- report --out / export --out never write into a folder they did not make ------------------------
@pytest.fixture(scope="module")
def small_run(tmp_path_factory, module_home):
    run = tmp_path_factory.mktemp("small") / "run"
    argv = ["run", "-b", "demo", "-m", "always-deflect", "--scenarios", "parametric", "--limit", "2"]
    assert main([*argv, "--out", str(run)]) == 0
    return run


@pytest.mark.parametrize(
    "command",
    [
        ["report", "{run}", "--quiet", "--n-boot", "100", "--no-browser"],
        ["export", "{run}", "--format", "lmms-eval"],
        ["report", "{run}", "--paper", "deflectionbench", "--n-boot", "100"],
    ],
    ids=["report", "export", "paper"],
)
def test_report_and_export_out_refuse_a_folder_they_did_not_make(command, small_run, tmp_path, capsys):
    argv = [a.replace("{run}", str(small_run)) for a in command]
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "report.md").write_text("my own notes\n")
    assert main([*argv, "--out", str(mine)]) != 0
    line = _one_error_line(capsys)
    assert "notes" in line and "report.md" in line and "--out" in line
    assert sorted(p.name for p in mine.iterdir()) == ["report.md"]  # nothing written
    assert (mine / "report.md").read_text() == "my own notes\n"
    fresh = tmp_path / "fresh"
    for _ in range(2):  # a folder it made is written again
        assert main([*argv, "--out", str(fresh)]) == 0, capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main([*argv, "--out", str(empty)]) == 0  # an empty folder is fine, as for run
    other = "export" if argv[0] == "report" else "report"  # (the paper's marker is "paper")
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / f".mmrag-{other}").touch()
    (tmp_path / "theirs" / "x.txt").write_text("x")
    assert main([*argv, "--out", str(tmp_path / "theirs")]) != 0  # another command's folder is not ours
    capsys.readouterr()
