"""The operator console: server-rendered pages under ``/console`` in the admin API process.

Sign in with an account's API token (``memoria admin token create --account N --name ana``): the
browser then holds an HttpOnly, SameSite=Strict session cookie (the token itself is never stored in
the browser); every form carries the session's CSRF token, checked on every POST. Every page is
scoped to the signed-in account (another account's contact answers 404) and every manual change
records the signed-in operator (the token's name) and the time. The routes only parse, call the
same service functions as the JSON API (``streams.admin.*``, ``streams.maintain.forget``) and
render; a change answers with a redirect (POST/redirect/GET) carrying a short status code.
"""

from __future__ import annotations

import inspect
import json
import logging
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode

from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from streams.admin import costs as cost_service
from streams.admin import flags as flag_service
from streams.admin import inboxes as inbox_service
from streams.admin import memories as memory_service
from streams.admin import offers as offer_admin
from streams.admin import privacy as privacy_service
from streams.admin import reports as report_service
from streams.admin.console import sessions
from streams.admin.tokens import operator_for
from streams.maintain import forget as forget_service
from streams.store.uow import joined

log = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
COOKIE = "memoria_session"
LOGIN_CSRF_COOKIE = "memoria_login_csrf"
FORGET_ALL_PHRASE = "ESQUECER TUDO"
MAX_FORM_BYTES = 64 * 1024
LOGIN_MAX_FAILURES = 10          # refused sign-ins per client address ...
LOGIN_WINDOW_S = 300.0           # ... within this window, then sign-in is refused for a while
MEMORY_TYPE_LABELS = {
    "preferencia": "Preferência", "data_comemorativa": "Data comemorativa", "vinculo_social": "Vínculo social",
    "padrao_comportamental": "Padrão", "reclamacao": "Reclamação", "feedback_positivo": "Elogio",
    "restricao": "Restrição", "vinculo_comercial": "Vínculo comercial", "contexto_pessoal": "Contexto pessoal",
}
STATUS_LABELS = {"active": "ativa", "superseded": "substituída", "expired": "expirada", "deleted": "esquecida"}
STAGE_LABELS = {"extraction": "Extração", "contradiction": "Contradição", "reply": "Respostas",
                "embedding": "Embeddings"}
MESSAGES = {
    "edited": "Fato atualizado.", "forgotten": "Fato esquecido. Pode ser restaurado por 30 dias.",
    "restored": "Fato restaurado.", "restored_history": "Fato restaurado no histórico: um fato mais recente o contradiz.",
    "forgot_all": "Todos os fatos do contato foram esquecidos.", "flag": "Configuração alterada.",
    "inbox": "Caixa de entrada salva.", "signed_out": "Sessão encerrada.",
    "offers_on": "Ofertas de datas comemorativas ligadas.", "offers_off": "Ofertas de datas comemorativas desligadas.",
}
ERRORS = {
    "login": "Token inválido ou revogado.",
    "throttled": "Muitas tentativas de entrada; aguarde alguns minutos.", "csrf": "O formulário expirou; tente de novo.",
    "confirm": f"Para esquecer tudo, digite exatamente {FORGET_ALL_PHRASE}.",
    "not_editable": "Este fato não pode ser editado (está no histórico).", "empty": "O conteúdo não pode ficar vazio.",
    "restore": "Este fato não pode ser restaurado (não está esquecido, ou passaram 30 dias).",
}


