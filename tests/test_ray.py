"""Ray engine on a real two-node cluster on this machine: index build and runs equal the local ones,
and a replica killed mid-run loses and duplicates nothing.

The fixture starts a head (``ray start --head --num-cpus 1``) and a second node joining it, each
``--block`` in its own session, and stops exactly those process groups (plus the workers their
raylets spawned, which Ray puts in sessions of their own) — never ``ray stop``, which would stop
every Ray on the machine.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

# Token auth with a token of this test's own, not ~/.ray/auth_token (shared by every Ray on the
# machine).  Ray reads the mode when it is imported, hence before the import.
os.environ.setdefault("RAY_AUTH_MODE", "token")
os.environ.setdefault("RAY_AUTH_TOKEN", secrets.token_hex(32))
ray = pytest.importorskip("ray", reason="the mmrag[ray] extra is not installed")
psutil = pytest.importorskip("psutil")

sys.path.insert(0, str(Path(__file__).parent / "plugins"))

from mmrag.cli import main  # noqa: E402
from mmrag.errors import InputError  # noqa: E402
from mmrag.runs import read_records  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RAY = str(Path(sys.executable).with_name("ray"))
#: seconds a node may take to start and join: generous, a loaded machine (load 10) needs minutes
STARTUP_S = float(os.environ.get("MMRAG_TEST_RAY_STARTUP_S", "600"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _descendants(pids: list[int]) -> set[int]:
    out: set[int] = set()
    for pid in pids:
        for pgid_member in psutil.process_iter(["pid"]):
            try:
                if os.getpgid(pgid_member.pid) == pid:
                    out.add(pgid_member.pid)
                    out.update(c.pid for c in pgid_member.children(recursive=True))
            except (ProcessLookupError, psutil.Error, OSError):
                pass
    return out


class Cluster:
    """Two Ray nodes on loopback, each a ``ray start --block`` process-group leader."""

    def __init__(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="r15", dir="/tmp"))  # unix socket paths must stay short
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "RAY_USAGE_STATS_ENABLED": "0",
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        }
        self.procs: list[subprocess.Popen] = []

    @staticmethod
    def _own_ports() -> list[str]:
        """Every port a node listens on, chosen free (Ray's defaults — 52365 for the dashboard agent,
        8076 for the object manager, ... — collide with any other Ray on the machine)."""
        import random

        base = random.Random().randrange(20_000, 60_000, 100)  # worker ports: a range of 100
        # (no --ray-client-server-port: naming it asks for the ray[client] extra, which is not installed)
        flags = (
            "--node-manager-port",
            "--object-manager-port",
            "--metrics-export-port",
            "--dashboard-agent-listen-port",
            "--dashboard-agent-grpc-port",
            "--runtime-env-agent-port",
        )
        out = [x for f in flags for x in (f, str(_free_port()))]
        return out + ["--min-worker-port", str(base), "--max-worker-port", str(base + 99)]

    def _start(self, *args: str) -> None:
        cmd = [
            RAY,
            "start",
            "--block",
            "--num-cpus",
            "1",
            "--object-store-memory",
            str(150 * 2**20),
            "--disable-usage-stats",
            *self._own_ports(),
            *args,
        ]
        log = self.tmp / f"node{len(self.procs)}.log"
        with open(log, "wb") as fh:
            proc = subprocess.Popen(cmd, env=self.env, start_new_session=True, stdout=fh, stderr=subprocess.STDOUT)
        self.procs.append(proc)
        deadline = time.time() + STARTUP_S
        while "Ray runtime started" not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"ray start failed: {log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.5)

    def nodes_alive(self) -> int:
        return sum(1 for n in ray.nodes() if n["Alive"])

    def start(self) -> Cluster:
        self._start("--head", "--port", str(self.port), "--temp-dir", str(self.tmp), "--include-dashboard", "false")
        self._start("--address", self.address)
        ray.init(address=self.address, logging_level="ERROR", log_to_driver=False)
        deadline = time.time() + STARTUP_S
        while self.nodes_alive() < 2:
            if time.time() > deadline:
                raise RuntimeError("the second node did not join")
            time.sleep(0.5)
        return self

    def worker_pids(self, title: str) -> list[int]:
        """Processes of this cluster whose title names ``title`` (Ray titles actors ``ray::Class``)."""
        mine = _descendants([p.pid for p in self.procs])
        out = []
        for pid in mine:
            try:
                if title in " ".join(psutil.Process(pid).cmdline()):
                    out.append(pid)
            except psutil.Error:
                pass
        return sorted(out)

    def stop(self) -> None:
        ray.shutdown()
        victims = _descendants([p.pid for p in self.procs])
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        time.sleep(3)
        for pid in victims | {p.pid for p in self.procs}:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for p in self.procs:
            p.wait(timeout=30)
        shutil.rmtree(self.tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster(module_home):
    c = Cluster()
    try:
        yield c.start()
    finally:
        c.stop()


@pytest.fixture(scope="module")
def kb(tmp_path_factory) -> Path:
    """The retrieval world's documents as a kb.jsonl (the format `mmrag index build` reads)."""
    import json

    from retrieval_world import make_world

    root = tmp_path_factory.mktemp("world")
    docs, _ = make_world(root, 16)
    path = root / "kb.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for d in docs:
            fh.write(
                json.dumps(
                    {
                        "id": d.id,
                        "modality": d.modality,
                        "text": d.text,
                        "title": d.title,
                        "image": d.image.path if d.image else None,
                    }
                )
                + "\n"
            )
    return path


