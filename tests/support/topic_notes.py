"""Project notes for the Topic quality tests: ten subjects, five notes each, written the
way a team writes notes (a heading naming the subject, then one fact), and the same
subjects without headings. Subjects share ordinary words ("the", "runs", "nightly",
"service") but not their subject words."""

from __future__ import annotations

from powercontext.core import canonical
from powercontext.core.models import Source

SUBJECTS: dict[str, list[str]] = {
    "Billing": [
        "Invoices are generated nightly by the invoice job and emailed to customers.",
        "The billing service retries failed card charges three times over five days.",
        "Refunds above 500 euros need an approval from finance before billing issues them.",
        "Billing exports a CSV of the month's invoices to the accounting share.",
        "Stripe webhooks for billing land on /hooks/stripe and are verified with the "
        "signing secret.",
    ],
    "Authentication": [
        "Sessions expire after 12 hours of inactivity; the refresh token lives 30 days.",
        "Login uses OAuth with the company identity provider; passwords are never stored.",
        "Two-factor authentication is mandatory for admin accounts.",
        "The auth service signs JWTs with a key that rotates every 90 days.",
        "Failed logins lock an account for 15 minutes after five attempts.",
    ],
    "Release": [
        "Production deploys happen on Tuesday after a 48 hour soak in staging.",
        "The release captain cuts the release branch on Monday morning.",
        "Every release gets a signed git tag named vYEAR.MONTH.N.",
        "Release notes are drafted from merged pull request titles.",
        "A hotfix release skips the soak but needs two approvals.",
    ],
    "Logging": [
        "Application logs go to the central collector with 14 days of retention.",
        "Log lines are JSON with a trace_id field on every line.",
        "Debug logging is off in production; enable it per request with a header.",
        "Audit logs are kept for seven years in cold storage.",
        "The log shipper drops lines longer than 64 KB.",
    ],
    "Database": [
        "The primary Postgres database is backed up every six hours.",
        "Schema migrations run through Alembic and must be reversible.",
        "Read replicas serve the reporting queries; writes go to the primary.",
        "Connection pools are capped at 40 connections per database client.",
        "A vacuum of the events table runs every Sunday night.",
    ],
    "Frontend": [
        "The web frontend is built with React and Vite.",
        "Components follow the design system tokens for colours and spacing.",
        "The frontend bundle budget is 250 KB gzipped for the landing page.",
        "Storybook documents every shared frontend component.",
        "Browser support covers the last two versions of Chrome, Firefox and Safari.",
    ],
    "Onboarding": [
        "New engineers get laptop access on day one and repository access on day two.",
        "The onboarding buddy pairs with the newcomer for the first two weeks.",
        "Onboarding checklists live in the handbook repository.",
        "Every newcomer ships a small fix in the first week of onboarding.",
        "Onboarding ends with a review meeting with the team lead.",
    ],
    "Caching": [
        "The CDN caches static assets for one year with hashed file names.",
        "API responses are cached in Redis for 60 seconds.",
        "Cache keys include the tenant id to keep tenants apart.",
        "A deploy purges the HTML cache but keeps the asset cache.",
        "Cache hit ratio below 80 percent pages the on-call engineer.",
    ],
    "Search": [
        "Search runs on OpenSearch with one index per tenant.",
        "The search indexer consumes the change stream and lags at most ten seconds.",
        "Synonyms for search live in a file reviewed by the product team.",
        "Search ranking boosts titles three times over body text.",
        "A nightly job rebuilds the search index for tenants with schema changes.",
    ],
    "Monitoring": [
        "Dashboards for every service live in Grafana.",
        "Alerts page the on-call engineer through PagerDuty.",
        "Service level objectives are 99.9 percent availability per month.",
        "Synthetic checks probe the login page every minute.",
        "Monitoring retention is 13 months for metrics and 30 days for traces.",
    ],
}


def note_texts(headings: bool = True) -> list[str]:
    """The 50 notes in a fixed interleaved order (note 1 of every subject, then note
    2, ...): with ``headings`` each is ``# <Subject> notes`` then the fact; without,
    ``<Subject>: <fact>``."""
    out = []
    for i in range(5):
        for subject, facts in SUBJECTS.items():
            fact = facts[i]
            out.append(f"# {subject} notes\n\n{fact}" if headings else f"{subject}: {fact}")
    return out


def note_sources(texts: list[str], prefix: str = "note") -> list[Source]:
    """``user_note`` Sources of ``texts``, ids ``src_<prefix>_<n>`` in order."""
    return [canonical.make_source(f"src_{prefix}_{i:03d}", "user_note", t)
            for i, t in enumerate(texts, start=1)]


#: A chat between two friends, one line a turn, in the style of LoCoMo's sessions:
#: short, conversational lines that share many everyday words.
CHAT = [
    "Hey Ben! Good to see you! How have you been?",
    "Hi Ana! Busy with the kids and work. What's new with you, Ana?",
    "I started a pottery class last week and it was so relaxing, Ben.",
    "Wow, Ana! Pottery sounds great! What did you make in the class?",
    "A small bowl for my plants. The teacher says my bowl is good for a start.",
    "That's awesome, Ana. I went hiking with the kids on Saturday.",
    "Where did you go hiking, Ben? I love the trails near the lake.",
    "We hiked the lake trail and the kids found frogs near the water.",
    "Wow, Ben! The kids must have loved the frogs! Did you take photos?",
    "Yes, Ana, here's a photo of the lake at sunset from the trail.",
    "Beautiful photo, Ben. The sunset over the lake looks so calm.",
    "Thanks, Ana! How is your new job at the bakery going?",
    "The bakery job is hard work but I love baking bread every morning.",
    "Wow, Ana! Fresh bread every morning sounds amazing. Do you bake cakes too?",
    "Sometimes cakes on weekends, Ben. Last weekend I baked a lemon cake.",
    "Lemon cake is my favourite, Ana! You should bring one to the picnic.",
    "Sure, Ben, I'll bake a lemon cake for the picnic next Sunday.",
    "Great, Ana, the picnic is at the lake park at noon.",
    "Should I bring the kids to the picnic at the park, Ben?",
    "Of course, Ana, bring the kids; there is a playground at the park.",
    "My pottery teacher wants to show our bowls at a small exhibition, Ben.",
    "Wow, Ana! An exhibition of your pottery! When is the exhibition?",
    "The exhibition is next month at the community center, Ben.",
    "Thanks, Ana! I'll come to the exhibition with the kids to see your bowls.",
]


def chat_turns(indexes: list[int]) -> list[str]:
    """The :data:`CHAT` lines at ``indexes`` as dated turns ``[<day> May 2026] <name>:
    <line>`` (Ana says the even lines, Ben the odd)."""
    return [f"[{1 + i // 6} May 2026] {('Ana', 'Ben')[i % 2]}: {CHAT[i]}" for i in indexes]
