"""Sources carrying a canary string and fake API keys: no log line of any process
(``topic process -v``, the Supervisor and its Workers, ``serve``) contains either (Topic
Memory RFC, "Retry and observability": logs "must not contain original Source content,
Prompts, complete model outputs, or secrets").

The keys are shaped like real ones but pass the capture-time secret scanner (a Hugging
Face token ``hf_`` + 34 characters and a Stripe test key ``sk_test_`` + 24; an OpenAI
``sk-``, Anthropic ``sk-ant-``, Google ``AIza``, AWS ``AKIA``, GitHub ``ghp_``, GitLab
``glpat-`` or Slack ``xox`` key is refused at ``source add``, so it never reaches a log
at all). The provider fails once with an error that QUOTES its input (as an SDK error
echoing a rejected request does), so a log of an exception message or a traceback would
leak the canary."""

from __future__ import annotations

import re
import secrets
import string
import subprocess

import pytest
from support.chaos import ChaosEnv, SupervisorProcess, post, wait_for, write_config
from support.chaos_check import check_quiescent, cursors, pending_rows
from support.cli import cli_argv

pytestmark = [pytest.mark.chaos, pytest.mark.slow, pytest.mark.subprocess]

_ALNUM = string.ascii_letters + string.digits
KEY_SHAPES = re.compile(r"hf_[A-Za-z0-9]{34}|sk_test_[A-Za-z0-9]{24}")


def _token(n: int) -> str:
    return "".join(secrets.choice(_ALNUM) for _ in range(n))


def secret_texts() -> tuple[str, list[str], list[str]]:
    """(canary, fake keys, Source texts carrying both)."""
    canary = f"CANARY{secrets.token_hex(8)}"
    keys = [f"hf_{_token(34)}", f"sk_test_{_token(24)}"]
    texts = [
        # no credential word before a key: "the deploy token is KEY" is refused at capture
        f"# Deploy notes\n\nThe staging deploy uses {keys[0]} ({canary}).\n",
        f"# Billing\n\nBilling tests use {keys[1]}; remember {canary} when paying.\n",
        f"# Deploy notes\n\nRollback takes five minutes; marker {canary}.\n",
    ]
    return canary, keys, texts


def cli(chaos: ChaosEnv, db: str, name: str | None, *args: str, expect: int = 0
        ) -> subprocess.CompletedProcess[str]:
    """The CLI as its own process; its output kept as a log unless ``name`` is None
    (a command whose stdout is meant to carry Source text, e.g. a search)."""
    out = subprocess.run([*cli_argv(), "--db", db, *args], env=chaos.env(),
                         capture_output=True, text=True, timeout=300)
    if name is not None:
        (chaos.logs / f"{name}.log").write_text(out.stdout + out.stderr, encoding="utf-8")
    else:
        (chaos.logs / "stderr-only.log").write_text(out.stderr, encoding="utf-8")
    assert out.returncode == expect, (args, out.returncode, out.stdout, out.stderr)
    return out


