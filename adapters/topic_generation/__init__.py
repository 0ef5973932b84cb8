"""Topic generation providers (TopicGenerationModel implementations; TOPIC-MEMORY.md,
"Providers")."""
