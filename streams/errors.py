"""Error kinds shared by every consumer (README, "Delivery guarantees").

``DependencyUnavailable``: something the record needs is down or overloaded
(the embedding service, ...). The record is fine: consumers wait and retry the
same records, they never dead-letter them for it.
"""


class DependencyUnavailable(RuntimeError):
    """A dependency cannot answer now; retry the same work later."""
