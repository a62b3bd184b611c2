"""``memoria ingest``, ``documents list|delete``, ``search`` and ``reindex``: the knowledge flow's commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

from streams.settings import get_settings

console = Console(stderr=True)
documents_app = typer.Typer(help="Knowledge documents: list, delete", no_args_is_help=True)


def ingest(
    paths: List[Path] = typer.Argument(..., help="Markdown/text files or folders"),
    account: int = typer.Option(..., "--account", help="account id"),
    key: Optional[str] = typer.Option(None, "--key", help="the document's stable key (one file only); "
                                                          "default: its path relative to the given folder, "
                                                          "or its file name"),
    chunk_size: Optional[int] = typer.Option(None, help="characters per chunk"),
    chunk_overlap: Optional[int] = typer.Option(None, help="characters of overlap"),
) -> None:
    """Write documents and their chunks (with outbox events) to Postgres, keyed by a stable key."""
    from streams.ingest.documents import adopt_legacy_source, iter_keyed_sources, read_source, write_document
    from streams.store.db import connect
    from streams.store.uow import PostgresUnitOfWork

    s = get_settings()
    try:
        files = iter_keyed_sources(paths)
    except FileNotFoundError as e:
        console.print(f"[red]error:[/red] {e}")
        raise typer.Exit(2)
    if not files:
        console.print("[red]error:[/red] no Markdown or text files found")
        raise typer.Exit(2)
    if key is not None:
        if len(files) != 1:
            console.print(f"[red]error:[/red] --key names one document, but {len(files)} files were found")
            raise typer.Exit(2)
        if not key.strip() or len(key) > 1000 or "\x00" in key:
            console.print("[red]error:[/red] --key must be 1-1000 characters without NUL")
            raise typer.Exit(2)
        files = [(files[0][0], key.strip())]
    totals = dict(inserted=0, moved=0, unchanged=0, tombstoned=0)
    with connect(s) as conn:
        for f, doc_key in files:
            try:
                title, text = read_source(f)
            except (ValueError, UnicodeDecodeError) as e:
                console.print(f"[red]error:[/red] {e}")
                raise typer.Exit(2)
            with PostgresUnitOfWork(conn=conn) as uow:  # one document: renamed, chunked, announced together
                adopt_legacy_source(uow, account, doc_key, str(f.resolve()))
                r = write_document(uow, account_id=account, source=doc_key, text=text, title=title,
                                   chunk_size=chunk_size or s.chunk_size,
                                   chunk_overlap=chunk_overlap if chunk_overlap is not None else s.chunk_overlap)
                uow.commit()
            for k in totals:
                totals[k] += getattr(r, k)
            console.print(f"{doc_key}: +{r.inserted} new, {r.moved} moved, {r.unchanged} unchanged, "
                          f"-{r.tombstoned} removed")
    console.print(f"done: {len(files)} documents; {totals['inserted']} chunks to embed, "
                  f"{totals['tombstoned']} to delete, {totals['unchanged']} unchanged")


@documents_app.command("list")
def documents_list(account: int = typer.Option(..., "--account"),
                   include_deleted: bool = typer.Option(False, "--include-deleted"),
                   as_json: bool = typer.Option(False, "--json")) -> None:
    """An account's documents: key, title, live chunks."""
    from streams.ingest.documents import list_documents
    from streams.store.db import connect

    with connect(get_settings()) as conn:
        rows = list_documents(conn, account, include_deleted=include_deleted)
    for r in rows:
        if as_json:
            print(json.dumps({k: (v.isoformat() if hasattr(v, "isoformat") else str(v) if k == "id" else v)
                              for k, v in r.items()}, ensure_ascii=False))
        else:
            print(f"{r['id']}  {r['chunks']:>5} chunks  {'deleted ' if r['deleted_at'] else ''}{r['key']}")
    if not rows and not as_json:
        console.print("no documents")


@documents_app.command("delete")
def documents_delete(ref: str = typer.Argument(..., help="the document's key or id"),
                     account: int = typer.Option(..., "--account")) -> None:
    """Tombstone a document and its chunks; the worker removes their points."""
    import uuid as _uuid

    from streams.ingest.documents import delete_document
    from streams.store.db import connect

    try:
        kw = {"document_id": str(_uuid.UUID(ref))}
    except ValueError:
        kw = {"key": ref}
    with connect(get_settings()) as conn:
        row = delete_document(conn, account, **kw)
        if row is None and "document_id" in kw:  # a key that looks like a UUID
            row = delete_document(conn, account, key=ref)
    if row is None:
        console.print(f"[red]error:[/red] document {ref!r} not found in account {account}")
        raise typer.Exit(2)
    console.print(f"document {row['key']} ({row['id']}) deleted; its points are removed by the worker")


def search(
    question: str = typer.Argument(...),
    account: int = typer.Option(..., "--account"),
    limit: int = typer.Option(3, "--limit"),
    max_distance: Optional[float] = typer.Option(None, "--max-distance", help="cosine distance cut"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Top chunks of an account with their cosine distance."""
    from streams.bootstrap import Container
    from streams.ingest.knowledge import search_chunks

    c = Container()
    try:
        hits = search_chunks(question, account_id=account, pool=c.pool, store=c.vector_store,
                             domain=c.settings.vector_domain, embedder_for=c.embedder_for,
                             limit=limit, max_distance=max_distance)
    finally:
        c.close()
    if as_json:
        for h in hits:
            print(json.dumps({"chunk_id": h.chunk_id, "document_id": h.document_id, "seq": h.seq,
                              "distance": h.distance, "source": h.source, "content": h.content},
                             ensure_ascii=False))
        return
    if not hits:
        console.print("no chunks found")
    for i, h in enumerate(hits, 1):
        print(f"{i}. distance={h.distance:.4f} chunk={h.chunk_id} {Path(h.source).name}#{h.seq}")
        print("   " + h.content[:300].replace("\n", " "))


def reindex(
    model: str = typer.Option(..., "--model", help="all-minilm-l6-v2 | use-multilingual-v3 | "
                                                   "multilingual-e5-small | an OpenAI embeddings model"),
) -> None:
    """Blue-green re-embed of every live chunk into a new collection, then swap the alias."""
    from rich.progress import Progress

    from streams.bootstrap import Container
    from streams.ingest.knowledge import reindex as run

    c = Container()
    emb = c.embedder_for(model)
    try:
        with Progress(console=console) as progress:
            task = progress.add_task(f"re-embedding with {emb.name}", total=None)
            res = run(pool=c.pool, store=c.vector_store, domain=c.settings.vector_domain, embedder=emb, prices=c.prices,
                      embed_part=c.settings.ingest_embed_part, sentences=c.settings.chunk_sentence_vectors,
                      progress=lambda done, total: progress.update(task, completed=done, total=total))
    finally:
        c.close()
    console.print(f"alias {c.settings.vector_domain}__text__chunks: {res.old_collection} → "
                  f"{res.new_collection}; {res.backfilled} chunks backfilled, {res.caught_up} caught up, "
                  f"verified, {res.seconds:.1f}s")


def register(app: typer.Typer) -> None:
    app.command()(ingest)
    app.command()(search)
    app.command()(reindex)
    app.add_typer(documents_app, name="documents")
