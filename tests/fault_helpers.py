"""Helpers the fault tests share (tests/test_faults.py, tests/test_faults_files.py).

A failing command must say so in exactly one stderr line and never with a traceback;
:func:`one_stderr_line` checks both and returns that line for the test's own assertions.
"""

from __future__ import annotations

from pathlib import Path

import yaml


def write_yaml(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


def one_stderr_line(capsys, needle: str) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err, err[-3000:]
    lines = [ln for ln in err.splitlines() if needle in ln]
    assert len(lines) == 1, err[-3000:]
    return lines[0]
