"""Vector stores: the port (``port.py``), Qdrant in local mode or as a server (``store.py``) and a
proxy to the worker that owns a local store (``proxy.py``), all with the same ``VectorStore`` operations."""
