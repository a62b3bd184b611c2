"""The transactional outbox: writing events with the change, and the relay."""
