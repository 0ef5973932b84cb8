"""What kind of sentence a contract document holds, and whether an agent acts on it
(Memory RFC, "Candidate generation and model-free fallback": the deterministic adapter
for known material proposes constraints, preferences and facts; "Memory admission
rules": an entry must change a future judgment).

A sentence of a contributing guide or an agent file is read by its features, never by
matching whole sentences:

- **what it asks** (:func:`modality`): a ``constraint`` (must, never, always, do not,
  need to), a ``preference`` (should, prefer, avoid, recommended), an ``imperative``
  (it starts with an instruction verb, after an optional "If/When/Before ...," clause
  or "To X,"), or a ``description``;
- **what it names** (:func:`artifacts`): a command (``make test``, ``uv run pytest``),
  a repository path (``src/``, ``CHANGELOG.md``, ``AUTHORS``), a development tool
  (ruff, black, clippy), a named convention (PEP 8, conventional commits, docstrings,
  snake_case) or a code identifier;
- **what it is about** (:func:`topics`): build, test, lint, format, types,
  dependencies, commits, style and naming, docs, compatibility, generated files,
  toolchain versions, CI;
- **whom it addresses and where it points**: contributor social process (issue
  etiquette, forks and pull-request forms, reviews, community channels, thanks,
  sponsorship, the maintainers' own process), web-UI steps, navigation (tables of
  contents, link lists, badges, table rows, "see X for details"), and fragments whose
  referent is elsewhere ("these files", "Update it when ...", a first sentence
  starting with "This"/"Of course").

:func:`judge` combines them: a sentence is kept when it is an instruction or a fact
about the repository that names something an agent acts on (a command, path, tool or
convention, or an agent topic for an instruction); social process, UI steps,
navigation and fragments are dropped with the reason (:data:`DROP_REASONS`), even when
they are phrased as instructions. A social sentence that also names a command, path or
tool (or, for an instruction, an agent topic) outside its social words is kept: "Run
`tox` before you open a pull request" is a test rule.
"""

from __future__ import annotations

import re

import attrs

from powercontext.core.extraction.sentence_features import (
    CONSTRAINT,
    LINK,
    URL,
    WEAK_TOPICS,
    artifacts,
    is_dependent,
    modality,
    outside_links,
    plain_text,
    strip_opening,
    topics,
)

__all__ = ["DROP_REASONS", "Verdict", "is_dependent", "judge"]

DROP_REASONS = {
    "social": "contributor social process (issue etiquette, forks and pull-request forms, "
              "reviews, community channels, thanks, sponsorship, the maintainers' process)",
    "ui": "a step in a web interface (click, checkbox, button, the GitHub website)",
    "navigation": "navigation (table of contents, link list, badge, table row, a pointer "
                  "to another page)",
    "fragment": "a fragment whose referent is elsewhere (these, it, the above)",
    "vague": "names no command, file, tool, convention or agent topic",
    "not a rule": "a description, question or lead-in, not an instruction or a fact about "
                  "the repository",
    "budget": "ranked below the per-file budget",
}
"""Why a sentence of a contract document did not become an entry, by reason key."""


@attrs.frozen
class Verdict:
    """The judgment of one sentence: ``kind`` (``constraint``, ``preference``, ``fact``)
    when kept, else ``reason`` (a key of :data:`DROP_REASONS`); ``score`` ranks kept
    sentences by what an agent needs; ``topics`` and ``names`` are the features."""

    kind: str | None
    reason: str | None
    score: int = 0
    topics: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    grounded: bool = False
    """True when the sentence names a command or a repository path."""


# --------------------------------------------------------------------------- dropped kinds

