"""Security model: configs and run directories are data; no secret reaches a file.

* A plug-in named by dotted path in a config is imported only with ``--allow-code``, must be a
  class with the protocol's methods, and is never imported from a run directory (``--resume``).
* A key planted every way it can travel — echoed by the server in an error body, in the base
  URL's query, in ``api_key_env``, in ``options.headers`` (``Authorization`` and ``X-Api-Key``)
  — reaches no byte of any file the run, the report, the browser or the response cache write.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from cli_runs import cli_run
from loopback_server import LoopbackServer

from mmrag.cli import main
from mmrag.errors import InputError
from mmrag.redact import REDACTED, find_redacted, redact, redact_text, strip_userinfo
from mmrag.registry import Registry, allow_code
from mmrag.scenarios.spec import ScenarioSpec

PARAMETRIC = [{"kind": "parametric"}]


def _yaml(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


def _run_cfg(tmp: Path, retrievers: dict, name: str = "cfg") -> Path:
    return _yaml(
        tmp / f"{name}.yaml",
        {
            "benchmarks": [{"name": "demo"}],
            "limit": 2,
            "models": [{"backend": "always-deflect"}],
            "scenarios": [{"kind": "realistic", "n_distractors": 1}],
            "retrieval": {"retrievers": retrievers},
        },
    )


# -- plug-ins by dotted path --------------------------------------------------------------------
def test_a_config_cannot_run_a_shell_command(tmp_path, capsys, module_home):
    marker = tmp_path / "pwned"
    cfg = _run_cfg(tmp_path, {"text": {"name": "os:system", "command": f"touch {marker}"}})
    code = main(["run", "--config", str(cfg), "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code != 0 and "--allow-code" in err and "os:system" in err and "Traceback" not in err
    assert not marker.exists() and not (tmp_path / "run").exists()


def test_allow_code_still_requires_a_class_with_the_protocol(tmp_path, capsys, module_home):
    marker = tmp_path / "pwned"
    cfg = _run_cfg(tmp_path, {"text": {"name": "os:system", "command": f"touch {marker}"}})
    assert main(["run", "--config", str(cfg), "--allow-code", "--out", str(tmp_path / "run")]) != 0
    assert "not a class" in capsys.readouterr().err and not marker.exists()
    cfg2 = _run_cfg(tmp_path, {"text": "collections:OrderedDict"}, "c2")  # a class, but no .retrieve
    assert main(["run", "--config", str(cfg2), "--allow-code", "--out", str(tmp_path / "run2")]) != 0
    err = capsys.readouterr().err
    assert "does not implement the retriever protocol" in err and "retrieve" in err


def test_registry_rules_without_the_cli():
    reg: Registry = Registry("widget", group="mmrag.no-such-group", requires=("retrieve",))
    with pytest.raises(InputError, match="--allow-code"):
        reg.get("os:system")
    with allow_code():
        with pytest.raises(InputError, match="not a class"):
            reg.get("os:system")
        with pytest.raises(InputError, match="missing retrieve"):
            reg.get("collections:OrderedDict")
        assert reg.get("custom_retriever_mod:KeywordRetriever").__name__ == "KeywordRetriever"
    with pytest.raises(InputError, match="--allow-code"):  # the permission ends with the block
        reg.get("custom_retriever_mod:KeywordRetriever")


def test_resume_never_imports_code_a_manifest_names(tmp_path, capsys, module_home):
    run = cli_run(tmp_path / "run")
    marker = tmp_path / "pwned"
    man = json.loads((run / "manifest.json").read_text())
    man["config"]["retrieval"]["retrievers"] = {"text": {"name": "os:system", "command": f"touch {marker}"}}
    man["config"]["scenarios"] = [ScenarioSpec(kind="realistic", n_distractors=1).model_dump(mode="json")]
    (run / "manifest.json").write_text(json.dumps(man))
    capsys.readouterr()
    assert main(["run", "--resume", str(run)]) != 0
    assert "--allow-code" in capsys.readouterr().err and not marker.exists()
    assert main(["run", "--resume", str(run), "--allow-code"]) != 0  # the flag does not apply to a run dir
    assert "does not apply to --resume" in capsys.readouterr().err and not marker.exists()


# -- the redaction helper -----------------------------------------------------------------------
def test_redaction_rules(monkeypatch):
    monkeypatch.setenv("MMRAG_PLANTED_VAR", "plantedvalue-123")
    cfg = {
        "models": [
            {
                "backend": "openai",
                "base_url": "https://bob:pw-secret-9@host:8000/v1",
                "api_key_env": "MMRAG_PLANTED_VAR",
                "settings": {"max_new_tokens": 12},
                "options": {
                    "headers": {
                        "Authorization": "Bearer hdr-secret-1",
                        "X-Api-Key": "xk-secret-22",
                        "Accept": "application/json",
                    }
                },
            }
        ],
        "argv": ["--note", "plantedvalue-123"],
    }
    out = redact(cfg)
    text = json.dumps(out)
    for secret in ("pw-secret-9", "plantedvalue-123", "hdr-secret-1", "xk-secret-22"):
        assert secret not in text
    m = out["models"][0]
    assert m["base_url"] == f"https://{REDACTED}@host:8000/v1" and m["api_key_env"] == "MMRAG_PLANTED_VAR"
    assert m["options"]["headers"] == {"Authorization": REDACTED, "X-Api-Key": REDACTED, "Accept": "application/json"}
    assert m["settings"] == {"max_new_tokens": 12}  # "tokens" in a field name is not a secret
    assert find_redacted(out) == "models.0.base_url" and find_redacted({"a": ["x"]}) is None
    assert redact_text('{"error": "bad key Bearer sk-live-abcdef"}') == f'{{"error": "bad key Bearer {REDACTED}"}}'
    assert redact_text("echo: zz-hdr-77777", headers={"X-Auth-Token": "zz-hdr-77777"}) == f"echo: {REDACTED}"
    assert strip_userinfo("http://u:p@127.0.0.1:9/v1") == "127.0.0.1:9"


# -- a key planted every way, grepped in every file ------------------------------------------------
API_KEY = "sk-planted-apikey-0001"
URL_SECRET = "urlpass-planted-0002"
HDR_SECRET = "hdr-planted-bearer-0003"
XKEY_SECRET = "xkey-planted-0004"


def _files(*roots: Path):
    for root in roots:
        if root.is_file():
            yield root
        elif root.is_dir():
            yield from (p for p in root.rglob("*") if p.is_file())


def test_no_planted_key_reaches_any_file(tmp_path, monkeypatch, capsys, module_home):
    monkeypatch.setenv("MMRAG_PLANTED", API_KEY)  # a variable whose name does not look secret
    calls = {"n": 0}
    with LoopbackServer(answer="Paris") as srv:
        real_chat = srv.core.chat

        async def echo_or_answer(headers, raw, writer, path):
            calls["n"] += 1
            if calls["n"] % 2:  # every other request: a 401 that echoes what it received
                body = json.dumps({"error": {"message": "invalid credentials", "received": headers}}).encode()
                await srv.core.send(writer, 401, body)
                return True
            return await real_chat(headers, raw, writer, path)

        srv.core.chat = echo_or_answer
        port = srv.port
        cfg = _yaml(
            tmp_path / "run.yaml",
            {
                "benchmarks": [{"name": "demo"}],
                "limit": 3,
                "scenarios": PARAMETRIC,
                "max_failures": 1.0,  # every other reply is a 401 on purpose
                "cache": {"path": str(tmp_path / "cache" / "responses.sqlite")},
                "models": [
                    {
                        "backend": "openai",
                        "model": "m-a",
                        "base_url": f"http://127.0.0.1:{port}/v1?api-version=1&key={URL_SECRET}",
                        "options": {"max_retries": 0},
                    },
                    {
                        "backend": "openai",
                        "model": "m-c",
                        "base_url": f"http://127.0.0.1:{port}/v1",
                        "api_key_env": "MMRAG_PLANTED",
                        "options": {"max_retries": 0},
                    },
                    {
                        "backend": "openai",
                        "model": "m-b",
                        "base_url": f"http://127.0.0.1:{port}/v1",
                        "options": {
                            "max_retries": 0,
                            "headers": {"Authorization": f"Bearer {HDR_SECRET}", "X-Api-Key": XKEY_SECRET},
                        },
                    },
                ],
            },
        )
        run = tmp_path / "run"
        assert main(["run", "--config", str(cfg), "--out", str(run)]) == 0
        sent = json.dumps([(r.headers, r.path) for r in srv.core.records])
    assert all(s in sent for s in (API_KEY, HDR_SECRET, XKEY_SECRET, URL_SECRET))  # every key did travel
    assert main(["report", str(run), "--out", str(tmp_path / "report"), "--quiet", "--n-boot", "100"]) == 0
    assert main(["browse", str(run), "--out", str(tmp_path / "browser.html")]) == 0
    from mmrag.runs import read_records

    records = [r.model_dump(mode="json") for r in read_records(run)]
    details = [r["response"].get("error_detail") or "" for r in records]
    assert any("invalid credentials" in d and REDACTED in d for d in details)  # echoed, then redacted
    assert (tmp_path / "cache" / "responses.audit.jsonl").is_file()
    planted = [s.encode() for s in (API_KEY, URL_SECRET, HDR_SECRET, XKEY_SECRET)]
    scanned = 0
    for f in _files(
        run, tmp_path / "report", tmp_path / "browser.html", tmp_path / "cache", Path(os.environ["MMRAG_HOME"])
    ):
        data = f.read_bytes()
        scanned += 1
        for s in planted:
            assert s not in data, f"{s.decode()} leaked into {f}"
    assert scanned >= 6


def test_resume_of_a_redacted_manifest_is_refused_clearly(tmp_path, capsys, module_home):
    run = cli_run(tmp_path / "run", limit=1)
    man = json.loads((run / "manifest.json").read_text())
    man["config"]["models"] = [{"backend": "openai", "model": "m", "base_url": f"http://{REDACTED}@127.0.0.1:9/v1"}]
    (run / "manifest.json").write_text(json.dumps(man))
    capsys.readouterr()
    assert main(["run", "--resume", str(run)]) != 0
    err = capsys.readouterr().err
    assert "secret removed" in err and "models.0.base_url" in err and "--config" in err


QUERY_SECRET = "qkey-planted-0005"
XAUTH_SECRET = "xauthplain"  # no digits: redacted for its header's name
CUSTOM_SECRET = "sk0123456789abcdefXYZ"  # an innocent header name: redacted for its look


def test_query_secrets_and_keylike_headers_reach_no_file(tmp_path, capsys, module_home):
    with LoopbackServer(answer="Paris") as srv:
        cfg = _yaml(
            tmp_path / "run.yaml",
            {
                "benchmarks": [{"name": "demo"}],
                "limit": 2,
                "scenarios": PARAMETRIC,
                "cache": {"enabled": False},
                "models": [
                    {
                        "backend": "openai",
                        "model": "m",
                        "base_url": f"{srv.url}?api_key={QUERY_SECRET}",
                        "options": {
                            "max_retries": 0,
                            "headers": {
                                "X-Auth": XAUTH_SECRET,
                                "X-Custom": CUSTOM_SECRET,
                                "Accept": "application/json",
                            },
                        },
                    }
                ],
            },
        )
        run = tmp_path / "run"
        assert main(["run", "--config", str(cfg), "--out", str(run)]) == 0, capsys.readouterr().err
        sent = json.dumps([r.headers for r in srv.core.records]) + json.dumps([r.path for r in srv.core.records])
    assert all(s in sent for s in (QUERY_SECRET, XAUTH_SECRET, CUSTOM_SECRET))  # each did travel
    assert main(["browse", str(run), "--out", str(tmp_path / "browser.html")]) == 0
    headers = json.loads((run / "manifest.json").read_text())["config"]["models"][0]["options"]["headers"]
    assert headers == {"X-Auth": REDACTED, "X-Custom": REDACTED, "Accept": "application/json"}
    for f in _files(run, tmp_path / "browser.html"):
        data = f.read_bytes()
        for s in (QUERY_SECRET, XAUTH_SECRET, CUSTOM_SECRET):
            assert s.encode() not in data, f"{s} leaked into {f}"
    assert (
        redact_text("GET http://h/v1?x=1&access_token=tok-1234567&alt=json")
        == f"GET http://h/v1?x=1&access_token={REDACTED}&alt=json"
    )


# -- credentials in generation settings are refused, never written ------------------------------
GEN_SECRET = "sk-genkwarg-planted-0006"


def _refused_with_one_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "error" in ln]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "--api-key-env" in lines[0] and GEN_SECRET not in err
    return lines[0]


@pytest.mark.parametrize(
    "gen_kwargs",
    [
        f"api_key={GEN_SECRET}",
        f"max_new_tokens=8,authorization=Bearer {GEN_SECRET}",
        f"x-api-key={GEN_SECRET}",
        f"access_token={GEN_SECRET}",
        f"password={GEN_SECRET}",
        f"client_secret={GEN_SECRET}",
        f"extra_headers={GEN_SECRET}",
        f"note=Bearer {GEN_SECRET}",
    ],
)
def test_a_credential_in_gen_kwargs_is_refused_and_written_nowhere(gen_kwargs, tmp_path, capsys, module_home):
    run = tmp_path / "run"
    with LoopbackServer(answer="Paris") as srv:
        argv = ["run", "-b", "demo", "-m", "openai:x", "--base-url", srv.url, "--gen-kwargs", gen_kwargs]
        code = main([*argv, "--scenarios", "parametric", "--limit", "1", "--out", str(run)])
        assert code != 0 and not srv.core.records  # refused before any request
    line = _refused_with_one_line(capsys)
    assert "--gen-kwargs" in line
    assert not run.exists()
    for f in _files(tmp_path, Path(os.environ["MMRAG_HOME"])):
        assert GEN_SECRET.encode() not in f.read_bytes(), f"leaked into {f}"


def test_a_credential_in_a_config_s_settings_or_extra_body_is_refused(tmp_path, capsys, module_home):
    model = {"backend": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}
    for i, where in enumerate(
        ({"settings": {"extra": {"api_key": GEN_SECRET}}}, {"options": {"extra_body": {"token": GEN_SECRET}}})
    ):
        cfg = _yaml(
            tmp_path / f"c{i}.yaml",
            {"benchmarks": [{"name": "demo"}], "scenarios": PARAMETRIC, "models": [{**model, **where}]},
        )
        assert main(["run", "--config", str(cfg), "--out", str(tmp_path / "run")]) != 0
        line = _refused_with_one_line(capsys)
        assert ("settings.extra" in line or "extra_body" in line) and not (tmp_path / "run").exists()


def test_which_setting_names_count_as_credentials():
    from mmrag.redact import secret_setting

    for name in ("api_key", "apiKey", "X-Api-Key", "authorization", "auth", "token", "access_token", "password"):
        assert secret_setting(name), name
    for name in ("client_secret", "headers", "extra_headers", "cookie", "openai_key", "credentials"):
        assert secret_setting(name), name
    for name in ("max_tokens", "max_completion_tokens", "stop_token_ids", "top_k", "num_beams", "min_tokens"):
        assert not secret_setting(name, 1), name
    for name in ("skip_special_tokens", "repetition_penalty", "logit_bias", "response_format", "seed"):
        assert not secret_setting(name, 1), name
    assert secret_setting("note", "Bearer abcdef123456") and not secret_setting("note", "a plain sentence")


# -- base URLs: a query stays a query, userinfo is refused ---------------------------------------
def test_a_base_url_query_is_sent_as_the_query_of_the_chat_route(tmp_path, capsys, module_home):
    with LoopbackServer(answer="Paris") as srv:
        url = f"{srv.url}?api-version=2024-06-01"
        argv = ["run", "-b", "demo", "-m", "openai:m", "--base-url", url, "--scenarios", "parametric"]
        assert main([*argv, "--limit", "2", "--no-cache", "--out", str(tmp_path / "run")]) == 0, capsys.readouterr()
        paths = {r.path for r in srv.core.records}
    assert paths == {"/v1/chat/completions?api-version=2024-06-01"}


def test_userinfo_in_a_base_url_is_refused_never_sent_as_basic_auth(tmp_path, capsys, monkeypatch, module_home):
    monkeypatch.setenv("MMRAG_TEST_KEY", "sk-the-real-bearer-key-0007")
    with LoopbackServer(answer="Paris") as srv:
        userinfo = srv.url.replace("http://", f"http://alice:{URL_SECRET}@")
        flags = ["-b", "demo", "-m", "openai:m", "--api-key-env", "MMRAG_TEST_KEY", "--scenarios", "parametric"]
        for i, how in enumerate((["--base-url", userinfo], [])):
            if not how:
                monkeypatch.setenv("OPENAI_BASE_URL", userinfo)  # the SDK's variable, read when no flag is given
            run = tmp_path / f"run{i}"
            assert main(["run", *flags, *how, "--limit", "1", "--out", str(run)]) != 0
            err = capsys.readouterr().err
            lines = [ln for ln in err.splitlines() if "error" in ln]
            assert len(lines) == 1 and "Traceback" not in err, err
            assert "user:password@" in lines[0] and "Basic" in lines[0] and "--api-key-env" in lines[0]
            assert URL_SECRET not in err and not run.exists()
        assert not srv.core.records  # nothing was sent
    with pytest.raises(InputError, match="user:password@"):
        from mmrag.models import OpenAICompatible

        OpenAICompatible("m", f"http://bob:{URL_SECRET}@127.0.0.1:9/v1")
