"""Topic Memory, the pure half (Topic Memory RFC 1417): the ``topic-memory`` Artifact
Family's values, canonical bytes and hashes, the Detail chunk policy, snippets, the
projections a publication writes and checks, search ranking across the 2 or 4
channels, and the checks of a publication batch.

Like the rest of :mod:`powercontext.core`: no I/O, no clock, no randomness; ids and
times come in as arguments. Modules:

* :mod:`.models` -- TopicRef, TopicMemoryContent, TopicRevision, hits, shapes.
* :mod:`.content` -- normalization, limits, canonical bytes, hashes, ids, scope ids.
* :mod:`.chunks` -- the versioned Detail chunk policy.
* :mod:`.snippets` -- snippet windows around the best match.
* :mod:`.projection` -- the searchable texts, chunks and vectors of one Revision;
  building them (outside a transaction) and checking them (at the write boundary).
* :mod:`.search` -- per-channel collapse by Topic, admission, RRF, matched_by.
* :mod:`.publication` -- a batch of CREATE/UPDATE writes and its verification.
"""
