"""Kafka edges: topic names and admin, the producer and the dead-letter writer."""