_V = r"(?:s|ed|d|ing)?"
_SOCIAL_HARD = re.compile("|".join((
    # community channels
    r"\bdiscord\b|\bslack\b|\bgitter\b|\bzulip\b|\bmatrix (?:room|channel)|\birc\b|"
    r"\bforums?\b|mailing list|stack ?overflow|\btwitter\b|\bmastodon\b|social media|"
    r"\bblog(?: posts?)?\b|\bnewsletter\b|\bcommunity\b|\bget help\b|\bjoin (?:us|our)\b|"
    r"\bask (?:for help|questions?|a question|for clarification)\b|\b(?:our|the) chat\b|"
    r"\bvideo calls?\b|\bGitHub Discussions\b",
    # thanks, welcome, feelings
    r"\bthanks?\b|\bthank you\b|\bgrateful\b|\bappreciat\w*|\bwelcom\w*|\bwe'?d love\b|"
    r"\bwe love\b|\bfeel free\b|\bdon'?t hesitate\b|\bdo not hesitate\b|\benjoy\b|"
    r"\bdiscouraged\b|\bkudos\b|\bhappy to\b|\bglad to\b|\bpatience\b|\bsweet\b",
    # sponsorship, conduct, licensing of contributions, project administration
    r"\bsponsor\w*|\bdonat\w*|\bfunding\b|open ?collective|\bpatreon\b|\btidelift\b|"
    r"\bstar (?:the|this|our) (?:repo|repository|project)\b|code of conduct|"
    r"\bcontributor license\b|\bCLA\b|\blicen[cs]e(?:d|s)?\b(?! headers?)|"
    r"\breleased under\b|\bownership\b|\badministrators?\b|\b(?:commit|write|admin) access\b",
)), re.IGNORECASE)
_SOCIAL_SOFT = re.compile("|".join((
    # issue etiquette
    rf"\b(?:open{_V}|file{_V}|creat(?:e|es|ed|ing)|submit{_V}|rais(?:e|es|ed|ing)|report{_V}|"
    rf"post{_V}|search{_V}|check{_V}|look(?:s|ing)? through|comment{_V} on|link{_V} to|describ"
    r"(?:e|es|ed|ing))\b[^.;,]{0,30}\b(?:issues?|bug reports?|feature requests?|"
    r"discussions?|proposals?|tickets?)\b|\bissue (?:tracker|templates?|descriptions?)\b|"
    r"\bbug tracker\b|\bgood first issue\b|\bhelp wanted\b|\btriag\w*|\bstale\b|"
    r"\bchampions?\b|\bassign(?:ed|ee|ment)?\b|\blabel(?:l?ed|s)?\b|reproducible example|"
    r"\bmock ?ups?\b|\bdesign proposals?\b|\bpropos(?:e|ing) a (?:design|plan)\b|\bupvote|"
    r"\bon the issue\b|\bin an issue\b",
    # forks, pull-request forms, reviews, the maintainers' own process
    r"\bfork(?:ed|ing|s)?\b|\bupstream\b|pull request template|\bPR template|"
    r"\bPR (?:description|body)\b|\bfill (?:in|out)\b|\bdraft (?:PR|pull request)|"
    rf"\b(?:open{_V}|submit{_V}|send{_V}|sent|creat(?:e|es|ed|ing)|mak(?:e|es|ing)|file{_V})"
    r"\b[^.;,]{0,25}\b(?:pull requests?|PRs?|merge requests?)\b|"
    r"\bmerge strateg\w*|\bbackport\w*|\breview(?:ed|er|ers|ing|s)?\b|\bapprov(?:e|ed|al)\b|"
    r"\bping\b|\bmaintainers?\b|\bcore (?:team|developers?)\b|"
    r"\bmerg(?:e|ed|ing) (?:your|the|a) (?:PR|pull request)\b|\bprioriti\w*|\bpriority\b|"
    r"\broadmap\b|\bbacklog\b|\bauto-closed\b|\btell us\b|\blet us know\b|"
    r"\bcontact us\b|\breach out\b",
)), re.IGNORECASE)
_GENERIC_COMMAND = re.compile(r"^(?:git (?:clone|checkout|switch|branch|remote|fetch|pull|push|"
                              r"add|status|log|diff|stash|cherry-pick)|gh (?:pr|issue|repo) "
                              r"(?:create|fork|view|list)|cd|ls|mkdir|cp|mv|rm|echo|cat|source|"
                              r"\.|export)\b")
