"""RunManifest: everything needed to reproduce a run — and nothing secret.

Written atomically when a run starts and updated when it ends.  Values of environment variables
whose names look secret (``*KEY*``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``) are scrubbed from
every string before anything is written, so an API key passed by mistake on the command line
never reaches the run directory.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mmrag.util import atomic_write_json

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
PACKAGES = ("mmrag", "torch", "transformers", "sentence-transformers", "faiss-cpu", "faiss-gpu",
            "open_clip_torch", "numpy", "pydantic", "datasets", "httpx", "llama-index-core", "vllm")


def _secret_values() -> list[str]:
    return [v for k, v in os.environ.items() if SECRET_NAME.search(k) and v and len(v) >= 6]


def scrub(obj: Any, secrets: list[str] | None = None) -> Any:
    """Replace every occurrence of a secret environment value in ``obj`` (recursively) by ``***``."""
    secrets = _secret_values() if secrets is None else secrets
    if isinstance(obj, str):
        for s in secrets:
            obj = obj.replace(s, "***")
        return obj
    if isinstance(obj, dict):
        return {k: scrub(v, secrets) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [scrub(v, secrets) for v in obj]
    return obj


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
    #: where the last invocation's time went (engine stage totals, seconds; mean in flight per model)
    stages: dict[str, float] = Field(default_factory=dict)

    @classmethod
    def start(cls, config: dict[str, Any], argv: list[str] | None = None) -> "RunManifest":
        now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        return cls(mmrag_version=package_versions().get("mmrag", "0"), created_at=now, updated_at=now,
                   argv=list(sys.argv if argv is None else argv), config=config, packages=package_versions(),
                   python=sys.version.split()[0], git_revision=git_revision())

    def write(self, run_dir: str | Path) -> None:
        self.updated_at = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        atomic_write_json(Path(run_dir) / "manifest.json", scrub(self.model_dump(mode="json")))