def add_sources(chaos: ChaosEnv, db: str, scope: str, texts: list[str]) -> None:
    """``source add`` of each text as a file (the real capture path, secret scan
    included); the keys pass it."""
    files = []
    for i, text in enumerate(texts):
        path = chaos.root / f"note-{i}.md"
        path.write_text(text, encoding="utf-8")
        files.append(str(path))
    out = subprocess.run([*cli_argv(), "--db", db, "--json", "source", "add", "--scope",
                          scope, *files], env=chaos.env(), capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, (out.stdout, out.stderr)


def assert_no_leak(output: str, canary: str, keys: list[str]) -> None:
    assert output.strip(), "no output captured: the check would pass vacuously"
    assert canary not in output, "the canary reached a log"
    for key in keys:
        assert key not in output, f"a fake API key ({key[:3]}...) reached a log"
    assert not KEY_SHAPES.search(output), KEY_SHAPES.search(output)


@pytest.mark.parametrize("error", [
    "sdk",
    # a plugin provider's BackendError quoting its request: described by its type alone
    # (core.errors.describe_error); `topic process` printed its text before
    "backend",
])
def test_topic_process_logs_carry_no_source_text_or_key(chaos, db_url, error):
    canary, keys, texts = secret_texts()
    scope = "chaos:canary"
    add_sources(chaos, db_url, scope, texts)
    config = write_config(chaos.root / "config.toml", window_limit=2)
    (chaos.control / "fail-once-evolve").write_text(canary, encoding="utf-8")
    if error == "backend":
        (chaos.control / "fail-kind").write_text("backend", encoding="utf-8")
    failed = cli(chaos, db_url, "process-1", "topic", "process", "-v", "--scope", scope,
                 "--once", "--config", str(config), expect=8)
    assert "error_code" in failed.stderr or "failed" in failed.stderr
    done = cli(chaos, db_url, "process-2", "topic", "process", "-v", "--scope", scope,
               "--once", "--config", str(config))
    assert "window (" in done.stderr  # the logs were really captured
    cli(chaos, db_url, "status", "--json", "topic", "status", "--scope", scope)
    assert_no_leak(chaos.all_output(), canary, keys)
    check_quiescent(db_url)
    # the Sources kept their text: the canary is stored and found, only the logs lack it
    found = cli(chaos, db_url, None, "--json", "topic", "search", "--scope", scope, canary)
    assert canary in found.stdout
    assert_no_leak(chaos.all_output(), canary, keys)


def _exercise_api(base: str, scope: str, canary: str, keys: list[str]) -> None:
    """search and get that carry the canary in their answers, and bad requests that
    carry it (and a key) in their bodies: the answers may echo them, no log may."""
    status, body = post(base, "/v1/topic-memory/search", {"scope_id": scope, "query": canary})
    assert status == 200, body
    assert body["hits"] and canary in str(body)  # the data really flows through
    ref = body["hits"][0]["artifact"]
    status, body = post(base, "/v1/topic-memory/get", {"scope_id": scope, "artifact": ref})
    assert status == 200 and canary in body["detail"], body
    bad = [
        ("/v1/topic-memory/search", {"scope_id": scope, "query": canary, "x": keys[0]}),
        ("/v1/topic-memory/search", {"scope_id": f"{canary}\u0000", "query": keys[1]}),
        ("/v1/topic-memory/search", {"scope_id": scope, "query": canary * 2000}),
        ("/v1/topic-memory/get", {"scope_id": scope, "artifact": {
            "family": "topic-memory", "artifact_id": keys[0], "revision": 1}}),
        ("/v1/topic-memory/flush", {"scope_id": [canary, keys[1]]}),
    ]
    for path, request in bad:
        status, _ = post(base, path, request)
        assert status in (404, 422), (path, status)
    status, _ = post(base, "/v1/topic-memory/search", None,
                     raw=f'{{"scope_id": "{canary}", "query": {keys[0]}'.encode())
    assert status == 422


@pytest.mark.usefixtures("needs_supervisor")  # serve --role all starts one
def test_serve_logs_carry_no_source_text_or_key(chaos, db_url, procs):
    canary, keys, texts = secret_texts()
    scope = "chaos:canary"
    add_sources(chaos, db_url, scope, texts)
    config = write_config(chaos.root / "config.toml", window_limit=2, control=chaos.control)
    cli(chaos, db_url, "process", "topic", "process", "-v", "--scope", scope, "--once",
        "--config", str(config))
    serve = SupervisorProcess.serve(chaos, db_url, config)
    procs.append(serve)
    base = serve.base_url()
    status, body = post(base, "/v1/topic-memory/flush", {"scope_id": scope})
    assert (status, body) == (200, {"status": "idle"})
    _exercise_api(base, scope, canary, keys)
    serve.stop()
    assert "serving http://" in serve.output()
    assert_no_leak(chaos.all_output(), canary, keys)
    check_quiescent(db_url)


@pytest.mark.usefixtures("needs_supervisor")
def test_supervisor_and_worker_logs_carry_no_source_text_or_key(chaos, db_url, procs):
    """serve --role all with its Supervisor: the flush is processed by Workers, the first
    attempt failing with an error that quotes the Source text (then retried after its
    backoff); serve's stderr holds the Supervisor's and the Workers' logs."""
    canary, keys, texts = secret_texts()
    scope = "chaos:canary"
    add_sources(chaos, db_url, scope, texts)
    config = write_config(chaos.root / "config.toml", window_limit=2, control=chaos.control)
    (chaos.control / "fail-once-evolve").write_text(canary, encoding="utf-8")
    (chaos.control / "fail-kind").write_text("backend", encoding="utf-8")  # the harder one
    serve = SupervisorProcess.serve(chaos, db_url, config)
    procs.append(serve)
    base = serve.base_url()
    status, body = post(base, "/v1/topic-memory/flush", {"scope_id": scope})
    assert (status, body) == (200, {"status": "accepted"})
    wait_for(lambda: cursors(db_url).get(scope) == len(texts) and not pending_rows(db_url),
             180, "the Supervisor to process the Scope (after one failure)")
    assert not (chaos.control / "fail-once-evolve").exists()  # the failure did happen
    _exercise_api(base, scope, canary, keys)
    serve.stop()
    output = chaos.all_output()
    assert "error_code" in output  # the failure was logged, by code
    assert_no_leak(output, canary, keys)
    check_quiescent(db_url)
