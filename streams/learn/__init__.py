"""Memory learning (docs/architecture.md §4B): extract durable facts from a finished
conversation, validate them, and decide which older facts they contradict.

Everything in this package is pure domain code: no Kafka, Postgres or Faust.
The model-backed providers reach an OpenAI-compatible endpoint through the
``openai`` client only.
"""