def _run_keys(run_dir: Path) -> dict[str, tuple]:
    recs = read_records(run_dir)
    assert len({r.key for r in recs}) == len(recs), "duplicated records"
    return {
        r.key: (r.prompt.id, r.prompt.template_hash, r.response.text, r.verdict.outcome, r.verdict.extracted)
        for r in recs
    }


def test_index_build_through_the_cluster_equals_the_local_build(cluster, kb, tmp_path):
    import json

    import numpy as np

    from mmrag.distributed import build_index_ray
    from mmrag.indices import create_encoder, encode_queries, load_index

    # fp32: byte-equal vectors need it; bf16 sums (AMX, AVX512-BF16) move with a batch's padding,
    # and the cluster batches blocks of 10 lines where the local build batches the whole file
    fp32 = '{"precision": "fp32"}'
    common = ["index", "build", "--kb", str(kb), "--kind", "text", "--factory", "Flat", "--batch-size", "8"]
    common += ["--encoder-kwargs", fp32]
    assert main([*common, "--out", str(tmp_path / "local")]) == 0
    # two encoder actors (half a CPU each) so both nodes encode; blocks of 10 lines
    stats: dict = {}
    build_index_ray(
        kb,
        {"name": "minilm", "kwargs": {"precision": "fp32"}},
        "text",
        "Flat",
        tmp_path / "ray",
        address=cluster.address,
        pool_size=2,
        encoder_cpus=0.5,
        batch_size=8,
        block_docs=10,
        stats=stats,
    )
    assert stats["blocks"] > 2 and stats["batches"] > 2 and stats["pool_size"] == 2
    a = json.loads((tmp_path / "local" / "manifest.json").read_text())
    b = json.loads((tmp_path / "ray" / "manifest.json").read_text())
    a.pop("created_at"), b.pop("created_at")
    assert a == b  # same ids file, same FAISS bytes (sha256), same KB hash, params and factory
    il, ir = load_index(tmp_path / "local"), load_index(tmp_path / "ray")
    assert il.doc_ids.tolist() == ir.doc_ids.tolist()
    enc = create_encoder("minilm")
    q = encode_queries(enc, ["What is the capital?", "a striped flag", "Port Tur"], [[], [], []])
    (sl, rl), (sr, rr) = il.shards[0].search(q, 10), ir.shards[0].search(q, 10)
    assert (rl == rr).all() and np.array_equal(sl, sr)
    # the CLI path through --address gives the same index too
    assert (
        main(
            [
                *common,
                "--out",
                str(tmp_path / "cli"),
                "--engine",
                "ray",
                "--address",
                cluster.address,
                "--block-docs",
                "16",
            ]
        )
        == 0
    )
    c = json.loads((tmp_path / "cli" / "manifest.json").read_text())
    c.pop("created_at")
    assert c == a