def _age(ts: datetime | None, now: datetime) -> str:
    if ts is None:
        return ""
    s = (now - ts).total_seconds()
    if s < 60:
        return "agora"
    for size, one, many in ((86400 * 365, "ano", "anos"), (86400 * 30, "mês", "meses"), (86400, "dia", "dias"),
                            (3600, "hora", "horas"), (60, "minuto", "minutos")):
        if s >= size:
            n = int(s // size)
            return f"há {n} {one if n == 1 else many}"
    return "agora"


def _when(ts: datetime | None) -> str:
    return ts.astimezone(timezone.utc).strftime("%d/%m/%Y %H:%M UTC") if ts else "—"




def _split_facts(rows: list[dict], now: datetime) -> tuple[list[dict], list[dict]]:
    """A contact's facts for the Memória tabs (active, history), each with its age, its last
    manual change (who, when) and whether it can still be restored."""
    for r in rows:
        r["age"] = _age(r.get("observed_at") or r["created_at"], now)
        r["last_change"] = _last_change(r["metadata"] or {})
        r["restorable"] = (r["status"] == "deleted" and r["deleted_at"] is not None
                           and (now - r["deleted_at"]).days < forget_service.RESTORE_WINDOW_DAYS)
    return [r for r in rows if r["status"] == "active"], [r for r in rows if r["status"] != "active"]


def _last_change(meta: dict) -> dict | None:
    edits = meta.get("edits") or []
    last = None
    for kind, entry in (("editado", edits[-1] if edits else None), ("esquecido", meta.get("deleted")),
                        ("restaurado", meta.get("restored"))):
        if entry and (last is None or entry.get("at", "") > last["at"]):
            last = {"kind": kind, "by": entry.get("by", ""), "at": entry.get("at", "")}
    if last:
        try:
            last["when"] = _when(datetime.fromisoformat(last["at"]))
        except ValueError:
            last["when"] = last["at"]
    return last


def _inbox_changes(data: dict[str, str]) -> tuple[dict[str, Any], str | None]:
    """The inbox form's fields as changes, or the reason they are invalid."""
    changes: dict[str, Any] = {}
    try:
        changes = {"system_prompt": data.get("system_prompt", ""), "playbook_prompt": data.get("playbook_prompt", ""),
                   "model": data.get("model", "").strip(),
                   "temperature": float(data.get("temperature", "0.7").replace(",", ".")),
                   "rag_max_results": int(data.get("rag_max_results", "3")),
                   "rag_distance_threshold": (float(data["rag_distance_threshold"].replace(",", "."))
                                              if data.get("rag_distance_threshold", "").strip() else None),
                   "intent_keywords": json.loads(data.get("intent_keywords") or "{}")}
    except (ValueError, json.JSONDecodeError) as e:
        return changes, f"Valor inválido: {e}"
    if not 0 <= changes["temperature"] <= 2:
        return changes, "Temperatura: entre 0 e 2."
    if not 1 <= changes["rag_max_results"] <= 20:
        return changes, "Máximo de resultados: entre 1 e 20."
    if changes["rag_distance_threshold"] is not None and not 0 <= changes["rag_distance_threshold"] <= 2:
        return changes, "Limite de distância: entre 0 e 2 (vazio = o calibrado)."
    return changes, None


class _Console:
    """What every console route shares: templates, the session check, CSRF, redirects."""

    def __init__(self, container):
        self.container = container
        self.settings = container.settings if container is not None else None
        self.templates = Jinja2Templates(directory=str(HERE / "templates"))
        self.templates.env.globals.update(
            type_label=lambda t: MEMORY_TYPE_LABELS.get(t, t.replace("_", " ")),
            status_label=lambda s: STATUS_LABELS.get(s, s), when=_when, brl=cost_service.brl,
            stage_label=lambda s: STAGE_LABELS.get(s, s),
            request_label=lambda k: privacy_service.KIND_LABELS.get(k, k),
            occasion_label=offer_admin.occasion_label, FORGET_ALL_PHRASE=FORGET_ALL_PHRASE)
        self.failures: dict[str, list[float]] = {}   # client address -> times of refused sign-ins (this process)

    @staticmethod
    def secure_headers(resp: Response) -> Response:
        resp.headers["X-Frame-Options"] = "DENY"
        resp.headers["X-Content-Type-Options"] = "nosniff"
        resp.headers["Referrer-Policy"] = "same-origin"
        resp.headers["Content-Security-Policy"] = ("default-src 'self'; img-src 'self' data:; "
                                                   "form-action 'self'; frame-ancestors 'none'")
        resp.headers["Cache-Control"] = "no-store"
        return resp

    def page(self, request: Request, name: str, ctx: dict[str, Any], status: int = 200) -> Response:
        q = request.query_params
        ctx = dict(ctx, request=request, ok=MESSAGES.get(q.get("ok", "")), error=ctx.get("error")
                   or ERRORS.get(q.get("error", "")))
        return self.secure_headers(self.templates.TemplateResponse(request, name, ctx, status_code=status))

    def go(self, path: str, **params: str) -> Response:
        return self.secure_headers(RedirectResponse(path + (("?" + urlencode(params)) if params else ""), 303))

    def signed_in(self, request: Request):
        with self.container.pool.connection() as conn:
            return sessions.session_for(conn, request.cookies.get(COOKIE))

    @staticmethod
    async def form(request: Request) -> dict[str, str]:
        body = await request.body()
        if len(body) > MAX_FORM_BYTES:
            return {}
        return {k: v[-1] for k, v in parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True).items()}

    @staticmethod
    def _public_signature(fn, wrapper):
        """FastAPI reads the endpoint's signature: keep the request and path parameters only."""
        sig = inspect.signature(fn)
        params = [p for name, p in sig.parameters.items() if name not in ("op", "csrf", "data")]
        wrapper.__signature__ = sig.replace(parameters=params)
        wrapper.__name__ = fn.__name__
        return wrapper

    def guard(self, fn):
        """GET pages: a signed-in operator or the login page."""
        async def wrapper(request: Request, **kw):
            s = self.signed_in(request)
            if s is None:
                return self.go("/console/login")
            op, csrf = s
            request.state.csrf = csrf
            return await fn(request, op, csrf, **kw)
        return self._public_signature(fn, wrapper)

    def post_guard(self, fn):
        """POST actions: a signed-in operator and the session's CSRF token in the form."""
        async def wrapper(request: Request, **kw):
            s = self.signed_in(request)
            if s is None:
                return self.go("/console/login")
            op, csrf = s
            request.state.csrf = csrf
            data = await self.form(request)
            if not sessions.same(data.get("csrf"), csrf):
                log.warning('console CSRF check failed account_id=%d path="%s"', op.account_id, request.url.path)
                return self.page(request, "error.html", {"op": op, "csrf": csrf, "title": "Formulário expirado",
                                                         "error": ERRORS["csrf"]}, status=403)
            return await fn(request, op, data, **kw)
        return self._public_signature(fn, wrapper)

    def not_found(self, request: Request, op, _csrf, what: str) -> Response:
        csrf = getattr(request.state, "csrf", "")
        return self.page(request, "error.html", {"op": op, "csrf": csrf, "title": "Não encontrado",
                                                 "error": f"{what} não encontrado nesta conta."}, status=404)

    def too_many(self, client: str, now: float) -> bool:
        recent = [t for t in self.failures.get(client, []) if now - t < LOGIN_WINDOW_S]
        self.failures[client] = recent
        if len(self.failures) > 10_000:   # bounded memory: forget the quietest clients
            for k in [k for k, v in self.failures.items() if not v][:5000]:
                self.failures.pop(k, None)
        return len(recent) >= LOGIN_MAX_FAILURES

    def back_to_contact(self, data: dict, contact_id: int, **params: str) -> Response:
        tab = "historico" if data.get("tab") == "historico" else "ativas"
        return self.go(f"/console/contacts/{contact_id}", tab=tab, **params)

    def inbox_context(self, row: dict, last: dict | None = None) -> dict:
        from streams.respond.prompt import SYSTEM_PROMPT_MAX_TOKENS

        return {"inbox": row, "last_change": last,
                "tokens": inbox_service.system_prompt_tokens(row["system_prompt"] or ""),
                "max_tokens": SYSTEM_PROMPT_MAX_TOKENS,
                "calibrated": inbox_service.calibrated_threshold(self.settings.embedding_model),
                "embedding_model": self.settings.embedding_model,
                "keywords_json": json.dumps(row["intent_keywords"] or {}, ensure_ascii=False, indent=2)}


