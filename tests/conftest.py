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


@pytest.fixture(scope="module")
def module_home(tmp_path_factory, request):
    """One MMRAG_HOME for a whole test module, so the demo world and its indices are built once."""
    mp = pytest.MonkeyPatch()
    path = tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1] + "_home")
    mp.setenv("MMRAG_HOME", str(path))
    yield path
    mp.undo()


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory):
    """A real llama.cpp server (tests/real_server.py) for the whole session, stopped by its PID."""
    from real_server import LlamaServer, llm_venv, missing_reason, require_or_skip

    venv = llm_venv()
    reason = missing_reason(venv)
    if reason:
        require_or_skip(reason)
    with LlamaServer(venv, tmp_path_factory.mktemp("llama")) as server:
        yield server
