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
from support.chaos import ChaosEnv, write_config
from support.chaos_check import check_quiescent
from support.cli import cli_argv

pytestmark = pytest.mark.chaos

_ALNUM = string.ascii_letters + string.digits
KEY_SHAPES = re.compile(r"hf_[A-Za-z0-9]{34}|sk_test_[A-Za-z0-9]{24}")


def _token(n: int) -> str:
    return "".join(secrets.choice(_ALNUM) for _ in range(n))


def secret_texts() -> tuple[str, list[str], list[str]]:
    """(canary, fake keys, Source texts carrying both)."""
    canary = f"CANARY{secrets.token_hex(8)}"
    keys = [f"hf_{_token(34)}", f"sk_test_{_token(24)}"]
    texts = [
        f"# Deploy notes\n\nThe deploy token for staging is {keys[0]} ({canary}).\n",
        f"# Billing\n\nBilling tests use {keys[1]}; remember {canary} when paying.\n",
        f"# Deploy notes\n\nRollback takes five minutes; marker {canary}.\n",
    ]
    return canary, keys, texts


def cli(chaos: ChaosEnv, db: str, name: str, *args: str, expect: int = 0
        ) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([*cli_argv(), "--db", db, *args], env=chaos.env(),
                         capture_output=True, text=True, timeout=300)
    (chaos.logs / f"{name}.log").write_text(out.stdout + out.stderr, encoding="utf-8")
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


def test_topic_process_logs_carry_no_source_text_or_key(chaos, db_url):
    canary, keys, texts = secret_texts()
    scope = "chaos:canary"
    add_sources(chaos, db_url, scope, texts)
    config = write_config(chaos.root / "config.toml", window_limit=2)
    (chaos.control / "fail-once-evolve").write_text(canary, encoding="utf-8")
    failed = cli(chaos, db_url, "process-1", "topic", "process", "-v", "--scope", scope,
                 "--once", "--config", str(config), expect=8)
    assert "error_code" in failed.stderr or "failed" in failed.stderr
    done = cli(chaos, db_url, "process-2", "topic", "process", "-v", "--scope", scope,
               "--once", "--config", str(config))
    assert "window (" in done.stderr  # the logs were really captured
    cli(chaos, db_url, "status", "--json", "topic", "status", "--scope", scope)
    assert_no_leak(chaos.all_output(), canary, keys)
    check_quiescent(db_url)
    # the Sources kept their text: the canary is stored, only the logs lack it
    found = cli(chaos, db_url, "search", "--json", "topic", "search", "--scope", scope,
                canary.lower())
    assert found.returncode == 0
