"""Test-wide setup: offline hub access, and an isolated MMRAG_HOME per test session."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def _session_mmrag_home(tmp_path_factory):
    """Every test session gets its own MMRAG_HOME unless a test sets another one."""
    if "MMRAG_TEST_KEEP_HOME" not in os.environ:
        os.environ["MMRAG_HOME"] = str(tmp_path_factory.mktemp("mmrag_home"))
    yield