def mount_console(app: FastAPI, container) -> None:
    """Serve the console under ``/console`` on ``app`` (same process, port and tokens as the API)."""
    c = _Console(container)
    app.mount("/console/static", StaticFiles(directory=str(HERE / "static")), name="console-static")
    for routes in (_sign_in_routes, _contact_routes, _memory_routes, _settings_routes, _inbox_routes, _offer_routes,
                   _cost_report_routes):
        routes(app, c)



def _sign_in_routes(app: FastAPI, c: _Console) -> None:
    """Sign in with a token, sign out."""
    @app.get("/console", include_in_schema=False)
    async def console_home(request: Request):
        return c.go("/console/contacts" if c.signed_in(request) else "/console/login")

    @app.get("/console/login", include_in_schema=False)
    async def login_page(request: Request):
        import secrets as _s

        token = _s.token_urlsafe(24)
        resp = c.page(request, "login.html", {"login_csrf": token, "title": "Entrar"})
        resp.set_cookie(LOGIN_CSRF_COOKIE, token, httponly=True, samesite="strict", path="/console",
                        secure=c.settings.console_secure_cookies, max_age=3600)
        return resp

    @app.post("/console/login", include_in_schema=False)
    async def login(request: Request):
        data = await c.form(request)
        if not sessions.same(data.get("csrf"), request.cookies.get(LOGIN_CSRF_COOKIE)):
            return c.go("/console/login", error="csrf")
        client, now = (request.client.host if request.client else "?"), time.monotonic()
        if c.too_many(client, now):
            log.warning('console sign-in throttled client="%s"', client)
            return c.go("/console/login", error="throttled")
        with joined(c.container.pool) as uow:  # the token marked used and the session, together
            op = operator_for(uow, data.get("token", "").strip())
            if op is not None:
                secret, _ = sessions.create_session(uow, op, hours=c.settings.console_session_hours)
        if op is None:
            c.failures.setdefault(client, []).append(now)
            log.info('console sign-in refused client="%s"', client)
            return c.go("/console/login", error="login")
        log.info('console sign-in account_id=%d operator="%s"', op.account_id, op.label)
        resp = c.go("/console/contacts")
        resp.set_cookie(COOKIE, secret, httponly=True, samesite="strict", path="/console",
                        secure=c.settings.console_secure_cookies, max_age=int(c.settings.console_session_hours * 3600))
        resp.delete_cookie(LOGIN_CSRF_COOKIE, path="/console")
        return resp

    @app.post("/console/logout", include_in_schema=False)
    @c.post_guard
    async def logout(request: Request, op, data):
        with c.container.pool.connection() as conn:
            sessions.end_session(conn, request.cookies.get(COOKIE))
        resp = c.go("/console/login", ok="signed_out")
        resp.delete_cookie(COOKIE, path="/console")
        return resp



