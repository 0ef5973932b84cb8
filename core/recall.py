"""What the prompt hook may inject, and in which order: the relevance bar and the slots
(``docs/hooks.md``, "What is injected"). Pure functions of the prompt, the candidate
texts and an :class:`~powercontext.core.analyzer.Analyzer`.

A prompt becomes a :class:`PromptProfile`: the development-task intents it asks for
(:func:`powercontext.core.intents.prompt_intents`) and its *specific* terms: the
analyzer terms of its words that are not conversational filler, not one of the common
words of coding prompts (:data:`COMMON_WORDS`: "add", "fix", "make", "sure", "change",
"option", ...), not a word that signalled an intent, at least three characters long
and not a number; the joined token of an identifier-shaped word (``src/app.py``,
``needs-design``, ``--lf``, ``retryDelay``) is an *identifier* term.

:func:`judge` holds a candidate text to the bar: it is relevant when it answers an
intent the prompt has (it names the intent's words or, counted double, its tools and
commands), or contains two of the prompt's specific terms, or one identifier term. A
text that shares one ordinary word with the prompt ("python", "list") is not: a common
word alone never injects anything. Its score orders the slots (:func:`order_slots`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol, TypeVar

from powercontext.core import intents as intent_vocabulary

__all__ = [
    "COMMON_WORDS",
    "FILLER_WORDS",
    "MAX_NOTES",
    "MAX_SLOTS",
    "RELATED",
    "SPARE_SLOTS",
    "PromptProfile",
    "Verdict",
    "identifier_shaped",
    "judge",
    "kind_rank",
    "note_refs",
    "order_slots",
    "profile_prompt",
    "raw_dump",
    "receipt_terms",
    "slot_limit",
]

#: Conversational words that say nothing about the repository (compared lower-case).
_FILLER = """
please pls could can would should might may must shall want wanted need needs like just
also really actually basically thing things something anything everything nothing know
think help sure thanks thank hey hi hello okay ok maybe going get got let lets let's way
one now here some any all more most very much many yes no not don't doesn't can't i'm
it's that's there's we're you're thing stuff kind sort bit lot little quite rather
again still even only well yet already ever never always sometime sometimes today
"""
FILLER_WORDS = frozenset(_FILLER.split())

#: Words every coding prompt uses, whatever the repository: they never make a text
#: relevant by themselves (an intent's words are handled by the intent).
_COMMON = """
add adds added adding new change changes changed changing fix fixes fixed fixing make
makes making sure run runs running ran write writes written writing update updates
updated updating use uses used using code file files option options function functions
method methods work works worked working pass passes passed passing fail fails failed
failing check checks explain difference between mean means meaning tell show find look
try get set one two three first last next again same other thing way mine local
locally after before into onto from with without what how why which where when does
doing done do did it this that these those there here then than also too now just
current latest project repo repository branch main command commands line lines value
values default error errors issue issues bug bugs problem problems case cases part
parts step steps time times place example examples name names number numbers text type
types thing stuff everything something anything whole full small big long short good
bad right wrong correct sure able help need want keep give take put open close start
stop call calls called return returns read reads see seen look looks like
"""
COMMON_WORDS = frozenset(_COMMON.split())

#: At most this many ``working_note`` entries are injected into one prompt.
MAX_NOTES = 2
#: A prompt never gets more than this many items, however many intents it asks for.
MAX_SLOTS = 8
#: Slots left for other items after the answers to the intents a prompt asks for.
SPARE_SLOTS = 2
#: The strength of an intent answered through one of its ``related`` intents (a tool or
#: command is 2, a word 1).
RELATED = 0
_INTENT_SCORE = {2: 4.0, 1: 2.0, RELATED: 1.5}
#: A Topic summary longer than this is not a summary (:func:`raw_dump`).
MAX_SUMMARY_CHARS = 600
#: A text with more of these characters than 1 in :data:`MARKUP_RATIO` is markup or code.
MARKUP_RATIO = 30
_MARKUP = "=[]{}$;|<>\\"

_STRIP = "\"'`.,;:!?()[]{}<>*"
_IDENT_SHAPE = re.compile(r"[A-Za-z0-9][_./:\\-]+[A-Za-z0-9]|[a-z][A-Z]|^--?[A-Za-z]")
_CODE = re.compile(r"`([^`\n]{2,120})`")
_PATH = re.compile(r"(?<![\w/.-])(?:[\w.-]+/)+[\w.-]+|(?<![\w/.-])[\w-]+\.(?:py|js|ts|tsx|jsx"
                   r"|rs|go|rb|java|md|rst|toml|json|yml|yaml|cfg|ini|txt|svg)\b")


class _Analyzer(Protocol):
    def query_terms(self, query: str) -> tuple[str, ...]: ...


_KIND_RANK = {"constraint": 0, "preference": 0, "decision": 0, "working_note": 2}


def kind_rank(kind: str | None) -> int:
    """How entries of ``kind`` are listed (``memory show``, the dashboard, the prompt's
    slots): 0 for the rules (constraint, preference, decision), 1 for facts and every
    other kind, 2 for ``working_note`` (session progress comes last)."""
    return _KIND_RANK.get(kind or "", 1)


def identifier_shaped(word: str) -> bool:
    """A word written like an identifier, a path or a flag: letters and digits joined by
    ``_ . / : \\ -``, camelCase, or a leading ``-``/``--``; with at least three
    letters."""
    return bool(_IDENT_SHAPE.search(word)) and sum(c.isascii() and c.isalpha()
                                                    for c in word) >= 3


class PromptProfile(NamedTuple):
    """What a prompt asks for: ``intents`` (the names of the intents it signals, in
    vocabulary order), ``terms`` (its specific analyzer terms) and ``identifiers``
    (those of them that are the terms of identifier-shaped words). An immutable
    ``NamedTuple`` (cheaper to define than an attrs class: the prompt hook imports this
    module on every prompt)."""

    intents: tuple[str, ...] = ()
    terms: frozenset[str] = frozenset()
    identifiers: frozenset[str] = frozenset()

    @property
    def empty(self) -> bool:
        return not self.intents and not self.terms


def profile_prompt(prompt: str, analyzer: _Analyzer) -> PromptProfile:
    """The :class:`PromptProfile` of ``prompt`` under ``analyzer`` (the database's).
    Path-like words do not signal intents (``pkg/cmd/pr/create`` is not a pull
    request); their terms still count. A word of a signal that signals the intent on its
    own ("lint", "tests") is not a specific term; the other words of a signal are ("add
    a `retryDelay` option": ``retryDelay`` and "option" stay)."""
    intents = intent_vocabulary.prompt_intents(prompt)
    dull: set[str] = set()
    for name, signalled in intents.items():
        signals = intent_vocabulary.intent(name).signals
        for phrase in signalled:
            for word in phrase.split():  # "lint", "tests", not the option a phrase names
                if signals.find([word]):
                    dull.update(analyzer.query_terms(word))
    terms: set[str] = set()
    idents: set[str] = set()
    for raw in prompt.split():
        word = raw.strip(_STRIP)
        if not word or word.lower() in FILLER_WORDS or word.lower() in COMMON_WORDS:
            continue
        found = analyzer.query_terms(word)
        shaped = identifier_shaped(word)
        for t in found:
            if t in dull or t.isdigit() or (len(t) < 3 and not shaped):
                continue
            if shaped and (t.startswith(("j_", "jx_")) or len(found) == 1):
                idents.add(t)
            elif len(t) >= 3:
                terms.add(t)
    return PromptProfile(tuple(intents), frozenset(terms | idents), frozenset(idents))


class Verdict(NamedTuple):
    """Why a text passes the bar: ``score`` (higher first), the prompt's ``intents`` it
    answers (name -> 2 for a tool or command, 1 for a word, :data:`RELATED` through a
    related intent the prompt does not ask for itself), the prompt's specific
    ``terms`` it contains, and how many of them (the first ``idents``) are identifier
    terms; ``facets``: the related intents through which it answers (``changelog`` for
    a pull request); ``collapsed``: the ids of the lower-ranked candidates that gave
    the same answer and were left out for it (:func:`order_slots`). An immutable
    ``NamedTuple``."""

    score: float
    intents: tuple[tuple[str, int], ...] = ()
    terms: tuple[str, ...] = ()
    idents: int = 0
    facets: tuple[str, ...] = ()
    collapsed: tuple[str, ...] = ()


def judge(profile: PromptProfile, text: str, analyzer: _Analyzer,
          own_names: tuple[str, ...] = ()) -> Verdict | None:
    """The :class:`Verdict` of ``text`` for ``profile``, or None when it does not pass
    the bar (module docstring). A prompt term that ``text`` names as a file, a directory
    or a one-word code span (``dist/``) counts as an identifier term. URLs are not read
    (:func:`~powercontext.core.intents.plain`). Score: 4 per answered intent named by a
    tool or command, 2 per intent answered by its words, 2 per identifier term, 1 per
    other specific term; an intent answered only through a related intent 1.5.
    ``own_names``: the repository's own names
    (:func:`~powercontext.core.intents.entry_intents`)."""
    if profile.empty:
        return None
    realised = intent_vocabulary.entry_intents(text, own_names) if profile.intents else {}
    answered: tuple[tuple[str, int], ...] = ()
    facets: dict[str, None] = {}
    for name in profile.intents:
        if name in realised:
            answered += ((name, realised[name]),)
            continue
        via = [r for r in intent_vocabulary.intent(name).related
               if r in realised and r not in profile.intents]
        if via:
            answered += ((name, RELATED),)
            facets.update(dict.fromkeys(via))
    matched: tuple[str, ...] = ()
    named: set[str] = set()
    if profile.terms:
        bare = intent_vocabulary.plain(text)
        hits = profile.terms & _terms_in(bare, profile.terms, analyzer)
        if hits - profile.identifiers:
            named = set(hits) & _named_terms(bare, analyzer)
        strong = (hits & profile.identifiers) | named
        matched = tuple(sorted(strong)) + tuple(sorted(hits - strong))
    idents = sum(1 for t in matched if t in profile.identifiers or t in named)
    if not answered and len(matched) < 2 and not idents:
        return None
    score = sum(_INTENT_SCORE[s] for _, s in answered) + 2.0 * idents + (
        len(matched) - idents)
    return Verdict(score, answered, matched, idents, tuple(facets))


_JOINERS = frozenset("_./:\\-")
_WORD = re.compile(r"[^\W_]+")


def _terms_in(text: str, wanted: frozenset[str], analyzer: _Analyzer) -> set[str]:
    """The analyzer terms of ``text`` that may be among ``wanted``: the same answer as
    ``set(analyzer.query_terms(text)) & wanted``, computed by analysing only the words
    that can give one (a term starts with the first three characters of its word:
    stemming changes suffixes only; a joined term needs a word with ``_ . / : \\ -``).
    The whole text is analysed when a wanted term is not a plain ASCII word's."""
    plain_terms = [t for t in wanted if not t.startswith(("j_", "jx_"))]
    if any(not (t.isascii() and t.replace("_", "").isalnum()) or t.startswith(
            ("x_", "u_", "b_", "g_", "gb_", "h_")) for t in plain_terms):
        return set(analyzer.query_terms(text))
    heads = {t[:3] for t in plain_terms}
    joined = len(plain_terms) < len(wanted)
    out: set[str] = set()
    for chunk in text.split():
        if (joined and any(c in _JOINERS for c in chunk)) or any(
                w[:3] in heads for w in _WORD.findall(chunk.casefold())):
            out.update(analyzer.query_terms(chunk))
    return out


def _named_terms(text: str, analyzer: _Analyzer) -> set[str]:
    """The terms of the one-word files, directories and commands ``text`` names: its
    path-like words and code spans that are one word but for slashes and dots
    (``dist/``, `` `tox` ``; not ``AGENTS.md``)."""
    out: set[str] = set()
    names = [m.group(0) for m in _PATH.finditer(text)]
    names += [m.group(1).strip() for m in _CODE.finditer(text)]
    for name in names:
        one = name.strip("./")
        if one and (one.replace("_", "").isalnum()):
            out.update(analyzer.query_terms(one))
    return out


def note_refs(text: str) -> frozenset[str]:
    """The files and commands a note names: its code spans and path-like words,
    lower-cased (how :func:`order_slots` tells that a newer note covers an older one)."""
    refs = {m.group(1).strip().lower() for m in _CODE.finditer(text)}
    refs.update(m.group(0).lower() for m in _PATH.finditer(text))
    return frozenset(r for r in refs if r)


class _Slot(Protocol):
    @property
    def kind(self) -> str | None: ...
    @property
    def text(self) -> str: ...
    @property
    def entry_version_id(self) -> str: ...


S = TypeVar("S", bound=_Slot)


def slot_limit(limit: int, asked: int) -> int:
    """How many items a prompt may get: ``limit``, raised so that the best answers of
    the ``asked`` intents leave :data:`SPARE_SLOTS` slots for the rest, to at most
    :data:`MAX_SLOTS` (a prompt that asks for tests, lint, a commit and a changelog
    gets each answered); a ``limit`` under 3 is kept as given."""
    if limit < 3:
        return max(limit, 0)
    return max(limit, min(MAX_SLOTS, asked + SPARE_SLOTS))


def order_slots(candidates: Sequence[tuple[S, Verdict]], limit: int,
                corrects: Callable[[str, str], bool] | None = None,
                intents: Sequence[str] = (),
                ident: Callable[[S], str] | None = None) -> list[tuple[S, Verdict]]:
    """The (item, verdict) pairs injected, from ``candidates`` in their retrieval order
    (ties keep it), at most :func:`slot_limit` of ``limit``:

    1. every candidate that passes the bar competes (a rule that answers an intent in
       words is kept beside the commands that answer it: "look for an existing test
       file" beside "run `tox`");
    2. one slot per answer: an entry that gives the same answer as a better-ranked one
       (:func:`powercontext.core.answers.same_answer`: the same commands or files,
       asked for the same way, or nearly the same words) and answers no other intent,
       none more strongly, and no other identifier term is left out; the kept one's
       verdict lists it in ``collapsed`` (``ident`` of each item, default its
       ``entry_version_id``);
    3. entries other than ``working_note`` come first: the best of each of the
       prompt's ``intents`` (in that order) is kept first, so every intent asked for is
       answered, then the best of each related facet (the changelog of a pull request),
       then, slot by slot, the one that adds most to those picked (:func:`_gain`: its
       score without the intents a picked item answers as strongly, so a rule naming
       the prompt's own terms beats a third command that runs the same tests; ties by
       score, then retrieval order); shown by score;
    4. then at most :data:`MAX_NOTES` notes, newest first (ids are time-ordered: the
       larger ``entry_version_id`` was written later), a note left out altogether when
       a newer relevant note names one of its files or commands (:func:`note_refs`);
       notes are the first to go when the slots are full;
    5. an entry other than a note that corrects another one present
       (``corrects(new_text, old_text)``) is moved just above it, so a correction is
       never shown below what it replaces.
    """
    if not candidates or limit < 1:
        return []
    best: dict[str, int] = {}
    for _, v in candidates:
        for name, strength in v.intents:
            best[name] = max(best.get(name, 0), strength)

    kept = list(enumerate(candidates))
    rules = _one_per_answer(sorted((ic for ic in kept if ic[1][0].kind != "working_note"),
                                   key=lambda ic: (-ic[1][1].score, ic[0])), ident)
    picked: list[tuple[int, tuple[S, Verdict]]] = []
    for name in intents:
        for ic in rules:
            if ic not in picked and (name, best.get(name, 0)) in ic[1][1].intents:
                picked.append(ic)
                break
    slots = slot_limit(limit, len(picked))
    facets = dict.fromkeys(f for _, (_, v) in rules for f in v.facets)
    for facet in facets:
        for ic in rules:
            if ic not in picked and facet in ic[1][1].facets:
                picked.append(ic)
                break
    picked = picked[:slots]
    rest = [ic for ic in rules if ic not in picked]
    while rest and len(picked) < slots:
        answered = [ic[1][1] for ic in picked]
        nxt = min(rest, key=lambda ic: (-_gain(ic[1][1], answered), -ic[1][1].score, ic[0]))
        picked.append(nxt)
        rest.remove(nxt)
    picked.sort(key=lambda ic: (-ic[1][1].score, ic[0]))
    notes = sorted((c for c in kept if c[1][0].kind == "working_note"),
                   key=lambda ic: ic[1][0].entry_version_id, reverse=True)
    fresh: list[tuple[S, Verdict]] = []
    covered: set[str] = set()
    for _, (item, verdict) in notes:
        refs = note_refs(item.text)
        if refs & covered:
            continue  # a newer note names the same files or commands
        covered |= refs
        fresh.append((item, verdict))
    chosen = [c for _, c in picked] + fresh[:MAX_NOTES]
    if corrects is not None:
        chosen = _corrections_first(chosen, corrects)
    return chosen[:slots]


def _gain(v: Verdict, picked: Sequence[Verdict]) -> float:
    """What ``v`` adds to the ``picked`` verdicts (:func:`order_slots`, step 3): its
    score without the intents a picked item already answers as strongly (a second
    "run the tests" command adds nothing; the rule on where a new test goes adds its
    own terms)."""
    covered: dict[str, int] = {}
    for p in picked:
        for name, strength in p.intents:
            covered[name] = max(covered.get(name, -1), strength)
    fresh = sum(_INTENT_SCORE[s] for name, s in v.intents if covered.get(name, -1) < s)
    return fresh + 2.0 * v.idents + (len(v.terms) - v.idents)


def _one_per_answer(rules: list[tuple[int, tuple[S, Verdict]]],
                    ident: Callable[[S], str] | None
                    ) -> list[tuple[int, tuple[S, Verdict]]]:
    """``rules`` (best first) without those that give the same answer as a better one
    (:func:`order_slots`, step 2); each kept verdict names what it stands for."""
    from powercontext.core.answers import answer_of, same_answer

    out: list[tuple[int, tuple[S, Verdict]]] = []
    memo: dict[str, Any] = {}  # text -> its Answer, read only when compared

    def answer(text: str) -> Any:
        if text not in memo:
            memo[text] = answer_of(text)
        return memo[text]

    def key(item: S) -> str:
        return ident(item) if ident is not None else item.entry_version_id

    for i, (item, v) in rules:
        for k, (j, (kept_item, kept_v)) in enumerate(out):
            if _covers(kept_v, v) and same_answer(answer(item.text), answer(kept_item.text)):
                out[k] = (j, (kept_item, kept_v._replace(
                    collapsed=(*kept_v.collapsed, key(item)))))
                break
            if _covers(v, kept_v) and same_answer(answer(item.text), answer(kept_item.text)):
                # the same answer given more strongly: it stands for the better-ranked one
                out[k] = (j, (item, v._replace(
                    collapsed=(key(kept_item), *kept_v.collapsed, *v.collapsed))))
                break
        else:
            out.append((i, (item, v)))
    return out


def _covers(kept: Verdict, other: Verdict) -> bool:
    """``kept`` answers every intent of ``other`` at least as strongly and holds each of
    its identifier terms."""
    best: dict[str, int] = {}
    for name, score in kept.intents:
        best[name] = max(score, best.get(name, score))
    return (all(best.get(name, -1) >= score for name, score in other.intents)
            and set(other.terms[:other.idents]) <= set(kept.terms))


def _corrections_first(items: list[tuple[S, Verdict]],
                       corrects: Callable[[str, str], bool]) -> list[tuple[S, Verdict]]:
    out = list(items)
    for _ in range(len(out)):  # bounded: each pass moves one correction up or stops
        moved = False
        for j, (new, _v) in enumerate(out):
            if new.kind == "working_note":
                continue  # a note reports; it corrects no rule
            olds = [i for i in range(j) if corrects(new.text, out[i][0].text)]
            if olds:
                out.insert(olds[0], out.pop(j))
                moved = True
                break
        if not moved:
            break
    return out


def receipt_terms(verdict: Verdict, text: str) -> list[str]:
    """The matched words of a receipt: for each answered intent, the intent's tools (or
    else words) found in ``text``, then the specific terms; at most 8."""
    toks = intent_vocabulary.tokens(intent_vocabulary.plain(text))
    out: list[str] = []
    for name, _strength in verdict.intents:
        i = intent_vocabulary.intent(name)
        found = list(i.tools.find(toks) or i.words.find(toks))
        out.extend(found[:2] if found else [f"{name}~"])
    out.extend(verdict.terms)
    return list(dict.fromkeys(out))[:8]




def raw_dump(summary: str) -> bool:
    """Whether a Topic ``summary`` is a raw file dump rather than prose: longer than
    :data:`MAX_SUMMARY_CHARS` characters, or with more than 1 in :data:`MARKUP_RATIO`
    of its characters configuration or code markup (``= [ ] { } $ ; | < > \\``: a
    ``tox.ini`` or a Makefile flattened into one paragraph)."""
    text = summary.strip()
    if len(text) > MAX_SUMMARY_CHARS:
        return True
    return sum(text.count(c) for c in _MARKUP) * MARKUP_RATIO > len(text)
