"""The runtime manifest never stores an embedding credential (issue 11, "No secret is ever
stored"): the API key comes from the environment on every command."""

from __future__ import annotations

from powercontext.embedding_config import remember_embedding, resolve_embedding
from powercontext.runtime_manifest import RuntimeManifest


class _Registry:
    def __init__(self) -> None:
        self.calls: list[dict[str, object]] = []

    def embedding_model(self, name: str, **options: object) -> object:
        self.calls.append({"name": name, **options})
        return object()


def test_remembered_openai_options_leave_the_api_key_out(tmp_path, monkeypatch):
    db = str(tmp_path / "m.db")
    monkeypatch.setenv("POWERCONTEXT_EMBEDDING", "openai")
    monkeypatch.setenv("POWERCONTEXT_EMBEDDING_MODEL", "text-embedding-3-small")
    monkeypatch.setenv("POWERCONTEXT_EMBEDDING_DIMENSION", "8")
    monkeypatch.setenv("POWERCONTEXT_EMBEDDING_API_KEY", "sk-live-0123456789abcdef")
    registry = _Registry()
    resolve_embedding(db, registry=registry)  # type: ignore[arg-type]
    assert registry.calls[-1]["api_key"] == "sk-live-0123456789abcdef"
    text = RuntimeManifest.for_db(db).path.read_text("utf-8")
    assert "sk-live" not in text and '"model": "text-embedding-3-small"' in text

    # a later plain command uses the remembered model with the key from the environment
    monkeypatch.delenv("POWERCONTEXT_EMBEDDING")
    monkeypatch.setenv("POWERCONTEXT_EMBEDDING_API_KEY", "sk-rotated-key-456")
    resolve_embedding(db, registry=registry)  # type: ignore[arg-type]
    assert registry.calls[-1] == {"name": "openai", "model": "text-embedding-3-small",
                                  "dimension": 8, "api_key": "sk-rotated-key-456"}


def test_remember_embedding_after_a_migration_drops_credentials(tmp_path):
    db = str(tmp_path / "m.db")
    remember_embedding(db, "openai", {"model": "m", "dimension": 4, "api_key": "sk-secret-1"})
    assert "sk-secret-1" not in RuntimeManifest.for_db(db).path.read_text("utf-8")
