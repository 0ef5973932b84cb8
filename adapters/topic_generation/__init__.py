"""Topic generation providers (Topic Memory RFC, "Cumulative work and evidence
ceilings"; TOPIC-MEMORY.md, "Providers"): each implements
:class:`powercontext.ports.topic.TopicGenerationModel` for structured stage calls.

- ``openai`` (:mod:`.openai_responses`): the OpenAI Responses API through the ``openai``
  SDK, structured output by ``text.format`` ``json_schema`` (strict).
- ``anthropic`` (:mod:`.anthropic_messages`): the Anthropic Messages API through the
  ``anthropic`` SDK, structured output as the input of one forced user-defined tool.
- ``deterministic`` (:mod:`.deterministic`): extractive, no model, byte-for-byte
  reproducible; only when configured by name.

They are registered by name through ``powercontext_register_topic_generation_models``
(:mod:`.plugin`) and built by ``powercontext.topic_provider.topic_generation_model``
after the provider policy accepted the configuration. Importing this package imports
no SDK.
"""
