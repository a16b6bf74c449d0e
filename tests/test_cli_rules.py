"""The CLI's rules: every option has help, enumerated knobs list their values, one flag means one
thing across commands, and --resume / --config never silently drop other flags."""

from __future__ import annotations

import re

import pytest
import typer

from mmrag.cli import app, main
from mmrag.scenarios.kinds import kind_ids
from mmrag.scenarios.spec import MODALITIES, STRICTNESS_LEVELS


def _commands():
    root = typer.main.get_command(app)
    out = {}

    def walk(cmd, path):
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, (*path, name))
        else:
            out[" ".join(path)] = cmd

    walk(root, ())
    return out


COMMANDS = _commands()


def _options(cmd):
    return [p for p in cmd.params if getattr(p, "opts", None) and any(o.startswith("-") for o in p.opts)]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_has_help(name):
    missing = [max(p.opts, key=len) for p in _options(COMMANDS[name]) if not (getattr(p, "help", None) or "").strip()]
    assert not missing, f"mmrag {name}: options without help: {missing}"


def test_enumerated_knobs_list_their_values(capsys):
    run = {max(p.opts, key=len): p for p in _options(COMMANDS["run"])}
    assert all(k in run["--scenarios"].help for k in kind_ids())
    assert all(m in run["--negative-modality"].help for m in MODALITIES)
    assert all(s in run["--strictness"].help for s in STRICTNESS_LEVELS)
    # a single-valued knob is a choice: a bad value is refused with the allowed values
    assert main(["run", "-b", "demo", "-m", "always-deflect", "--positive-modality", "audio"]) == 2
    err = capsys.readouterr().err
    assert "audio" in err and all(m in err for m in MODALITIES)
    for flag in ("--judge",):
        assert "rule | llm | rule+llm" in run[flag].help
    build = {max(p.opts, key=len): p for p in _options(COMMANDS["benchmark build-deflection"])}
    assert "infoseek | evqa | webqa" in build["--dataset"].help


def test_one_flag_means_one_thing():
    meaning: dict[str, set[str]] = {}
    for cmd in COMMANDS.values():
        for p in _options(cmd):
            for short in (o for o in p.opts if re.fullmatch(r"-[a-zA-Z]", o)):
                meaning.setdefault(short, set()).add(max(p.opts, key=len))
    assert meaning["-o"] == {"--out"} and meaning["-m"] == {"--model"} and meaning["-b"] == {"--benchmark"}
    assert all(len(v) == 1 for v in meaning.values()), meaning
    # --source is a data path wherever it appears; a source *dataset* name is --dataset
    for name, cmd in COMMANDS.items():
        for p in _options(cmd):
            if "--source" in p.opts:
                assert "data" in p.help.lower() and "infoseek" not in p.help.lower(), (name, p.help)
    for flag in ("-m", "-b", "-o"):
        assert flag in [o for p in _options(COMMANDS["sweep"]) for o in p.opts]


@pytest.mark.parametrize(
    "args,dropped",
    [
        (["--resume", "{out}", "--scenarios", "oracle"], "--scenarios"),
        (["--resume", "{out}", "--limit", "3", "-m", "always-deflect"], "--model, --limit"),
        (["--config", "{cfg}", "--model", "always-deflect"], "--model"),
    ],
)
def test_resume_and_config_refuse_other_flags(tmp_path, capsys, args, dropped):
    cfg = tmp_path / "run.yaml"
    cfg.write_text("benchmarks: [{name: demo}]\nmodels: [{backend: always-deflect}]\n")
    (tmp_path / "run").mkdir()
    argv = ["run", *[a.format(out=tmp_path / "run", cfg=cfg) for a in args]]
    assert main(argv) != 0
    err = capsys.readouterr().err
    assert f"these flags would be ignored: {dropped}" in err and not (tmp_path / "run" / "samples.jsonl").exists()


def test_progress_column_labels_elapsed_and_eta():
    from rich.progress import Progress

    from mmrag.commands._console import TimeColumn

    p = Progress()
    known = p.add_task("known", total=10)
    p.start_task(known)
    p.advance(known, 5)
    p.add_task("unknown", total=None)
    text = [str(TimeColumn().render(t)) for t in p.tasks]
    assert re.fullmatch(r"\d+:\d\d:\d\d elapsed · eta (\d+:\d\d:\d\d|\?)", text[0])
    assert text[1].endswith("eta ?")
    p.update(known, completed=10)
    assert str(TimeColumn().render(p.tasks[0])).endswith("· done")
