"""Repositories for the prompt hook's recall tests: the entries a bootstrap stores for
four kinds of project (the contract topics ``Test command:``, ``Verification commands:``,
``Build and dependencies:``, ``<Language> requirement:`` and rules in a contributing
guide's words, with some contributor chatter of the kind a bootstrap may keep), and the
prompts of each kind a coding agent gets, with the entry that must answer each one.
None of these are the agent-eval repositories; the same kinds of prompts must behave
the same on every one of them."""

from __future__ import annotations

from typing import Any

__all__ = ["EMPTY_PROMPTS", "REPOS"]

REPOS: dict[str, dict[str, Any]] = {
    "py-uv": {
        "entries": [
            ("fact", "Build and dependencies: acme builds with Hatchling (build-backend "
                     "hatchling.build); dependencies are managed with uv (see Makefile)."),
            ("constraint", "Python requirement: acme requires Python >=3.9 (requires-python "
                           "in pyproject.toml)."),
            ("preference", "Test command: run `uv run pytest` for routine code changes; "
                           "pytest is configured in pyproject.toml."),
            ("preference", "Verification commands: `make lint` (ruff); `make typecheck` "
                           "(mypy); `pre-commit run --all-files` (hooks: ruff, ruff-format)."),
            ("preference", "Build the docs locally with `uv run mkdocs serve` before "
                           "sending a docs change."),
            ("constraint", "Every pull request needs a news fragment in changes/ "
                           "(towncrier)."),
            ("preference", "Use Conventional Commits for commit messages "
                           "(feat:, fix:, docs:)."),
            ("constraint", "New parameters must keep the old behaviour by default: no "
                           "breaking changes without a deprecation period."),
            ("preference", "Join us on Discord to say hello."),
            ("preference", "We are grateful for every contribution, big or small."),
        ],
        "prompts": [
            ("Add a `--color` option to the CLI and make sure lint passes", ["make lint"]),
            ("Fix the failing test in tests/test_cli.py and run the tests",
             ["uv run pytest"]),
            ("Which checks do I need to run to verify my change?",
             ["Verification commands"]),
            ("Bump the minimum Python version to 3.10", ["Python requirement"]),
            ("Write docs for the new `--color` option", ["mkdocs serve"]),
            ("Write the commit message for this fix", ["Conventional Commits"]),
            ("Open a pull request for this bugfix", ["news fragment"]),
            ("Run the type checker on acme/cli.py", ["make typecheck"]),
        ],
        "noise": ["Discord", "grateful"],
    },
    "ts-pnpm": {
        "entries": [
            ("fact", "Build and dependencies: widgetkit is a Node.js package managed with "
                     "pnpm; build with `pnpm build` (`tsup src/index.ts`)."),
            ("constraint", "Node requirement: widgetkit requires Node >=18 (engines in "
                           "package.json)."),
            ("preference", "Test command: run `pnpm test` (`vitest run`) for routine code "
                           "changes."),
            ("preference", "Verification commands: `pnpm run lint` (`eslint .`); "
                           "`pnpm run format:check` (`prettier --check .`); "
                           "`pnpm run typecheck` (`tsc --noEmit`)."),
            ("constraint", "Never commit the generated `dist/` folder."),
            ("preference", "Add a changeset (`pnpm changeset`) to every pull request that "
                           "changes the published package."),
            ("preference", "Thanks for taking the time to contribute!"),
        ],
        "prompts": [
            ("Add a `maxRetries` option to the client and make sure lint passes",
             ["pnpm run lint"]),
            ("Fix the flaky test in src/client.test.ts and run the tests before committing",
             ["pnpm test"]),
            ("Make sure everything is verified before I push", ["Verification commands"]),
            ("Format the code", ["prettier"]),
            ("Bump the minimum Node version to 20", ["Node requirement"]),
            ("Build the bundle", ["pnpm build"]),
            ("Prepare the release notes for the next version", ["changeset"]),
            ("Commit the rebuilt dist files together with my change", ["dist/"]),
        ],
        "noise": ["Thanks for taking the time"],
    },
    "rust-cargo": {
        "entries": [
            ("preference", "Test command: run `cargo test --all` for routine code changes."),
            ("preference", "Verification commands: `cargo clippy --all-targets -- -D "
                           "warnings` (clippy); `cargo fmt --all -- --check` (rustfmt)."),
            ("constraint", "Rust requirement: the MSRV is 1.74 (rust-version in "
                           "Cargo.toml)."),
            ("preference", "Release: bump the version in Cargo.toml and add an entry to "
                           "CHANGELOG.md."),
            ("preference", "The book lives in book/ and is built with `mdbook build book`."),
            ("preference", "Be nice to each other in the issue tracker."),
        ],
        "prompts": [
            ("Add a new `--json` flag and make sure clippy and fmt pass",
             ["cargo clippy", "cargo fmt"]),
            ("Fix the failing integration test in tests/cli.rs and run the tests",
             ["cargo test"]),
            ("Bump the minimum supported Rust version", ["MSRV"]),
            ("Cut a release: bump the version", ["Release: bump the version"]),
            ("Write docs for the new flag in the book", ["mdbook"]),
        ],
        "noise": ["Be nice"],
    },
    "go-make": {
        "entries": [
            ("preference", "Test command: run `make test` (go) for routine code changes."),
            ("preference", "Verification commands: `make lint` (golangci-lint); "
                           "`go vet ./...`."),
            ("constraint", "Go requirement: go 1.22 (go.mod)."),
            ("preference", "Build the binary with `make build`; it writes bin/tool."),
            ("preference", "Generated files under internal/gen must be rebuilt with "
                           "`go generate ./...`, never edited by hand."),
            ("preference", "Follow the code of conduct."),
        ],
        "prompts": [
            ("Add a `--json` output flag to `tool list` and make sure the tests pass",
             ["make test"]),
            ("Build the binary so I can try my change locally", ["make build"]),
            ("Bump the Go version to 1.23", ["Go requirement"]),
            ("Which checks do I need to run to verify my change?", ["make lint"]),
            ("Regenerate the files in internal/gen after my schema change",
             ["go generate"]),
        ],
        "noise": ["code of conduct"],
    },
}
"""Each repository: ``entries`` ((kind, text) as a bootstrap stores them), ``prompts``
((prompt, the texts the injected context must contain)) and ``noise`` (texts never to be
injected)."""

EMPTY_PROMPTS = (
    "Explain what this regex does: `^(\\d+)-(\\w+)$`",
    "What is the difference between a process and a thread?",
    "Make sure you explain recursion simply, with an example in any language",
    "Summarise this stack trace for me: ZeroDivisionError in line 3",
    "What does HTTP status 418 mean?",
    "Tell me a joke about compilers, please",
)
"""Prompts that nothing in any of :data:`REPOS` answers: the hook injects nothing."""