def _contact_routes(app: FastAPI, c: _Console) -> None:
    """Contacts and a contact's Memória (edit, forget, restore, forget all)."""
    # ---------------------------------------------------------------- contacts
    @app.get("/console/contacts", include_in_schema=False)
    @c.guard
    async def contacts(request: Request, op, csrf):
        q = request.query_params.get("q", "")
        with c.container.pool.connection() as conn:
            rows = memory_service.search_contacts(conn, op.account_id, q)
        return c.page(request, "contacts.html", {"op": op, "csrf": csrf, "q": q, "contacts": rows,
                                               "title": "Contatos", "nav": "contacts"})

    @app.get("/console/contacts/{contact_id}", include_in_schema=False)
    @c.guard
    async def contact(request: Request, op, csrf, contact_id: int):
        tab = "historico" if request.query_params.get("tab") == "historico" else "ativas"
        with c.container.pool.connection() as conn:
            person = memory_service.get_contact(conn, op.account_id, contact_id)
            rows = memory_service.contact_memories(conn, op.account_id, contact_id) if person else None
            requests = (privacy_service.privacy_requests(conn, op.account_id, contact_id=contact_id, limit=20)
                        if person else [])
        if person is None:
            return c.not_found(request, op, csrf, f"Contato {contact_id}")
        active, history = _split_facts(rows, datetime.now(timezone.utc))
        return c.page(request, "contact.html", {
            "op": op, "csrf": csrf, "contact": person, "tab": tab, "facts": active if tab == "ativas" else history,
            "n_active": len(active), "n_history": len(history), "requests": requests,
            "title": f"Memória de {person['name'] or person['id']}",
            "nav": "contacts"})


