"""The admin HTTP API (OpenAPI at ``/openapi.json``, docs at ``/docs``).

Every route is scoped to the account of the bearer token: another account's
contact, memory or inbox answers 404, exactly like one that does not exist.
Bad requests get a 4xx with a reason (``{"detail": ...}``), never a 500.
"""


import logging
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
        default_factory=dict, description="intent → keywords (accent- and case-insensitive)")

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
        for words in v.values():
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


# ----------------------------------------------- memory that acts (issue 11)
class PrivacyRequest(BaseModel):
    id: int
    contact_id: int
    conversation_id: str
    message_id: str
    kind: Literal["access", "erasure"]
    text: str
    facts: int = Field(description="facts listed (access) or forgotten (erasure)")
    created_at: datetime


class OfferSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    enabled: bool = Field(description="anniversary offers on for this account (default off)")
    template_name: str = Field("", max_length=512, pattern=r"^[a-z0-9_]*$",
                               description="WhatsApp template; empty = the deployment's default")
    template_language: str = Field("", max_length=16, pattern=r"^([a-z]{2}(_[A-Z]{2})?)?$")


class Template(BaseModel):
    name: str
    language: str
    parameters: list[str]


class Offer(BaseModel):
    contact_id: int
    occasion: str
    occasion_date: str = Field(description="ISO date of the occasion this year")
    conversation_id: str
    text: str
    template: Template
    preferences: list[str] = []
    chunk_ids: list[str] = []
    already_sent: bool = False
    published_at: datetime | None = None


class OfferPreview(BaseModel):
    account_id: int
    enabled: bool
    days: int
    offers: list[Offer]


class ToolConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: str = Field(pattern=r"^https?://[^\s]+$", max_length=2000)
    tool: str = Field("", max_length=100, pattern=r"^[A-Za-z0-9_.-]*$", description="tool name; empty = the intent")
    keywords: list[Annotated[str, Field(min_length=1, max_length=100, pattern=r"\S")]] = Field(
        default_factory=list, description="words that detect the intent (added to the inbox's keywords)")
    budget_ms: int | None = Field(None, ge=1, le=60000, description="inline when it answers within this")
    timeout_ms: int | None = Field(None, ge=1, le=600000, description="a background call gives up after this")


