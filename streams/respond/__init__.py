"""Responding (docs/architecture.md §4C): intent → strategy → recall → knowledge → prompt → reply.

Plain typed functions over ports (``ports.py``); nothing here imports Kafka,
Postgres or Faust. The composition root wires real adapters into
:func:`streams.respond.handler.respond`.
"""