def _memory_routes(app: FastAPI, c: _Console) -> None:
    """A fact's actions on the Memória page: edit, forget, restore; forget all of a contact."""
    @app.post("/console/memories/{memory_id}/edit", include_in_schema=False)
    @c.post_guard
    async def edit_fact(request: Request, op, data, memory_id: int):
        content = (data.get("content") or "").strip()
        with c.container.pool.connection() as conn:
            m = memory_service.get_memory(conn, op.account_id, memory_id)
            if m is None:
                return c.not_found(request, op, None, f"Fato {memory_id}")
            if not content or len(content) > 1000 or "\x00" in content:
                return c.back_to_contact(data, m["contact_id"], error="empty")
            try:
                memory_service.edit_memory(conn, account_id=op.account_id, memory_id=memory_id, content=content,
                                           edited_by=op.label, embedder=c.container.memory_embedder,
                                           prices=c.container.prices)
            except ValueError:
                return c.back_to_contact(data, m["contact_id"], error="not_editable")
        return c.back_to_contact(data, m["contact_id"], ok="edited")

    @app.post("/console/memories/{memory_id}/forget", include_in_schema=False)
    @c.post_guard
    async def forget_fact(request: Request, op, data, memory_id: int):
        with c.container.pool.connection() as conn:
            m = memory_service.get_memory(conn, op.account_id, memory_id)
            if m is None:
                return c.not_found(request, op, None, f"Fato {memory_id}")
            forget_service.forget_memory(conn, op.account_id, memory_id, actor=op.label)
        return c.back_to_contact(data, m["contact_id"], ok="forgotten")

    @app.post("/console/memories/{memory_id}/restore", include_in_schema=False)
    @c.post_guard
    async def restore_fact(request: Request, op, data, memory_id: int):
        with c.container.pool.connection() as conn:
            m = memory_service.get_memory(conn, op.account_id, memory_id)
            if m is None:
                return c.not_found(request, op, None, f"Fato {memory_id}")
            try:
                r = app.state.restore(conn, op, memory_id)
            except (LookupError, ValueError):
                return c.back_to_contact(data, m["contact_id"], error="restore")
        return c.go(f"/console/contacts/{m['contact_id']}", tab="ativas" if r.status == "active" else "historico",
                  ok="restored" if r.status == "active" else "restored_history")

    @app.post("/console/contacts/{contact_id}/forget-all", include_in_schema=False)
    @c.post_guard
    async def forget_all(request: Request, op, data, contact_id: int):
        with c.container.pool.connection() as conn:
            if memory_service.get_contact(conn, op.account_id, contact_id) is None:
                return c.not_found(request, op, None, f"Contato {contact_id}")
            if (data.get("confirmation") or "").strip().upper() != FORGET_ALL_PHRASE:
                return c.go(f"/console/contacts/{contact_id}", error="confirm")
            forget_service.forget_contact(conn, op.account_id, contact_id, actor=op.label)
        return c.go(f"/console/contacts/{contact_id}", tab="historico", ok="forgot_all")



def _settings_routes(app: FastAPI, c: _Console) -> None:
    """The two flags with their audit trail, this month's cost, customers' requests."""
    # ---------------------------------------------------------------- settings
    @app.get("/console/settings", include_in_schema=False)
    @c.guard
    async def settings_page(request: Request, op, csrf):
        with c.container.pool.connection() as conn:
            flags = flag_service.flag_states(conn, op.account_id)
            history = flag_service.flag_history(conn, op.account_id)
            month = cost_service.monthly_costs(conn, op.account_id, rate=c.settings.usd_brl_rate, months=1)[0]
            requests = privacy_service.privacy_requests(conn, op.account_id, limit=50)
        return c.page(request, "settings.html", {
            "op": op, "csrf": csrf, "flags": flags, "history": history, "month": month,
            "flag_labels": flag_service.FLAGS | {offer_admin.FLAG: offer_admin.LABEL}, "requests": requests,
            "title": "Configurações", "nav": "settings"})

    @app.post("/console/settings/flags/{flag}", include_in_schema=False)
    @c.post_guard
    async def set_flag(request: Request, op, data, flag: str):
        if flag not in flag_service.FLAGS or data.get("enabled") not in ("true", "false"):
            return c.not_found(request, op, None, f"Configuração {flag}")
        with c.container.pool.connection() as conn:
            flag_service.set_flag(conn, op.account_id, flag, data["enabled"] == "true", op)
        return c.go("/console/settings", ok="flag")



