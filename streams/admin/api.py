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
from pydantic import BaseModel, ConfigDict, Field, field_validator

from streams.admin import costs as cost_service
from streams.admin import flags as flag_service
from streams.admin import inboxes as inbox_service
from streams.admin import memories as memory_service
from streams.admin import offers as offer_admin
from streams.admin import privacy as privacy_service
from streams.admin import reports as report_service
from streams.admin import tokens
from streams.admin import tools as tool_service
from streams.maintain import forget as forget_service

log = logging.getLogger(__name__)

PG_BIGINT_MAX = 2**63 - 1
#: Request bodies above this are refused with 413 before they are read.
MAX_BODY_BYTES = 256 * 1024
#: Matching is linear in the keywords: an unbounded list slows every reply of the inbox.
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
    source_unit_name: str | None = None
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
    """The new content; who edited is the token's operator (recorded in the fact's metadata)."""
    model_config = ConfigDict(extra="forbid")
    content: str = Field(min_length=1, max_length=1000)

    @field_validator("content")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be blank")
        if "\x00" in v:
            raise ValueError("must not contain NUL characters")
        return v.strip()


class RestoreResult(BaseModel):
    memory: Memory
    superseded: list[int] = Field(description="live facts the restored one contradicted and replaced")
    superseded_by: int | None = Field(description="a newer contradicting live fact that keeps it in history")


class Confirmation(BaseModel):
    model_config = ConfigDict(extra="forbid")
    confirm: Literal[True] = Field(description="must be true")


class ForgetResult(BaseModel):
    contact_id: int
    facts_forgotten: int


class EraseResult(BaseModel):
    contact_id: int
    erased: dict[str, int]


class InboxPatch(BaseModel):
    """Only the fields present change (``null`` threshold = the calibrated default)."""
    model_config = ConfigDict(extra="forbid")
    system_prompt: str | None = Field(None, max_length=20000,
                                      description="≤ 500 tokens; the non-negotiable rules are always added")
    playbook_prompt: str | None = Field(None, max_length=20000)
    rag_distance_threshold: float | None = Field(
        None, ge=0, le=2, description="cosine distance; null = the value calibrated for the knowledge model")
    rag_max_results: int | None = Field(None, ge=1, le=20)
    model: str | None = Field(None, max_length=200)
    temperature: float | None = Field(None, ge=0, le=2)
    intent_keywords: dict[str, Any] | None = Field(
        None, description="intent → [keywords] or {\"keywords\": [...] | {kw: weight}, \"replace\": bool}; "
                          "new intents (e.g. availability_check) are allowed")

    @field_validator("system_prompt", "playbook_prompt", "model")
    @classmethod
    def _no_nul(cls, v: str | None) -> str | None:
        if v is not None and "\x00" in v:
            raise ValueError("must not contain NUL characters")
        return v


class Inbox(BaseModel):
    id: int
    name: str
    system_prompt: str
    system_prompt_tokens: int
    system_prompt_max_tokens: int
    playbook_prompt: str
    rag_distance_threshold: float | None
    calibrated_distance_threshold: float = Field(description="the active embedding model's calibrated cut-off")
    rag_max_results: int
    model: str
    temperature: float
    intent_keywords: dict[str, Any]


class Flag(BaseModel):
    flag: Literal["memory_extraction_enabled", "memory_recall_enabled"]
    label: str
    enabled: bool
    changed_at: datetime | None
    changed_by: str | None


class Flags(BaseModel):
    flags: list[Flag]
    cost_this_month_brl: float


class FlagChange(BaseModel):
    model_config = ConfigDict(extra="forbid")
    enabled: bool


class MonthCost(BaseModel):
    month: str
    usd: float
    brl: float
    calls: int
    prompt_tokens: int
    completion_tokens: int
    by_stage_brl: dict[str, float]


class Costs(BaseModel):
    account_id: int
    usd_brl_rate: float
    months: list[MonthCost]


class ReportItem(BaseModel):
    topic: str
    label: str
    count: int
    example: str


class UnitReport(BaseModel):
    unit_id: int
    unit_name: str
    complaints: list[ReportItem]
    compliments: list[ReportItem]
    facts_by_type: dict[str, int]
    facts_learnt: int
    facts_superseded: int
    supersedence_rate: float | None
    recall_p99_ms: float | None
    replies_with_recall: int


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
def _memory(r: dict) -> Memory:
    return Memory(**{k: r[k] for k in Memory.model_fields})