def test_bad_kb_line_is_the_local_error(cluster, kb, tmp_path):
    from mmrag.distributed import build_index_ray

    bad = tmp_path / "kb.jsonl"
    lines = kb.read_text(encoding="utf-8").splitlines()
    lines.insert(23, '{"id": "x", "modality": "text", "text": 5}')
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        build_index_ray(
            bad,
            {"name": "minilm"},
            "text",
            "Flat",
            tmp_path / "ix",
            address=cluster.address,
            block_docs=10,
            batch_size=8,
        )
    assert err.value.line == 24 and err.value.path == str(bad) and err.value.field == "text"
    assert not (tmp_path / "ix").exists()


RUN = [
    "run",
    "--benchmark",
    "demo",
    "--scenarios",
    "parametric,oracle,realistic,adversarial",
    "--limit",
    "6",
    "--no-cache",
    "--batch-size",
    "6",
]


def test_demo_run_through_the_cluster_equals_the_local_run(cluster, tmp_path):
    models = ["--model", "sleepy:context-reader@1", "--model", "always-deflect"]
    assert main([*RUN, *models, "--out", str(tmp_path / "local")]) == 0
    assert (
        main(
            [
                *RUN,
                *models,
                "--out",
                str(tmp_path / "ray"),
                "--engine",
                "ray",
                "--address",
                cluster.address,
                "--replicas",
                "2",
            ]
        )
        == 0
    )
    local, remote = _run_keys(tmp_path / "local"), _run_keys(tmp_path / "ray")
    assert len(local) == 6 * 4 * 2
    assert remote == local
    assert {v[3] for v in local.values()} >= {"correct", "deflection"}


def test_replica_killed_mid_run_loses_and_duplicates_nothing(cluster, tmp_path):
    args = [*RUN, "--model", "sleepy:context-reader@300", "--batch-size", "4"]
    assert main([*args, "--out", str(tmp_path / "local"), "--model", "always-deflect"]) == 0
    killed: list[int] = []
    finished_before_kill: list[bool] = []
    manifest = tmp_path / "ray" / "manifest.json"

    def killer() -> None:
        deadline = time.time() + 300
        while time.time() < deadline and not killed:
            pids = cluster.worker_pids("ModelReplica")
            if len(pids) >= 2 and manifest.exists():  # the run has started dispatching
                time.sleep(1.0)  # 24 prompts x 300 ms over 2 replicas: both are busy for seconds
                finished_before_kill.append('"complete"' in manifest.read_text())
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])
            time.sleep(0.2)

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    assert (
        main(
            [
                *args,
                "--out",
                str(tmp_path / "ray"),
                "--model",
                "always-deflect",
                "--engine",
                "ray",
                "--address",
                cluster.address,
                "--replicas",
                "2",
            ]
        )
        == 0
    )
    t.join(timeout=5)
    assert killed and finished_before_kill == [False], "no replica was killed mid-run"
    assert not psutil.pid_exists(killed[0]) or psutil.Process(killed[0]).status() == psutil.STATUS_ZOMBIE
    assert _run_keys(tmp_path / "ray") == _run_keys(tmp_path / "local")


def test_engine_flags_are_checked_before_anything_runs(tmp_path, capsys):
    assert (
        main(
            [
                "run",
                "--benchmark",
                "demo",
                "--model",
                "always-deflect",
                "--address",
                "127.0.0.1:1",
                "--out",
                str(tmp_path / "r"),
            ]
        )
        != 0
    )
    assert "--engine ray only" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()
    assert (
        main(
            [
                "index",
                "build",
                "--kb",
                str(tmp_path / "none.jsonl"),
                "--kind",
                "text",
                "--out",
                str(tmp_path / "i"),
                "--engine",
                "spark",
            ]
        )
        != 0
    )
    assert "unknown engine 'spark'" in capsys.readouterr().err