_UI = re.compile(r"\bclick\w*|\bbuttons?\b|\bcheck ?box(?:es)?\b|\bradio button|\buncheck|"
                 r"\b(?:in|on|through|via|using|from) the (?:GitHub )?(?:web (?:interface|UI|"
                 r"editor|form|page)|website|UI)\b|\bdrop-?down\b|\btoggle\b|"
                 r"\bsettings page\b", re.IGNORECASE)
_WE = re.compile(r"^(?:we|we'll|we've|we're|we'd|our (?:team|maintainers|reviewers)|the (?:core )?"
                 r"team|the maintainers|maintainers|reviewers|a maintainer|core developers)\b",
                 re.IGNORECASE)
_WE_CONVENTION = re.compile(r"^(?:we|the (?:core )?team)\s+(?:use|generate|require|follow|"
                            r"build|run|publish|release|support|target|pin|enforce|format|"
                            r"lint|test|ship|vendor|keep|store|manage)\b", re.IGNORECASE)
_POINTER = re.compile(r"^\(?\s*(?:please\s+)?(?:see|read|refer to|check out|visit|consult|"
                      r"head (?:over )?to|go to|learn more|find out more|look (?:through|at)|"
                      r"more (?:details|info(?:rmation)?)|details|for (?:more|further|full|"
                      r"additional) (?:details|information|info|help))\b", re.IGNORECASE)
def _is_navigation(text: str, kind: str) -> bool:
    if kind in ("table", "image"):
        return True
    plain = plain_text(text)
    outside = re.sub(r"[^\w\s]", " ", outside_links(text)).split()
    if LINK.search(text) and len(outside) <= 1:
        return True  # a table-of-contents line or a link list item
    pointer = bool(_POINTER.match(plain) or _POINTER.match(strip_opening(plain, plain=True)))
    target = bool(LINK.search(text) or URL.search(text) or re.search(
        r"\b(?:below|above|here|this page|the docs|documentation)\b", plain, re.IGNORECASE))
    return pointer and target and not CONSTRAINT.search(plain)


_CLAUSE = re.compile(r"\s*(?:[;:,()\u2014]|\s-{1,2}\s|\b(?:or|and|but|so|which|while|"
                     r"because|unless|if|when|that|who|where|without|before|after|"
                     r"until)\b)\s*")


def _without_social(text: str) -> str:
    """Plain ``text`` without the clauses that carry a social marker (a clause runs
    between punctuation or conjunctions; code spans are never split)."""
    parts = re.split(r"(`[^`]*`)", text)
    clauses: list[str] = [""]
    for part in parts:
        if part.startswith("`"):
            clauses[-1] += part
            continue
        pieces = _CLAUSE.split(part)
        clauses[-1] += pieces[0]
        clauses.extend(pieces[1:])
    return " ".join(c for c in clauses if not _SOCIAL_SOFT.search(c))


_STRONG_NAMES = ("command", "path", "linked", "tool", "convention")


def _grounding(names: dict[str, tuple[str, ...]], *, links: bool = True) -> bool:
    """A project command (not a generic ``git clone``/``cd``) or a repository path (a
    link's target too, unless ``links`` is false)."""
    return bool(names.get("path")) or (links and bool(names.get("linked"))) or any(
        not _GENERIC_COMMAND.match(c) for c in names.get("command", ()))


_PERSONS = re.compile(r"\b(?:users?|developers?|people|anyone|everyone|someone|contributors?|"
                      r"maintainers?|reviewers?|authors?|customers?|newcomers?|beginners?)\b",
                      re.IGNORECASE)
_MODAL = re.compile(r"\b(?:must|should|shall|need to|needs to|have to|has to|can|may)\b",
                    re.IGNORECASE)


def _about_people(plain: str) -> bool:
    """True when the subject before the sentence's first modal verb names people other
    than the reader ("any developer ... should feel no hesitation")."""
    m = _MODAL.search(plain)
    head = re.split(r"(?<=[.!?])\s+", plain[:m.start()])[-1] if m else ""
    return bool(_PERSONS.search(head)) and not re.search(r"\byou\b", head, re.IGNORECASE)


