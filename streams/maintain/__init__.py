"""Maintenance and forgetting (docs/architecture.md §4D, §4E): aging, the live-fact cap, hard
delete, the silence detector's schedule, forget and erasure."""
