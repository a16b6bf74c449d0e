"""RunManifest: everything needed to reproduce a run — and nothing secret.

Written atomically when a run starts and updated when it ends, through :func:`mmrag.redact.redact`:
secret environment values, URL userinfo and secret headers never reach the run directory.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mmrag.redact import redact as scrub  # the one redaction helper (env secrets, URL userinfo, headers)
from mmrag.util import atomic_write_json

PACKAGES = (
    "mmrag",
    "torch",
    "transformers",
    "sentence-transformers",
    "faiss-cpu",
    "faiss-gpu",
    "open_clip_torch",
    "numpy",
    "pydantic",
    "datasets",
    "httpx",
    "llama-index-core",
    "vllm",
)


def package_versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def git_revision() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        res = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout.strip() or None if res.returncode == 0 else None


class RunManifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mmrag_version: str
    created_at: str
    updated_at: str = ""
    status: str = "running"
    argv: list[str] = Field(default_factory=list)
    config: dict[str, Any]
    packages: dict[str, str] = Field(default_factory=dict)
    python: str = ""
    git_revision: str | None = None
    seeds: dict[str, int] = Field(default_factory=dict)
    datasets: dict[str, str] = Field(default_factory=dict)
    indices: dict[str, str] = Field(default_factory=dict)
    templates: dict[str, str] = Field(default_factory=dict)
    models: dict[str, str] = Field(default_factory=dict)
    judge_id: str = ""
    counts: dict[str, int] = Field(default_factory=dict)
    #: the plan's cells per benchmark x scenario x model, written when the run starts, so a reader of
    #: a killed or running run can say what is missing (:mod:`mmrag.runs.state`)
    planned: list[dict[str, Any]] = Field(default_factory=list)
    #: where the last invocation's time went (engine stage totals, seconds; mean in flight per model)
    stages: dict[str, float] = Field(default_factory=dict)
    #: what summary.json was computed from (:func:`mmrag.runs.summary.results_state`): a later
    #: invocation that writes nothing and finds the same state keeps the summary
    summary_state: str = ""

    @classmethod
    def start(cls, config: dict[str, Any], argv: list[str] | None = None) -> RunManifest:
        now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        return cls(
            mmrag_version=package_versions().get("mmrag", "0"),
            created_at=now,
            updated_at=now,
            argv=list(sys.argv if argv is None else argv),
            config=config,
            packages=package_versions(),
            python=sys.version.split()[0],
            git_revision=git_revision(),
        )

    def write(self, run_dir: str | Path) -> None:
        self.updated_at = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        atomic_write_json(Path(run_dir) / "manifest.json", scrub(self.model_dump(mode="json")))

    def mark_failed(self, run_dir: str | Path) -> None:
        """Best effort: the manifest says ``failed`` after an error stopped the run.

        Why not only :meth:`write`: on a full disk (or over a file-size limit) the atomic write
        needs a new file and fails too, which left ``running`` behind.  Then the existing file is
        overwritten in place — no new blocks are needed when the text is not longer, and
        ``failed`` is shorter than ``running``.  Errors here are swallowed: the error that stopped
        the run is the one the user must see."""
        import json

        self.status = "failed"
        try:
            self.write(run_dir)
            return
        except Exception:  # noqa: BLE001 - see the docstring
            pass
        path = Path(run_dir) / "manifest.json"
        try:
            data = (
                json.dumps(scrub(self.model_dump(mode="json")), indent=2, ensure_ascii=False, default=str) + "\n"
            ).encode("utf-8")
            if not path.is_file() or len(data) > path.stat().st_size:
                return
            with open(path, "r+b") as fh:
                fh.write(data)
                fh.truncate()
                fh.flush()
                try:
                    os.fsync(fh.fileno())
                except OSError:
                    pass
        except Exception:  # noqa: BLE001
            pass