def _inbox_routes(app: FastAPI, c: _Console) -> None:
    """Inbox configuration (only the fields that changed are saved)."""
    # ----------------------------------------------------------------- inboxes
    @app.get("/console/inboxes", include_in_schema=False)
    @c.guard
    async def inboxes(request: Request, op, csrf):
        with c.container.pool.connection() as conn:
            rows = inbox_service.list_inboxes(conn, op.account_id)
        return c.page(request, "inboxes.html", {"op": op, "csrf": csrf, "inboxes": rows, "title": "Caixas de entrada",
                                              "nav": "inboxes"})

    @app.get("/console/inboxes/{inbox_id}", include_in_schema=False)
    @c.guard
    async def inbox(request: Request, op, csrf, inbox_id: int):
        with c.container.pool.connection() as conn:
            row = inbox_service.get_inbox(conn, op.account_id, inbox_id)
            last = inbox_service.last_change(conn, op.account_id, inbox_id) if row else None
        if row is None:
            return c.not_found(request, op, csrf, f"Caixa de entrada {inbox_id}")
        return c.page(request, "inbox.html", {"op": op, "csrf": csrf, **c.inbox_context(row, last),
                                            "title": f"Caixa de entrada {row['name'] or inbox_id}", "nav": "inboxes"})

    @app.post("/console/inboxes/{inbox_id}", include_in_schema=False)
    @c.post_guard
    async def save_inbox(request: Request, op, data, inbox_id: int):
        changes, error = _inbox_changes(data)
        with c.container.pool.connection() as conn:
            row = inbox_service.get_inbox(conn, op.account_id, inbox_id)
            if row is None:
                return c.not_found(request, op, None, f"Caixa de entrada {inbox_id}")
            if error is None:
                try:
                    inbox_service.update_inbox(conn, op.account_id, inbox_id, changes, operator=op)
                    log.info('inbox updated account_id=%d inbox_id=%d operator="%s"', op.account_id, inbox_id,
                             op.label)
                    return c.go(f"/console/inboxes/{inbox_id}", ok="inbox")
                except inbox_service.InvalidConfig as e:
                    error = str(e)
        shown = dict(row, **{k: v for k, v in changes.items() if k != "intent_keywords"})
        ctx = c.inbox_context(shown)
        ctx["keywords_json"] = data.get("intent_keywords", ctx["keywords_json"])
        return c.page(request, "inbox.html", {"op": op, "csrf": request.state.csrf, **ctx, "error": error,
                                            "title": f"Caixa de entrada {row['name'] or inbox_id}",
                                            "nav": "inboxes"}, status=422)



def _offer_routes(app: FastAPI, c: _Console) -> None:
    """Anniversary offers: flag, preview, what was sent."""
    # ------------------------------------------------------------------ offers
    @app.get("/console/offers", include_in_schema=False)
    @c.guard
    async def offers(request: Request, op, csrf):
        with c.container.pool.connection() as conn:
            enabled, proposals = offer_admin.preview(conn, op.account_id, c.settings,
                                                     datetime.now(timezone.utc).date(),
                                                     days=c.settings.offers_window_days)
            _, template, language = offer_admin.offer_settings(conn, op.account_id, c.settings)
            last = offer_admin.last_change(conn, op.account_id)
            sent = offer_admin.recorded_offers(conn, op.account_id, limit=50)
            optouts = offer_admin.optouts(conn, op.account_id)
        return c.page(request, "offers.html", {
            "op": op, "csrf": csrf, "enabled": enabled, "template": template, "language": language, "last": last,
            "proposals": proposals, "sent": sent, "optouts": optouts, "days": c.settings.offers_window_days,
            "label": offer_admin.LABEL, "title": "Ofertas", "nav": "offers"})

    @app.post("/console/offers/enabled", include_in_schema=False)
    @c.post_guard
    async def set_offers(request: Request, op, data):
        if data.get("enabled") not in ("true", "false"):
            return c.not_found(request, op, None, "Configuração")
        with c.container.pool.connection() as conn:
            enabled, _, _ = offer_admin.set_offer_settings(conn, op.account_id, c.settings,
                                                           enabled=data["enabled"] == "true", operator=op)
        log.info('offer flag account_id=%d enabled=%s operator="%s"', op.account_id, enabled, op.label)
        return c.go("/console/offers", ok="offers_on" if enabled else "offers_off")



def _cost_report_routes(app: FastAPI, c: _Console) -> None:
    """Costs per month and stage, reports per unit."""
    # ------------------------------------------------------------ costs, reports
    @app.get("/console/costs", include_in_schema=False)
    @c.guard
    async def costs(request: Request, op, csrf):
        with c.container.pool.connection() as conn:
            months = cost_service.monthly_costs(conn, op.account_id, rate=c.settings.usd_brl_rate, months=6)
        return c.page(request, "costs.html", {"op": op, "csrf": csrf, "months": months, "rate": c.settings.usd_brl_rate,
                                            "stages": list(STAGE_LABELS), "title": "Custos", "nav": "costs"})

    @app.get("/console/reports", include_in_schema=False)
    @c.guard
    async def reports(request: Request, op, csrf):
        try:
            days = min(3650, max(1, int(request.query_params.get("days", "90"))))
        except ValueError:
            days = 90
        with c.container.pool.connection() as conn:
            units = report_service.unit_reports(conn, op.account_id, days=days)
        return c.page(request, "reports.html", {"op": op, "csrf": csrf, "units": units, "days": days,
                                              "type_labels": MEMORY_TYPE_LABELS, "title": "Relatórios por unidade",
                                              "nav": "reports"})
