"""The vector-store port: what flows need from a vector index (docs/architecture.md §4A).

Adapters: ``streams.vectors.store.QdrantStore`` (Qdrant server, local path or
``:memory:``) and ``streams.vectors.proxy.VectorStoreClient`` (the worker's
HTTP proxy to the local store it holds); ``streams.bootstrap`` picks one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence


@dataclass(frozen=True)
class Hit:
    id: str
    score: float            # cosine similarity
    payload: dict[str, Any]

    @property
    def distance(self) -> float:
        return 1.0 - self.score


class LocalStoreBusy(RuntimeError):
    """The local Qdrant store is opened by another process (the worker)."""


class VectorStore(Protocol):
    def alias_target(self, alias: str) -> str | None: ...
    def list_collections(self) -> list[str]: ...
    def create_collection(self, name: str, dim: int) -> None: ...
    def drop_collection(self, name: str) -> None: ...
    def point_alias(self, alias: str, collection: str) -> None: ...
    def upsert(self, collection: str, ids: Sequence[str], vectors: Sequence[Sequence[float]],
               payloads: Sequence[dict]) -> None: ...
    def set_payloads(self, collection: str, items: Sequence[tuple[str, dict]]) -> None: ...
    def delete(self, collection: str, ids: Sequence[str]) -> None: ...
    def retrieve(self, collection: str, ids: Sequence[str]) -> dict[str, dict]: ...
    def search(self, collection: str, vector: Sequence[float], *, account_id: int, limit: int,
               min_score: float | None = None) -> list[Hit]: ...
    def scroll(self, collection: str, account_id: int | None = None) -> dict[str, dict]: ...
    def count(self, collection: str) -> int: ...