def test_ray_is_imported_only_when_asked_and_a_missing_extra_is_one_clear_error(monkeypatch):
    import subprocess as sp

    code = (
        "import sys; from mmrag.cli import main; import mmrag.distributed, mmrag.commands.run; "
        "main(['run', '--help']); sys.exit(1 if 'ray' in sys.modules else 0)"
    )
    assert (
        sp.run(
            [sys.executable, "-c", code], capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)}
        ).returncode
        == 0
    )
    from mmrag.distributed import require_ray

    monkeypatch.setitem(sys.modules, "ray", None)  # as if the extra were not installed
    with pytest.raises(InputError, match=r"pip install 'mmrag\[ray\]'"):
        require_ray()


def test_sleepy_model_answers_like_its_baseline_at_a_device_pace():
    from mmrag.models import MODELS, parse_model_arg
    from mmrag.models.base import GenerationSettings
    from mmrag.schema import Prompt

    prompts = [
        Prompt.model_validate(
            {
                "id": f"p{i}",
                "sample_id": f"s{i}",
                "messages": [{"role": "user", "content": [{"type": "text", "text": f"What is {i}?"}]}],
            }
        )
        for i in range(5)
    ]
    slow = MODELS.create("sleepy", parse_model_arg("sleepy:random-choice@40"))
    fast = MODELS.create("random-choice", parse_model_arg("random-choice"))
    t0 = time.perf_counter()
    got = slow.generate(prompts, GenerationSettings())
    assert time.perf_counter() - t0 >= 5 * 0.040
    assert [r.text for r in got] == [r.text for r in fast.generate(prompts, GenerationSettings())]
    assert slow.fingerprint == f"sleepy:{fast.fingerprint}" and slow.cache_key_extra(
        prompts[0]
    ) == fast.cache_key_extra(prompts[0])
    for bad in ("sleepy:nosuch", "sleepy:random-choice@fast", "sleepy:sleepy"):
        with pytest.raises(InputError, match="sleepy"):
            MODELS.create("sleepy", parse_model_arg(bad))


def _cli(*args: str, timeout_s: str) -> tuple[subprocess.CompletedProcess, float]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "MMRAG_RAY_CONNECT_TIMEOUT": timeout_s,
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    t0 = time.monotonic()
    res = subprocess.run(
        [sys.executable, "-m", "mmrag.cli", *args], env=env, capture_output=True, text=True, timeout=600
    )
    return res, time.monotonic() - t0


def test_an_unreachable_address_is_one_clear_error_within_the_connect_timeout(tmp_path):
    run = ["run", "-b", "demo", "-m", "always-deflect", "--scenarios", "parametric", "--limit", "2", "--engine", "ray"]
    res, took = _cli(*run, "--address", "127.0.0.1:1", "--out", str(tmp_path / "r"), timeout_s="3")
    assert res.returncode != 0 and "Traceback" not in res.stderr, res.stderr[-2000:]
    line = [ln for ln in res.stderr.splitlines() if "mmrag: error" in ln]
    assert len(line) == 1 and "cannot reach a Ray cluster at '127.0.0.1:1' within 3 s" in line[0], res.stderr[-2000:]
    assert took < 120 and not (tmp_path / "r").exists()
    with socket.socket() as listener:  # accepts connections, speaks no Ray
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        addr = f"127.0.0.1:{listener.getsockname()[1]}"
        res, took = _cli(*run, "--address", addr, "--out", str(tmp_path / "r2"), timeout_s="8")
    assert res.returncode != 0 and "Traceback" not in res.stderr, res.stderr[-2000:]
    line = [ln for ln in res.stderr.splitlines() if "mmrag: error" in ln]
    assert len(line) == 1 and f"cannot reach a Ray cluster at '{addr}' within 8 s" in line[0], res.stderr[-2000:]
    assert took < 180