_CONVENTION_VERB = re.compile(r"\b(?:use|uses|used|using|rel(?:y|ies) on|configured|"
                              r"live|lives|belong|belongs|go(?:es)? (?:in|into|under)|"
                              r"generated|owns?|enforce[sd]?|run(?:s)? (?:by|with|through|"
                              r"via|on))\b", re.IGNORECASE)


def judge(text: str, *, kind: str = "para", weight: int = 0,
          project: frozenset[str] = frozenset(), process: bool = False) -> Verdict:
    """The :class:`Verdict` on one sentence or list item of a contract document
    (``kind`` is the block kind: ``para``, ``item``, ``table``, ``image``; ``weight``
    is added to the score, e.g. for an agent instruction file; ``project``: the
    project's own names, lowercased, which name no tool; ``process``: the sentence is
    in a section about contributor process, so it is kept only when it names a project
    command or a path outside its social clauses). Never raises."""
    plain = plain_text(text)
    if _is_navigation(text, kind):
        return Verdict(None, "navigation")
    if _SOCIAL_HARD.search(plain):
        return Verdict(None, "social")
    if not plain or plain.endswith(("?", ":")):
        return Verdict(None, "not a rule")
    if _UI.search(plain):
        return Verdict(None, "ui")
    mode = modality(text)
    names = _own(artifacts(text), project)
    about = topics(plain, plain=True)
    agent_topics = [t for t in about if t not in WEAK_TOPICS]
    flat = tuple(v for k in _STRONG_NAMES for v in names.get(k, ()))
    grounded = _grounding(names)
    opening = strip_opening(plain, plain=True)
    if _SOCIAL_SOFT.search(plain) or _WE.match(opening):
        rest = _without_social(plain)
        rest_names = _own(artifacts(rest), project)
        rest_topics = [t for t in topics(rest, plain=True) if t not in WEAK_TOPICS]
        if _WE.match(opening):
            keep = bool(_WE_CONVENTION.match(opening)) and (
                _grounding(rest_names) or bool(rest_topics))
        else:
            keep = _grounding(rest_names) or bool(rest_names.get("tool")) or bool(
                rest_names.get("convention")) or (mode != "description" and bool(rest_topics))
        if not keep:
            return Verdict(None, "social", topics=about, names=flat)
    if process and not _grounding(_own(artifacts(_without_social(plain)), project)):
        return Verdict(None, "social", topics=about, names=flat)
    strong = [k for k in _STRONG_NAMES if k in names and (k != "command" or grounded)]
    if mode == "description":
        facty = _grounding(names, links=False) or (
            "convention" in names and bool(agent_topics)) or (
            ("identifier" in names or "tool" in names) and bool(agent_topics)
            and bool(_CONVENTION_VERB.search(plain))) or (
            bool(_WE_CONVENTION.match(opening)) and bool(agent_topics))
        if not facty:
            return Verdict(None, "not a rule", topics=about, names=flat)
        kept = "fact"
    else:
        if not strong and not agent_topics:
            return Verdict(None, "vague", topics=about, names=flat)
        if not grounded and mode != "imperative" and _about_people(plain):
            return Verdict(None, "not a rule", topics=about, names=flat)
        kept = "constraint" if mode == "constraint" else "preference"
    score = weight + {"constraint": 3, "preference": 2, "fact": 1}[kept]
    score += 2 if grounded else (1 if strong else 0)
    score += min(2, len(agent_topics))
    score -= 1 if len(plain) > 300 else 0
    return Verdict(kept, None, score, about, flat, grounded)


def _own(names: dict[str, tuple[str, ...]], project: frozenset[str]
         ) -> dict[str, tuple[str, ...]]:
    """``names`` without the project's own name as a tool or identifier."""
    if not project:
        return names
    out = {k: tuple(v for v in vs if k not in ("tool", "identifier", "command")
                    or v.lower().strip("`") not in project) for k, vs in names.items()}
    return {k: v for k, v in out.items() if v}