def inbox_view(row: dict, settings) -> Inbox:
    from streams.admin.inboxes import calibrated_threshold, system_prompt_tokens
    from streams.respond.prompt import SYSTEM_PROMPT_MAX_TOKENS

    return Inbox(**row, system_prompt_tokens=system_prompt_tokens(row["system_prompt"]),
                 system_prompt_max_tokens=SYSTEM_PROMPT_MAX_TOKENS,
                 calibrated_distance_threshold=calibrated_threshold(settings.embedding_model))


def create_app(container, *, console: bool = True) -> FastAPI:
    """``container`` is a ``streams.bootstrap.Container`` (pool, memory embedder, settings).
    ``console``: also serve the operator console under ``/console`` (same process, port and tokens)."""

    app = FastAPI(title="memoria admin API", version="2.0.0",
                  description="Customer memories, forgetting (LGPD/GDPR) and restore, inbox configuration, "
                              "account flags with their audit trail, model costs and unit reports. "
                              "Authenticate with a per-account bearer token (`memoria admin token create`); "
                              "the operator console is at `/console`.")
    bearer = HTTPBearer(auto_error=False)

    app.add_middleware(BoundedBody, limit=MAX_BODY_BYTES)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError):
        errors = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", "")} for e in exc.errors()]
        return JSONResponse({"detail": "invalid request", "errors": errors}, status_code=422)

    def operator(cred: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> tokens.Operator:
        if cred is None or cred.scheme.lower() != "bearer":
            raise HTTPException(401, "missing bearer token", headers={"WWW-Authenticate": "Bearer"})
        op = tokens.operator_for(container.pool, cred.credentials)
        if op is None:
            raise HTTPException(401, "invalid or revoked token", headers={"WWW-Authenticate": "Bearer"})
        return op

    Op = Annotated[tokens.Operator, Depends(operator)]

    @app.get("/health", tags=["ops"])
    def health() -> dict[str, str]:
        return {"status": "ok"}

    for routes in (_memory_routes, _forgetting_routes, _configuration_routes, _conversation_and_document_routes, _report_routes,
                   _offer_and_tool_routes):
        routes(app, container, Op)

    if console:
        from streams.admin.console import mount_console

        mount_console(app, container)
    return app


def _memory_routes(app: FastAPI, container, Op) -> None:
    """A contact's memories: list, edit, forget, restore; forget all, erase."""
    # -- memories -------------------------------------------------------------
    @app.get("/v1/contacts/{contact_id}/memories", response_model=MemoryList, tags=["memories"])
    def list_memories(contact_id: Id, op: Op,
                      include_history: bool = Query(True, description="also list superseded, expired, deleted")):
        with container.pool.connection() as conn:
            rows = memory_service.contact_memories(conn, op.account_id, contact_id)
        if rows is None:
            raise HTTPException(404, f"contact {contact_id} not found")
        mems = [_memory(r) for r in rows]
        return MemoryList(contact_id=contact_id, active=[m for m in mems if m.status == "active"],
                          history=[m for m in mems if m.status != "active"] if include_history else [])

    @app.patch("/v1/memories/{memory_id}", response_model=Memory, tags=["memories"],
               responses={404: {"description": "not found"}, 409: {"description": "not editable"}})
    def edit_memory(memory_id: Id, body: MemoryEdit, op: Op):
        with container.pool.connection() as conn:
            try:
                memory_service.edit_memory(conn, account_id=op.account_id, memory_id=memory_id,
                                           content=body.content, edited_by=op.label,
                                           embedder=container.memory_embedder, prices=container.prices)
            except LookupError:
                raise HTTPException(404, f"memory {memory_id} not found") from None
            except ValueError as e:
                raise HTTPException(409, str(e)) from None
            return _memory(memory_service.get_memory(conn, op.account_id, memory_id))

    @app.delete("/v1/memories/{memory_id}", status_code=204, tags=["memories"],
                responses={404: {"description": "not found"}})
    def delete_memory(memory_id: Id, op: Op):
        with container.pool.connection() as conn:
            if not forget_service.forget_memory(conn, op.account_id, memory_id, actor=op.label):
                raise HTTPException(404, f"memory {memory_id} not found")
        return None

    @app.post("/v1/memories/{memory_id}/restore", response_model=RestoreResult, tags=["memories"],
              responses={404: {"description": "not found"}, 409: {"description": "not forgotten, or too old"}})
    def restore_memory(memory_id: Id, op: Op):
        """Undo a forget within 30 days: re-embedded and contradiction-checked again."""
        with container.pool.connection() as conn:
            try:
                r = restore(conn, op, memory_id)
            except LookupError:
                raise HTTPException(404, f"memory {memory_id} not found") from None
            except ValueError as e:
                raise HTTPException(409, str(e)) from None
            m = _memory(memory_service.get_memory(conn, op.account_id, memory_id))
        return RestoreResult(memory=m, superseded=r.superseded, superseded_by=r.superseded_by)

    def restore(conn, op: tokens.Operator, memory_id: int):
        return forget_service.restore_memory(
            conn, op.account_id, memory_id, actor=op.label, embedder=container.memory_embedder,
            checker=container.checker(), llm_model=container.checker_llm_model, prices=container.prices)

    app.state.restore = restore   # the console restores through the same function


def _forgetting_routes(app: FastAPI, container, Op) -> None:
    """Forget all of a contact's facts (soft, restorable 30 days); erase a contact everywhere."""
    @app.post("/v1/contacts/{contact_id}/forget", response_model=ForgetResult, tags=["forgetting"])
    def forget_contact(contact_id: Id, body: Confirmation, op: Op):
        with container.pool.connection() as conn:
            if memory_service.get_contact(conn, op.account_id, contact_id) is None:
                raise HTTPException(404, f"contact {contact_id} not found")
            n = forget_service.forget_contact(conn, op.account_id, contact_id, actor=op.label)
        return ForgetResult(contact_id=contact_id, facts_forgotten=n)

    @app.post("/v1/contacts/{contact_id}/erase", response_model=EraseResult, tags=["forgetting"])
    def erase_contact(contact_id: Id, body: Confirmation, op: Op):
        with container.pool.connection() as conn:
            if memory_service.get_contact(conn, op.account_id, contact_id) is None:
                raise HTTPException(404, f"contact {contact_id} not found")
            counts = forget_service.erase_contact(conn, op.account_id, contact_id,
                                                  key=container.erasure_key)
        return EraseResult(contact_id=contact_id, erased={k: int(v) for k, v in dict(counts).items()})


def _configuration_routes(app: FastAPI, container, Op) -> None:
    """Inbox configuration, account flags with their audit trail, model costs."""
    # -- inboxes --------------------------------------------------------------
    @app.get("/v1/inboxes/{inbox_id}", response_model=Inbox, tags=["configuration"])
    def get_inbox(inbox_id: Id, op: Op):
        with container.pool.connection() as conn:
            row = inbox_service.get_inbox(conn, op.account_id, inbox_id)
        if row is None:
            raise HTTPException(404, f"inbox {inbox_id} not found")
        return inbox_view(row, container.settings)

    @app.patch("/v1/inboxes/{inbox_id}", response_model=Inbox, tags=["configuration"],
               responses={404: {"description": "not found"}, 422: {"description": "invalid value"}})
    def patch_inbox(inbox_id: Id, body: InboxPatch, op: Op):
        with container.pool.connection() as conn:
            try:
                row = inbox_service.update_inbox(conn, op.account_id, inbox_id, body.model_dump(exclude_unset=True),
                                                 operator=op)
            except inbox_service.InvalidConfig as e:
                raise HTTPException(422, str(e)) from None
        if row is None:
            raise HTTPException(404, f"inbox {inbox_id} not found")
        return inbox_view(row, container.settings)

    # -- flags ----------------------------------------------------------------
    def flags_view(conn, acc: int) -> Flags:
        month = cost_service.monthly_costs(conn, acc, rate=container.settings.usd_brl_rate, months=1)[0]
        return Flags(flags=[Flag(**vars(f)) for f in flag_service.flag_states(conn, acc)],
                     cost_this_month_brl=round(month.brl, 6))

    @app.get("/v1/account/flags", response_model=Flags, tags=["configuration"])
    def get_flags(op: Op):
        with container.pool.connection() as conn:
            return flags_view(conn, op.account_id)

    @app.put("/v1/account/flags/{flag}", response_model=Flags, tags=["configuration"],
             responses={404: {"description": "unknown flag"}})
    def put_flag(flag: str, body: FlagChange, op: Op):
        """Set one flag; the change (who, when) is kept in the audit trail."""
        with container.pool.connection() as conn:
            try:
                flag_service.set_flag(conn, op.account_id, flag, body.enabled, op)
            except KeyError:
                raise HTTPException(404, f"unknown flag {flag!r}; flags: {sorted(flag_service.FLAGS)}") from None
            return flags_view(conn, op.account_id)

    # -- costs ----------------------------------------------------------------
    @app.get("/v1/account/costs", response_model=Costs, tags=["costs"])
    def get_costs(op: Op, months: int = Query(6, ge=1, le=36)):
        """Model costs from the ledger: this month first, then the previous months (per stage, BRL)."""
        rate = container.settings.usd_brl_rate
        with container.pool.connection() as conn:
            rows = cost_service.monthly_costs(conn, op.account_id, rate=rate, months=months)
        return Costs(account_id=op.account_id, usd_brl_rate=rate, months=[
            MonthCost(month=m.month.strftime("%Y-%m"), usd=m.usd, brl=m.brl, calls=m.calls,
                      prompt_tokens=m.prompt_tokens, completion_tokens=m.completion_tokens, by_stage_brl=m.by_stage)
            for m in rows])


def _conversation_and_document_routes(app: FastAPI, container, Op) -> None:
    """Resolve/reopen a conversation; list and delete knowledge documents."""
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
    def resolve_conversation(conversation_id: Id, op: Op):
        """Resolve: clears the lead state and starts the learning (once; resolving again changes nothing)."""
        return _change_status(conversation_id, op.account_id, "resolve")

    @app.post("/v1/conversations/{conversation_id}/reopen", response_model=ConversationStatus,
              tags=["conversations"], responses={404: {"description": "not found"}})
    def reopen_conversation(conversation_id: Id, op: Op):
        """Reopen: the next resolution learns from the messages after this point only."""
        return _change_status(conversation_id, op.account_id, "reopen")

    # -- documents ------------------------------------------------------------
    @app.get("/v1/documents", response_model=list[Document], tags=["knowledge"])
    def list_documents(op: Op, include_deleted: bool = Query(False)):
        from streams.ingest.documents import list_documents as listing

        with container.pool.connection() as conn:
            return [Document(**r) for r in listing(conn, op.account_id, include_deleted=include_deleted)]

    @app.delete("/v1/documents/{document_id}", response_model=Document, tags=["knowledge"],
                responses={404: {"description": "not found"}})
    def delete_document(document_id: uuid.UUID, op: Op):
        """Tombstone a document and its chunks; the ingest agent removes their points."""
        from streams.ingest.documents import delete_document as delete

        with container.pool.connection() as conn:
            row = delete(conn, op.account_id, document_id=str(document_id))
        if row is None:
            raise HTTPException(404, f"document {document_id} not found")
        return Document(**row)


def _report_routes(app: FastAPI, container, Op) -> None:
    """Unit reports and the customers' own requests made on the channel."""
    # -- reports --------------------------------------------------------------
    @app.get("/v1/reports/units", response_model=Report, tags=["reports"])
    def unit_report(op: Op, days: int = Query(90, ge=1, le=3650), top: int = Query(5, ge=1, le=50)):
        with container.pool.connection() as conn:
            units = report_service.unit_reports(conn, op.account_id, days=days, top=top)
        return Report(account_id=op.account_id, days=days, units=[
            UnitReport(unit_id=u.unit_id, unit_name=u.unit_name,
                       complaints=[ReportItem(**vars(r)) for r in u.complaints],
                       compliments=[ReportItem(**vars(r)) for r in u.compliments],
                       facts_by_type=u.facts_by_type, facts_learnt=u.facts_learnt,
                       facts_superseded=u.facts_superseded, supersedence_rate=u.supersedence_rate,
                       recall_p99_ms=u.recall_p99_ms, replies_with_recall=u.replies_with_recall)
            for u in units])

    # -- customers' requests (rights on the channel) -----------------------------
    @app.get("/v1/privacy-requests", response_model=list[PrivacyRequest], tags=["forgetting"])
    def privacy_requests(op: Op, kind: Literal["access", "erasure"] | None = None,
                         contact_id: Id | None = None, limit: int = Query(100, ge=1, le=1000)):
        """Customers who asked, on the channel, what we know about them or to be forgotten."""
        with container.pool.connection() as conn:
            rows = privacy_service.privacy_requests(conn, op.account_id, kind=kind, contact_id=contact_id,
                                                    limit=limit)
        return [PrivacyRequest(**r) for r in rows]


def _offer_and_tool_routes(app: FastAPI, container, Op) -> None:
    """Anniversary offers (settings, preview, recorded) and an inbox's HTTP tools."""
    # -- anniversary offers -----------------------------------------------------
    @app.get("/v1/account/offers", response_model=OfferSettings, tags=["offers"])
    def get_offer_settings(op: Op):
        with container.pool.connection() as conn:
            enabled, name, language = offer_admin.offer_settings(conn, op.account_id, container.settings)
        return OfferSettings(enabled=enabled, template_name=name, template_language=language)

    @app.put("/v1/account/offers", response_model=OfferSettings, tags=["offers"])
    def put_offer_settings(body: OfferSettings, op: Op):
        """Turn anniversary offers on or off (who and when go to the flags' audit trail) and set the template."""
        with container.pool.connection() as conn:
            enabled, name, language = offer_admin.set_offer_settings(
                conn, op.account_id, container.settings, enabled=body.enabled, template_name=body.template_name,
                template_language=body.template_language, operator=op)
        log.info('offer settings account_id=%d enabled=%s operator="%s"', op.account_id, enabled, op.label)
        return OfferSettings(enabled=enabled, template_name=name, template_language=language)

    @app.get("/v1/offers/preview", response_model=OfferPreview, tags=["offers"])
    def preview_offers(op: Op, days: int = Query(7, ge=1, le=60)):
        """The offers the daily job would send for the next ``days`` days (nothing is written)."""
        with container.pool.connection() as conn:
            enabled, proposals = offer_admin.preview(conn, op.account_id, container.settings,
                                                     datetime.now(timezone.utc).date(), days=days)
        return OfferPreview(account_id=op.account_id, enabled=enabled, days=days, offers=[Offer(
            contact_id=p.contact_id, occasion=p.occasion, occasion_date=p.occasion_date.isoformat(),
            conversation_id=p.conversation_id, text=p.text, template=Template(**p.template.model_dump()),
            preferences=list(p.preferences), chunk_ids=[str(c) for c in p.chunk_ids], already_sent=p.already_sent)
            for p in proposals])

    @app.get("/v1/offers", response_model=list[Offer], tags=["offers"])
    def list_offers(op: Op, limit: int = Query(100, ge=1, le=1000)):
        """Offers recorded (and when they were published)."""
        with container.pool.connection() as conn:
            rows = offer_admin.recorded_offers(conn, op.account_id, limit=limit)
        return [Offer(contact_id=r["contact_id"], occasion=r["occasion"], occasion_date=r["occasion_date"].isoformat(),
                      conversation_id=r["conversation_id"], text=r["text"],
                      template=Template(name=r["template_name"],
                                        language=(r["template_params"] or {}).get("language", "pt_BR"),
                                        parameters=(r["template_params"] or {}).get("parameters", [])),
                      chunk_ids=[str(c) for c in r["chunk_ids"] or []], already_sent=True,
                      published_at=r["published_at"]) for r in rows]

    # -- tools ------------------------------------------------------------------
    @app.get("/v1/inboxes/{inbox_id}/tools", response_model=ToolMap, tags=["configuration"],
             responses={404: {"description": "not found"}})
    def get_tools(inbox_id: Id, op: Op):
        with container.pool.connection() as conn:
            tools = tool_service.get_tools(conn, op.account_id, inbox_id)
        if tools is None:
            raise HTTPException(404, f"inbox {inbox_id} not found")
        return tools

    @app.put("/v1/inboxes/{inbox_id}/tools", response_model=ToolMap, tags=["configuration"],
             responses={404: {"description": "not found"}, 422: {"description": "invalid tool"}})
    def put_tools(inbox_id: Id, body: ToolMap, op: Op):
        """Map intents to HTTP tools (see README, "Tools"); an empty object removes them."""
        raw = {k: v.model_dump(exclude_none=True, exclude_defaults=True) | {"url": v.url} for k, v in body.items()}
        with container.pool.connection() as conn:
            try:
                tools = tool_service.set_tools(conn, op.account_id, inbox_id, raw)
            except tool_service.InvalidTools as e:
                raise HTTPException(422, str(e)) from None
        if tools is None:
            raise HTTPException(404, f"inbox {inbox_id} not found")
        log.info('inbox tools set account_id=%d inbox_id=%d intents=%s operator="%s"', op.account_id, inbox_id,
                 sorted(tools), op.label)
        return tools
