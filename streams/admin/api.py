"""The admin HTTP API (OpenAPI at ``/openapi.json``, docs at ``/docs``).

Every route is scoped to the account of the bearer token: another account's
contact, memory or inbox answers 404, exactly like one that does not exist.
Bad requests get a 4xx with a reason (``{"detail": ...}``), never a 500.
"""


import logging
import uuid
from datetime import datetime, timezone
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from psycopg.types.json import Jsonb
from pydantic import BaseModel, ConfigDict, Field, field_validator

from streams.admin import tokens

log = logging.getLogger(__name__)

PG_BIGINT_MAX = 2**63 - 1
#: Request bodies above this are refused with 413 before they are read.
MAX_BODY_BYTES = 256 * 1024
#: Matching is linear in the keywords: an unbounded list slows every reply of the inbox.
MAX_KEYWORDS_PER_INTENT = 200
Id = Annotated[int, Field(ge=1, le=PG_BIGINT_MAX)]


# ------------------------------------------------------------------ models
class Memory(BaseModel):
    id: int
    contact_id: int
    memory_type: str
    memory_key: str
    content: str
    evidence: str
    confidence: float
    scope: Literal["global", "unit"]
    weight: float
    status: Literal["active", "superseded", "expired", "deleted"]
    source_conversation_id: int | None
    source_unit_id: int | None
    supporting_conversation_ids: list[int]
    expires_at: datetime | None
    last_verified_at: datetime
    superseded_at: datetime | None
    superseded_by_id: int | None
    deleted_at: datetime | None
    embedded: bool
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime


class MemoryList(BaseModel):
    contact_id: int
    active: list[Memory]
    history: list[Memory]


class MemoryEdit(BaseModel):
    model_config = ConfigDict(extra="forbid")
    content: str = Field(min_length=1, max_length=1000)
    edited_by: str = Field(min_length=1, max_length=200, description="who made the edit (recorded in metadata)")

    @field_validator("content", "edited_by")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be blank")
        if "\x00" in v:
            raise ValueError("must not contain NUL characters")
        return v.strip()


class Confirmation(BaseModel):
    model_config = ConfigDict(extra="forbid")
    confirm: Literal[True] = Field(description="must be true: this cannot be undone from the API")
    requested_by: str = Field("", max_length=200)


class ForgetResult(BaseModel):
    contact_id: int
    facts_forgotten: int


class EraseResult(BaseModel):
    contact_id: int
    erased: dict[str, int]


class InboxConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    system_prompt: str = Field("", max_length=20000)
    playbook_prompt: str = Field("", max_length=20000)
    rag_distance_threshold: float | None = Field(
        None, ge=0, le=2, description="cosine distance; null = the value calibrated for the knowledge model")
    rag_max_results: int = Field(3, ge=1, le=20)
    model: str = Field("", max_length=200)
    temperature: float = Field(0.7, ge=0, le=2)
    intent_keywords: dict[str, list[Annotated[str, Field(min_length=1, max_length=100)]]] = Field(
        default_factory=dict, description="intent → keywords (accent- and case-insensitive); at most "
                                          f"{MAX_KEYWORDS_PER_INTENT} per intent")

    @field_validator("system_prompt", "playbook_prompt", "model")
    @classmethod
    def _no_nul(cls, v: str) -> str:
        if "\x00" in v:
            raise ValueError("must not contain NUL characters")
        return v

    @field_validator("intent_keywords")
    @classmethod
    def _known_intents(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        known = {"price_question", "info_request", "policy", "greeting", "objection", "confirmation", "general"}
        bad = sorted(set(v) - known)
        if bad:
            raise ValueError(f"unknown intents {bad}; known: {sorted(known)}")
        for intent, words in v.items():
            if len(words) > MAX_KEYWORDS_PER_INTENT:
                raise ValueError(f"{intent}: {len(words)} keywords; at most {MAX_KEYWORDS_PER_INTENT} per intent")
            if any("\x00" in w for w in words):
                raise ValueError("keywords must not contain NUL characters")
        return v


class Inbox(InboxConfig):
    id: int


class Flags(BaseModel):
    model_config = ConfigDict(extra="forbid")
    memory_extraction_enabled: bool
    memory_recall_enabled: bool


class ReportItem(BaseModel):
    memory_type: Literal["reclamacao", "feedback_positivo"]
    topic: str
    example: str
    count: int


class UnitReport(BaseModel):
    unit_id: int
    complaints: list[ReportItem]
    compliments: list[ReportItem]


class Report(BaseModel):
    account_id: int
    days: int
    units: list[UnitReport]


class ConversationStatus(BaseModel):
    conversation_id: int
    external_id: str | None
    status: Literal["open", "resolved"]
    changed: bool = Field(description="false: it already had this status (nothing happened)")


class Document(BaseModel):
    id: uuid.UUID
    key: str = Field(description="stable key: the path relative to the ingested folder, or --key")
    title: str
    chunks: int = Field(description="live chunks")
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None


class BoundedBody:
    """ASGI middleware: a request body over ``limit`` bytes gets 413 (by its
    Content-Length before anything is read, or as soon as the streamed body
    passes the limit)."""

    def __init__(self, app, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        too_big = JSONResponse({"detail": f"request body over {self.limit} bytes"}, status_code=413)
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None:
            if not declared.isdigit():
                return await JSONResponse({"detail": "invalid Content-Length"}, status_code=400)(scope, receive, send)
            if int(declared) > self.limit:
                return await too_big(scope, receive, send)
        seen = 0
        refused = False

        async def bounded_receive():
            nonlocal seen, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:  # answer 413 now; the route sees a disconnected client
                    refused = True
                    await too_big(scope, receive, send)
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message):
            if not refused:
                await send(message)

        await self.app(scope, bounded_receive, guarded_send)


# --------------------------------------------------------------------- app
def _status(r: dict, now: datetime) -> str:
    if r["deleted_at"] is not None:
        return "deleted"
    if r["superseded_at"] is not None:
        return "superseded"
    if r["expires_at"] is not None and r["expires_at"] <= now:
        return "expired"
    return "active"


def _memory(r: dict, now: datetime) -> Memory:
    return Memory(**{k: r[k] for k in Memory.model_fields if k not in ("status", "embedded")},
                  status=_status(r, now), embedded=r["embedded"])


MEMORY_COLS = """id, contact_id, memory_type, memory_key, content, evidence, confidence, scope, weight,
    source_conversation_id, source_unit_id, supporting_conversation_ids, expires_at, last_verified_at,
    superseded_at, superseded_by_id, deleted_at, embedding IS NOT NULL AS embedded, metadata, created_at,
    updated_at"""


def create_app(container) -> FastAPI:
    """``container`` is a ``streams.bootstrap.Container`` (pool and memory embedder)."""
    app = FastAPI(title="memoria admin API", version="1.0.0",
                  description="Customer memories, forgetting (LGPD/GDPR), inbox configuration, "
                              "account flags and unit reports. Authenticate with a per-account "
                              "bearer token (`memoria admin token create`).")
    bearer = HTTPBearer(auto_error=False)

    app.add_middleware(BoundedBody, limit=MAX_BODY_BYTES)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError):
        errors = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", "")} for e in exc.errors()]
        return JSONResponse({"detail": "invalid request", "errors": errors}, status_code=422)

    def account(cred: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> int:
        if cred is None or cred.scheme.lower() != "bearer":
            raise HTTPException(401, "missing bearer token", headers={"WWW-Authenticate": "Bearer"})
        with container.pool.connection() as conn:
            acc = tokens.account_for(conn, cred.credentials)
        if acc is None:
            raise HTTPException(401, "invalid or revoked token", headers={"WWW-Authenticate": "Bearer"})
        return acc

    Account = Annotated[int, Depends(account)]

    def _contact_exists(conn, acc: int, contact_id: int) -> None:
        if not conn.execute("SELECT 1 FROM contacts WHERE account_id = %s AND id = %s",
                            (acc, contact_id)).fetchone():
            raise HTTPException(404, f"contact {contact_id} not found")

    @app.get("/health", tags=["ops"])
    def health() -> dict[str, str]:
        return {"status": "ok"}

    # -- memories -------------------------------------------------------------
    @app.get("/v1/contacts/{contact_id}/memories", response_model=MemoryList, tags=["memories"])
    def list_memories(contact_id: Id, acc: Account,
                      include_history: bool = Query(True, description="also list superseded, expired, deleted")):
        now = datetime.now(timezone.utc)
        with container.pool.connection() as conn:
            _contact_exists(conn, acc, contact_id)
            rows = conn.execute(f"SELECT {MEMORY_COLS} FROM contact_memories WHERE account_id = %s "
                                "AND contact_id = %s ORDER BY last_verified_at DESC, id", (acc, contact_id)).fetchall()
        mems = [_memory(r, now) for r in rows]
        return MemoryList(contact_id=contact_id, active=[m for m in mems if m.status == "active"],
                          history=[m for m in mems if m.status != "active"] if include_history else [])

    @app.patch("/v1/memories/{memory_id}", response_model=Memory, tags=["memories"],
               responses={404: {"description": "not found"}, 409: {"description": "not editable"}})
    def edit_memory(memory_id: Id, body: MemoryEdit, acc: Account):
        from streams.admin.memories import edit_memory as edit

        now = datetime.now(timezone.utc)
        with container.pool.connection() as conn:
            try:
                edit(conn, account_id=acc, memory_id=memory_id, content=body.content, edited_by=body.edited_by,
                     embedder=container.memory_embedder)
            except LookupError:
                raise HTTPException(404, f"memory {memory_id} not found") from None
            except ValueError as e:
                raise HTTPException(409, str(e)) from None
            row = conn.execute(f"SELECT {MEMORY_COLS} FROM contact_memories WHERE id = %s", (memory_id,)).fetchone()
        return _memory(row, now)

    @app.delete("/v1/memories/{memory_id}", status_code=204, tags=["memories"],
                responses={404: {"description": "not found"}})
    def delete_memory(memory_id: Id, acc: Account):
        from streams.maintain.forget import forget_memory

        with container.pool.connection() as conn:
            if not forget_memory(conn, acc, memory_id, actor="admin-api"):
                raise HTTPException(404, f"memory {memory_id} not found")
        return None

    @app.post("/v1/contacts/{contact_id}/forget", response_model=ForgetResult, tags=["forgetting"])
    def forget_contact(contact_id: Id, body: Confirmation, acc: Account):
        from streams.maintain.forget import forget_contact as forget

        with container.pool.connection() as conn:
            _contact_exists(conn, acc, contact_id)
            n = forget(conn, acc, contact_id, actor=body.requested_by or "admin-api")
        return ForgetResult(contact_id=contact_id, facts_forgotten=n)

    @app.post("/v1/contacts/{contact_id}/erase", response_model=EraseResult, tags=["forgetting"])
    def erase_contact(contact_id: Id, body: Confirmation, acc: Account):
        from streams.maintain.forget import erase_contact as erase

        with container.pool.connection() as conn:
            _contact_exists(conn, acc, contact_id)
            counts = erase(conn, acc, contact_id)
        return EraseResult(contact_id=contact_id, erased={k: int(v) for k, v in dict(counts).items()})

    # -- inboxes --------------------------------------------------------------
    INBOX_COLS = ("system_prompt, playbook_prompt, rag_distance_threshold, rag_max_results, model, temperature, "
                  "intent_keywords")

    @app.get("/v1/inboxes/{inbox_id}", response_model=Inbox, tags=["configuration"])
    def get_inbox(inbox_id: Id, acc: Account):
        with container.pool.connection() as conn:
            row = conn.execute(f"SELECT id, {INBOX_COLS} FROM inboxes WHERE id = %s AND account_id = %s",
                               (inbox_id, acc)).fetchone()
        if row is None:
            raise HTTPException(404, f"inbox {inbox_id} not found")
        return Inbox(**row)

    @app.put("/v1/inboxes/{inbox_id}", response_model=Inbox, tags=["configuration"])
    def put_inbox(inbox_id: Id, body: InboxConfig, acc: Account):
        with container.pool.connection() as conn:
            row = conn.execute(
                f"""UPDATE inboxes SET system_prompt = %s, playbook_prompt = %s, rag_distance_threshold = %s,
                        rag_max_results = %s, model = %s, temperature = %s, intent_keywords = %s
                    WHERE id = %s AND account_id = %s RETURNING id, {INBOX_COLS}""",
                (body.system_prompt, body.playbook_prompt, body.rag_distance_threshold, body.rag_max_results,
                 body.model, body.temperature, Jsonb(body.intent_keywords), inbox_id, acc)).fetchone()
        if row is None:
            raise HTTPException(404, f"inbox {inbox_id} not found")
        return Inbox(**row)

    # -- flags ----------------------------------------------------------------
    @app.get("/v1/account/flags", response_model=Flags, tags=["configuration"])
    def get_flags(acc: Account):
        with container.pool.connection() as conn:
            s = conn.execute("SELECT settings FROM accounts WHERE id = %s", (acc,)).fetchone()["settings"]
        return Flags(memory_extraction_enabled=bool(s.get("memory_extraction_enabled", False)),
                     memory_recall_enabled=bool(s.get("memory_recall_enabled", False)))

    @app.put("/v1/account/flags", response_model=Flags, tags=["configuration"])
    def put_flags(body: Flags, acc: Account):
        with container.pool.connection() as conn:
            conn.execute("UPDATE accounts SET settings = settings || %s WHERE id = %s",
                         (Jsonb(body.model_dump()), acc))
        return body

    # -- conversations ----------------------------------------------------------
    def _change_status(conversation_id: int, acc: int, action: str) -> ConversationStatus:
        from streams.learn.lifecycle import ConversationNotFound, change_status

        with container.pool.connection() as conn:
            try:
                r = change_status(conn, account_id=acc, conversation_id=conversation_id, action=action,
                                  source="admin-api")
            except ConversationNotFound:
                raise HTTPException(404, f"conversation {conversation_id} not found") from None
        return ConversationStatus(conversation_id=r.conversation_id, external_id=r.external_id, status=r.status,
                                  changed=r.changed)

    @app.post("/v1/conversations/{conversation_id}/resolve", response_model=ConversationStatus,
              tags=["conversations"], responses={404: {"description": "not found"}})
    def resolve_conversation(conversation_id: Id, acc: Account):
        """Resolve: clears the lead state and starts the learning (once; resolving again changes nothing)."""
        return _change_status(conversation_id, acc, "resolve")

    @app.post("/v1/conversations/{conversation_id}/reopen", response_model=ConversationStatus,
              tags=["conversations"], responses={404: {"description": "not found"}})
    def reopen_conversation(conversation_id: Id, acc: Account):
        """Reopen: the next resolution learns from the messages after this point only."""
        return _change_status(conversation_id, acc, "reopen")

    # -- documents ------------------------------------------------------------
    @app.get("/v1/documents", response_model=list[Document], tags=["knowledge"])
    def list_documents(acc: Account, include_deleted: bool = Query(False)):
        from streams.ingest.documents import list_documents as listing

        with container.pool.connection() as conn:
            return [Document(**r) for r in listing(conn, acc, include_deleted=include_deleted)]

    @app.delete("/v1/documents/{document_id}", response_model=Document, tags=["knowledge"],
                responses={404: {"description": "not found"}})
    def delete_document(document_id: uuid.UUID, acc: Account):
        """Tombstone a document and its chunks; the ingest agent removes their points."""
        from streams.ingest.documents import delete_document as delete

        with container.pool.connection() as conn:
            row = delete(conn, acc, document_id=str(document_id))
        if row is None:
            raise HTTPException(404, f"document {document_id} not found")
        return Document(**row)

    # -- reports --------------------------------------------------------------
    @app.get("/v1/reports/units", response_model=Report, tags=["reports"])
    def unit_report(acc: Account, days: int = Query(30, ge=1, le=3650), top: int = Query(5, ge=1, le=50)):
        with container.pool.connection() as conn:
            rows = conn.execute(
                """SELECT source_unit_id AS unit_id, memory_type,
                          COALESCE(NULLIF(normalized_value, ''), memory_key) AS topic,
                          min(content) AS example, count(*) AS n
                     FROM contact_memories
                    WHERE account_id = %s AND source_unit_id IS NOT NULL AND deleted_at IS NULL
                      AND memory_type IN ('reclamacao', 'feedback_positivo')
                      AND created_at >= now() - make_interval(days => %s)
                    GROUP BY 1, 2, 3 ORDER BY 1, n DESC, 3""", (acc, days)).fetchall()
        units: dict[int, UnitReport] = {}
        for r in rows:
            u = units.setdefault(r["unit_id"], UnitReport(unit_id=r["unit_id"], complaints=[], compliments=[]))
            bucket = u.complaints if r["memory_type"] == "reclamacao" else u.compliments
            if len(bucket) < top:
                bucket.append(ReportItem(memory_type=r["memory_type"], topic=r["topic"], example=r["example"],
                                         count=r["n"]))
        return Report(account_id=acc, days=days, units=list(units.values()))

    return app