ToolMap = dict[Annotated[str, Field(min_length=1, max_length=100, pattern=r"^[a-z0-9_]+$")], ToolConfig]


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

    # -- customers' requests (rights on the channel) -----------------------------
    @app.get("/v1/privacy-requests", response_model=list[PrivacyRequest], tags=["forgetting"])
    def privacy_requests(acc: Account, kind: Literal["access", "erasure"] | None = None,
                         contact_id: Id | None = None, limit: int = Query(100, ge=1, le=1000)):
        """Customers who asked, on the channel, what we know about them or to be forgotten."""
        with container.pool.connection() as conn:
            rows = conn.execute(
                """SELECT id, contact_id, conversation_id, message_id, kind, text, facts, created_at
                   FROM privacy_requests WHERE account_id = %s AND (%s::text IS NULL OR kind = %s)
                     AND (%s::bigint IS NULL OR contact_id = %s) ORDER BY created_at DESC, id DESC LIMIT %s""",
                (acc, kind, kind, contact_id, contact_id, limit)).fetchall()
        return [PrivacyRequest(**r) for r in rows]

    # -- anniversary offers -----------------------------------------------------
    def _offer_settings(conn, acc: int):
        from streams.maintain.offers import account_offer_settings

        s = conn.execute("SELECT settings FROM accounts WHERE id = %s", (acc,)).fetchone()["settings"]
        return account_offer_settings(s, container.settings)

    @app.get("/v1/account/offers", response_model=OfferSettings, tags=["offers"])
    def get_offer_settings(acc: Account):
        with container.pool.connection() as conn:
            enabled, name, language = _offer_settings(conn, acc)
        return OfferSettings(enabled=enabled, template_name=name, template_language=language)

    @app.put("/v1/account/offers", response_model=OfferSettings, tags=["offers"])
    def put_offer_settings(body: OfferSettings, acc: Account):
        from streams.maintain.offers import FLAG

        with container.pool.connection() as conn:
            conn.execute("UPDATE accounts SET settings = settings || %s WHERE id = %s",
                         (Jsonb({FLAG: body.enabled, "offers_template_name": body.template_name,
                                 "offers_template_language": body.template_language}), acc))
            enabled, name, language = _offer_settings(conn, acc)
        return OfferSettings(enabled=enabled, template_name=name, template_language=language)

    @app.get("/v1/offers/preview", response_model=OfferPreview, tags=["offers"])
    def preview_offers(acc: Account, days: int = Query(7, ge=1, le=60)):
        """The offers the daily job would send for the next ``days`` days (nothing is written)."""
        from streams.maintain.offers import plan_offers

        with container.pool.connection() as conn:
            enabled, name, language = _offer_settings(conn, acc)
            proposals = plan_offers(conn, acc, datetime.now(timezone.utc).date(), days=days, template_name=name,
                                    language=language, include_sent=True)
        return OfferPreview(account_id=acc, enabled=enabled, days=days, offers=[Offer(
            contact_id=p.contact_id, occasion=p.occasion, occasion_date=p.occasion_date.isoformat(),
            conversation_id=p.conversation_id, text=p.text, template=Template(**p.template.model_dump()),
            preferences=list(p.preferences), chunk_ids=[str(c) for c in p.chunk_ids], already_sent=p.already_sent)
            for p in proposals])

    @app.get("/v1/offers", response_model=list[Offer], tags=["offers"])
    def list_offers(acc: Account, limit: int = Query(100, ge=1, le=1000)):
        """Offers recorded (and when they were published)."""
        with container.pool.connection() as conn:
            rows = conn.execute(
                """SELECT contact_id, occasion, occasion_date, conversation_id, text, template_name,
                          template_params, chunk_ids, published_at FROM offers WHERE account_id = %s
                   ORDER BY created_at DESC, id DESC LIMIT %s""", (acc, limit)).fetchall()
        return [Offer(contact_id=r["contact_id"], occasion=r["occasion"], occasion_date=r["occasion_date"].isoformat(),
                      conversation_id=r["conversation_id"], text=r["text"],
                      template=Template(name=r["template_name"],
                                        language=(r["template_params"] or {}).get("language", "pt_BR"),
                                        parameters=(r["template_params"] or {}).get("parameters", [])),
                      chunk_ids=[str(c) for c in r["chunk_ids"] or []], already_sent=True,
                      published_at=r["published_at"]) for r in rows]

    # -- tools ------------------------------------------------------------------
    @app.get("/v1/inboxes/{inbox_id}/tools", response_model=ToolMap, tags=["configuration"])
    def get_tools(inbox_id: Id, acc: Account):
        with container.pool.connection() as conn:
            row = conn.execute("SELECT tools FROM inboxes WHERE id = %s AND account_id = %s", (inbox_id, acc)).fetchone()
        if row is None:
            raise HTTPException(404, f"inbox {inbox_id} not found")
        return row["tools"] or {}

    @app.put("/v1/inboxes/{inbox_id}/tools", response_model=ToolMap, tags=["configuration"])
    def put_tools(inbox_id: Id, body: ToolMap, acc: Account):
        """Map intents to HTTP tools (see README, "Tools"); an empty object removes them."""
        from streams.respond.tools import ToolConfigError, parse_tools

        raw = {k: v.model_dump(exclude_none=True, exclude_defaults=True) | {"url": v.url} for k, v in body.items()}
        try:
            parse_tools(raw)
        except ToolConfigError as e:
            raise HTTPException(422, str(e)) from None
        with container.pool.connection() as conn:
            row = conn.execute("UPDATE inboxes SET tools = %s WHERE id = %s AND account_id = %s RETURNING tools",
                               (Jsonb(raw), inbox_id, acc)).fetchone()
        if row is None:
            raise HTTPException(404, f"inbox {inbox_id} not found")
        return row["tools"]

    return app
