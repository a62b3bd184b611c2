"""The operator console in a real browser: Debian's chromium driven by Playwright, against
``memoria admin serve`` (a real uvicorn process) over the real Postgres and memory embedder.

Screenshots of every page go to ``screenshots/`` (ignored by git); the contact page's is the one in
the README (``docs/img/console-contact.png``, refreshed by hand from that folder).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from datetime import date, datetime, timezone
from pathlib import Path

import httpx
import pytest

from tests.harness import REPO_ROOT, free_port, wait_until

CHROMIUM = os.environ.get("MEMORIA_TEST_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
SHOTS = REPO_ROOT / "screenshots"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]

if not Path(CHROMIUM).exists() and os.environ.get("MEMORIA_REQUIRE_BROWSER") == "1":
    raise RuntimeError(f"chromium not found at {CHROMIUM} and MEMORIA_REQUIRE_BROWSER=1 (.ci/run installs it)")
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason="chromium not installed (apt-get install -y chromium; .ci/run does it)")


def _seed(env) -> tuple[str, str, dict]:
    from streams.admin.tokens import create_token
    from streams.learn.model import TokenUsage
    from streams.pricing import record_usage

    with env.conn() as c:
        for acc in (1, 2):
            c.execute("INSERT INTO accounts (id, name) VALUES (%s, %s)", (acc, f"Pousada {acc}"))
        c.execute("INSERT INTO units (id, account_id, name) VALUES (11, 1, 'Centro'), (12, 1, 'Praia')")
        c.execute("INSERT INTO inboxes (id, account_id, name) VALUES (10, 1, 'WhatsApp Centro'), (20, 2, 'Outra')")
        c.execute("INSERT INTO contacts (id, account_id, name, phone) VALUES (100, 1, 'Mariana Souza', "
                  "'+55 11 98888-7777'), (101, 1, 'João Lima', '+55 21 97777-1111'), (200, 2, 'Segredo', '+1')")
        c.execute("INSERT INTO conversations (external_id, account_id, inbox_id, contact_id, unit_id) VALUES "
                  "('c-1', 1, 10, 100, 11), ('c-2', 1, 10, 100, 12), ('c-3', 1, 10, 101, 12)")
        conv = {r["external_id"]: r["id"] for r in c.execute("SELECT id, external_id FROM conversations")}
        facts = [
            (100, "preferencia", "preferred_suite", "Prefere a suíte Hidro", "hidro", 0.9, "c-1", 11),
            (100, "restricao", "allergy", "Alérgica a camarão", "camarao", 0.95, "c-1", 11),
            (100, "data_comemorativa", "anniversary", "Aniversário de casamento em 12/06", "12-06", 0.8, "c-2", 12),
            (100, "feedback_positivo", "praise_staff", "Elogiou o Jonas da recepção", "jonas", 0.85, "c-1", 11),
            (101, "reclamacao", "complaint_wifi", "Reclamou: o wi-fi não funcionava", "open", 0.85, "c-3", 12),
            (101, "reclamacao", "complaint_room_service", "Reclamou: o pedido do jantar veio errado", "open", 0.85,
             "c-3", 12),
        ]
        ids = {}
        for contact, t, key, content, norm, conf, cv, unit in facts:
            ids[key] = c.execute(
                "INSERT INTO contact_memories (account_id, contact_id, memory_type, memory_key, content, "
                "normalized_value, evidence, confidence, scope, source_conversation_id, source_unit_id, observed_at) "
                "VALUES (1, %s, %s, %s, %s, %s, %s, %s, 'global', %s, %s, now() - interval '3 days') RETURNING id",
                (contact, t, key, content, norm, content, conf, conv[cv], unit)).fetchone()["id"]
        c.execute("INSERT INTO contact_memories (account_id, contact_id, memory_type, memory_key, content, "
                  "evidence, confidence, scope) VALUES (2, 200, 'restricao', 'allergy', 'Segredo da conta 2', 'x', "
                  "0.9, 'global')")
        # issue 11 on the console: an occasion in 3 days (an offer in the preview) and customers' requests
        soon = date.fromordinal(datetime.now(timezone.utc).date().toordinal() + 3)
        ids["birthday"] = c.execute(
            "INSERT INTO contact_memories (account_id, contact_id, memory_type, memory_key, content, normalized_value, "
            "evidence, confidence, scope, source_conversation_id, source_unit_id) VALUES (1, 101, 'data_comemorativa', "
            "'birthday', %s, %s, 'x', 0.9, 'global', %s, 12) RETURNING id",
            (f"Aniversário do cliente em {soon:%d/%m}", f"{soon:%d-%m}", conv["c-3"])).fetchone()["id"]
        ids["soon"] = soon
        c.execute("INSERT INTO privacy_requests (account_id, contact_id, conversation_id, message_id, kind, text, facts) "
                  "VALUES (1, 100, 'c-1', 'w1', 'access', 'oq vcs sabem de mim?', 4), "
                  "(2, 200, 'c-200', 'w2', 'erasure', 'Segredo: apaga tudo', 1)")
        for i, ms in enumerate([2.0] * 99 + [30.0]):
            c.execute("INSERT INTO messages (conversation_id, account_id, role, text, channel_message_id, reply) "
                      "VALUES (%s, 1, 'agent', 'ok', %s, %s)", (conv["c-2"], f"r{i}", f'{{"recall_ms": {ms}}}'))
        # a model call in the ledger (the same function the workers call)
        record_usage(1, "reply", "gpt-4o-mini", TokenUsage(prompt_tokens=200_000, completion_tokens=50_000),
                     conn=c, ref="reply-1")
        c.commit()
        _, t1 = create_token(c, 1, "ana")
        _, t2 = create_token(c, 2, "bruno")
    return t1, t2, ids


@pytest.fixture
def console(env):
    t1, t2, ids = _seed(env)
    port = free_port()
    envvars = {**os.environ, **env.env, "MEMORIA_ADMIN_PORT": str(port)}
    log = open(env.settings.qdrant_path.rsplit("/", 1)[0] + "/admin.log", "ab")
    proc = subprocess.Popen([str(Path(sys.executable).parent / "memoria"), "admin", "serve"], env=envvars,
                            stdout=log, stderr=subprocess.STDOUT, cwd=REPO_ROOT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: proc.poll() is None and httpx.get(base + "/health", timeout=1).status_code == 200,
                   timeout=90, what="admin serve")
        yield env, base, t1, t2, ids
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


UNLABELLED = """() => [...document.querySelectorAll('input:not([type=hidden]), textarea, select, button')]
  .filter(el => el.offsetParent !== null || el.closest('dialog[open]'))
  .filter(el => !(el.labels && el.labels.length) && !el.getAttribute('aria-label')
                && !(el.tagName === 'BUTTON' && el.textContent.trim()))
  .map(el => el.outerHTML.slice(0, 120))"""


def _check_page(page, name: str) -> None:
    """Every control labelled, no horizontal scroll at 360 px, a screenshot."""
    assert page.evaluate(UNLABELLED) == [], f"unlabelled controls on {name}"
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / f"console-{name}.png"), full_page=True)
    size = page.viewport_size
    page.set_viewport_size({"width": 360, "height": 740})
    overflow = page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
    page.set_viewport_size(size)
    assert overflow <= 0, f"{name} scrolls sideways at 360 px ({overflow}px)"


def test_operator_console_in_a_browser(console, browser):
    env, base, t1, t2, ids = console
    ctx = browser.new_context(viewport={"width": 1100, "height": 900}, locale="pt-BR")
    page = ctx.new_page()
    page.set_default_timeout(15000)

    # -- sign in: a wrong token is refused, the right one opens the account's console
    page.goto(base + "/console")
    assert page.url.endswith("/console/login")
    _check_page(page, "login")
    page.get_by_label("Token da conta").fill("mem_wrong")
    with page.expect_navigation():
        page.get_by_role("button", name="Entrar").click()
    assert "Token inválido" in page.locator("[role=alert]").inner_text()
    page.get_by_label("Token da conta").fill(t1)
    with page.expect_navigation():
        page.get_by_role("button", name="Entrar").click()
    page.wait_for_url(re.compile(r"/console/contacts$"))
    operator = page.get_by_test_id("operator").inner_text()
    assert operator.startswith("ana (token ")
    cookie = next(c for c in ctx.cookies() if c["name"] == "memoria_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["value"] != t1
    assert env.q("SELECT count(*) AS n FROM console_sessions WHERE session_hash = %s", cookie["value"])[0]["n"] == 0

    # -- contacts: search by name (accents and case ignored) and by phone
    page.get_by_label("Buscar por nome ou telefone").fill("mariana")
    with page.expect_navigation():
        page.get_by_role("button", name="Buscar").click()
    assert page.get_by_role("link", name="Mariana Souza").is_visible()
    assert page.get_by_role("link", name="João Lima").count() == 0
    page.get_by_label("Buscar por nome ou telefone").fill("97777")
    with page.expect_navigation():
        page.get_by_role("button", name="Buscar").click()
    assert page.get_by_role("link", name="João Lima").is_visible()
    assert page.get_by_text("Segredo").count() == 0          # another account's contact is never listed
    _check_page(page, "contacts")
    page.get_by_label("Buscar por nome ou telefone").fill("")
    with page.expect_navigation():
        page.get_by_role("button", name="Buscar").click()
    with page.expect_navigation():
        page.get_by_role("link", name="Mariana Souza").click()

    # -- the Memória page: badges, confidence, age, origin
    page.wait_for_url(re.compile(r"/console/contacts/100"))
    hidro = page.locator(f"#fact-{ids['preferred_suite']}")
    assert "Preferência" in hidro.locator(".badge").first.inner_text()
    assert hidro.get_by_role("meter").get_attribute("aria-valuenow") == "90"
    assert "há 3 dias" in hidro.inner_text()
    assert "conversa #" in hidro.inner_text() and "unidade Centro" in hidro.inner_text()
    assert page.get_by_role("link", name=re.compile(r"Ativas \(4\)")).get_attribute("aria-current") == "page"
    # the customer's own request on the channel (issue 11) is on their page
    assert "Acesso aos dados" in page.get_by_test_id("contact-requests").inner_text()
    assert "oq vcs sabem de mim?" in page.get_by_test_id("contact-requests").inner_text()
    _check_page(page, "contact")
    shutil.copy(SHOTS / "console-contact.png", SHOTS / "console-contact-before-changes.png")

    # edit inline: re-embedded, audited with the signed-in operator
    hidro.get_by_text("Editar").click()
    hidro.get_by_label("Novo conteúdo").fill("Prefere a suíte Master")
    with page.expect_navigation():
        hidro.get_by_role("button", name="Salvar").click()
    assert "Fato atualizado" in page.locator("[role=status]").inner_text()
    hidro = page.locator(f"#fact-{ids['preferred_suite']}")
    assert "Prefere a suíte Master" in hidro.inner_text()
    assert f"Editado por {operator}" in hidro.inner_text()
    row = env.q("SELECT content, embedding IS NOT NULL AS embedded, metadata FROM contact_memories WHERE id = %s",
                ids["preferred_suite"])[0]
    assert row["content"] == "Prefere a suíte Master" and row["embedded"]
    assert row["metadata"]["edits"][-1]["by"] == operator

    # forget one, find it in Histórico, restore it
    allergy = page.locator(f"#fact-{ids['allergy']}")
    with page.expect_navigation():
        allergy.get_by_role("button", name=re.compile("^Esquecer:")).click()
    assert "Fato esquecido" in page.locator("[role=status]").inner_text()
    assert page.locator(f"#fact-{ids['allergy']}").count() == 0
    with page.expect_navigation():
        page.get_by_role("link", name=re.compile(r"Histórico")).click()
    forgotten = page.locator(f"#fact-{ids['allergy']}")
    assert "esquecida" in forgotten.inner_text() and f"Esquecido por {operator}" in forgotten.inner_text()
    _check_page(page, "contact-history")
    with page.expect_navigation():
        forgotten.get_by_role("button", name=re.compile("^Restaurar:")).click()
    assert "Fato restaurado" in page.locator("[role=status]").inner_text()
    restored = page.locator(f"#fact-{ids['allergy']}")
    assert f"Restaurado por {operator}" in restored.inner_text()
    row = env.q("SELECT deleted_at, embedding IS NOT NULL AS embedded FROM contact_memories WHERE id = %s",
                ids["allergy"])[0]
    assert row["deleted_at"] is None and row["embedded"]

    # forget all, by keyboard, in a dialog that needs the typed confirmation
    page.get_by_role("button", name="Esquecer tudo").focus()
    page.keyboard.press("Enter")
    dialog = page.get_by_role("dialog")
    assert dialog.is_visible()
    submit = dialog.get_by_role("button", name="Esquecer tudo")
    page.keyboard.type("esquecer")
    assert submit.is_disabled()
    _check_page(page, "contact-forget-all")
    page.keyboard.type(" tudo")
    assert submit.is_enabled()
    page.keyboard.press("Tab")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert "Todos os fatos" in page.locator("[role=status]").inner_text()
    assert env.q("SELECT count(*) AS n FROM contact_memories WHERE contact_id = 100 AND deleted_at IS NULL")[0][
        "n"] == 0
    # the server checks the phrase too (a form posted without the dialog's check)
    csrf = page.locator("input[name=csrf]").first.get_attribute("value")
    r = page.request.post(base + "/console/contacts/101/forget-all", form={"csrf": csrf, "confirmation": "sim"},
                          max_redirects=0)
    assert r.status == 303 and "error=confirm" in r.headers["location"]
    # and every form needs the session's CSRF token
    r = page.request.post(base + f"/console/memories/{ids['anniversary']}/restore", form={"csrf": "forged"})
    assert r.status == 403

    # -- settings: a toggle shows who changed it and when; this month's cost in BRL
    with page.expect_navigation():
        page.get_by_role("link", name="Configurações").click()
    learn = page.locator("[data-flag=memory_extraction_enabled]")
    assert learn.get_by_test_id("state-memory_extraction_enabled").inner_text() == "Desligado"
    with page.expect_navigation():
        learn.get_by_role("switch").click()
    learn = page.locator("[data-flag=memory_extraction_enabled]")
    assert learn.get_by_test_id("state-memory_extraction_enabled").inner_text() == "Ligado"
    assert f"por {operator}" in learn.get_by_test_id("changed-memory_extraction_enabled").inner_text()
    assert page.locator("table.list tbody tr").first.inner_text().endswith(operator)
    cost = page.get_by_test_id("month-cost").inner_text()
    expected = (200_000 * 0.15 + 50_000 * 0.60) / 1e6 * env.settings.usd_brl_rate
    assert cost == "R$ " + f"{expected:.2f}".replace(".", ","), cost
    assert env.q("SELECT settings FROM accounts WHERE id = 1")[0]["settings"]["memory_extraction_enabled"] is True
    # customers' requests on the channel, this account's only
    requests = page.get_by_test_id("privacy-requests").inner_text()
    assert "Acesso aos dados" in requests and "4 listados" in requests and "Segredo" not in requests
    _check_page(page, "settings")

    # -- offers (issue 11): the next 7 days' preview, the flag off by default, turned on with who did it
    with page.expect_navigation():
        page.get_by_role("link", name="Ofertas").click()
    assert page.get_by_test_id("state-offers").inner_text() == "Desligado"
    preview = page.get_by_test_id("offer-preview").locator("[data-contact='101']")
    soon = ids["soon"]
    assert f"{soon:%d/%m/%Y}" in preview.inner_text() and "Oi, João Lima!" in preview.inner_text()
    assert "não será enviada" in preview.inner_text()
    assert env.q("SELECT count(*) AS n FROM offers")[0]["n"] == 0           # a preview writes nothing
    with page.expect_navigation():
        page.locator("[data-flag=anniversary_offers_enabled]").get_by_role("switch").click()
    assert page.get_by_test_id("state-offers").inner_text() == "Ligado"
    assert f"por {operator}" in page.get_by_test_id("changed-offers").inner_text()
    assert "não será enviada" not in page.get_by_test_id("offer-preview").inner_text()
    assert env.q("SELECT settings FROM accounts WHERE id = 1")[0]["settings"]["anniversary_offers_enabled"] is True
    _check_page(page, "offers")

    # -- costs per month and stage
    with page.expect_navigation():
        page.get_by_role("link", name="Custos").click()
    current = page.locator("tr.current")
    assert "(este mês)" in current.inner_text() and cost in current.inner_text()
    _check_page(page, "costs")

    # -- inbox: the calibrated default next to the threshold, a new intent, a partial save keeps the rest
    with page.expect_navigation():
        page.get_by_role("link", name="Caixas de entrada").click()
    with page.expect_navigation():
        page.get_by_role("link", name="WhatsApp Centro").click()
    assert page.get_by_test_id("calibrated").inner_text() == "0.85"
    page.get_by_label("Playbook").fill("Ofereça o café da manhã.")
    page.get_by_label("Limite de distância").fill("0.7")
    page.get_by_label("Palavras-chave por intenção (JSON)").fill('{"availability_check": ["tem vaga"]}')
    with page.expect_navigation():
        page.get_by_role("button", name="Salvar").click()
    assert "Caixa de entrada salva" in page.locator("[role=status]").inner_text()
    inbox = env.q("SELECT playbook_prompt, rag_distance_threshold, intent_keywords FROM inboxes WHERE id = 10")[0]
    assert inbox == {"playbook_prompt": "Ofereça o café da manhã.", "rag_distance_threshold": 0.7,
                     "intent_keywords": {"availability_check": ["tem vaga"]}}
    assert f"por {operator} (intent_keywords, playbook_prompt, rag_distance_threshold)" in \
        page.get_by_test_id("inbox-changed").inner_text()
    page.get_by_label("Prompt do sistema").fill("palavra " * 600)
    with page.expect_navigation():
        page.get_by_role("button", name="Salvar").click()
    assert "tokens" in page.locator("[role=alert]").inner_text()
    _check_page(page, "inbox")

    # -- reports: Wi-Fi and room service are separate rows
    with page.expect_navigation():
        page.get_by_role("link", name="Relatórios").click()
    praia = page.locator("[data-unit='12']")
    text = praia.inner_text()
    assert "Wi-Fi" in text and "serviço de quarto" in text and "ms" in text
    assert page.get_by_label("Período (dias)").input_value() == "90"
    _check_page(page, "reports")

    # -- another account's contact is refused, like a missing one
    r = page.goto(base + "/console/contacts/200")
    assert r.status == 404 and "não encontrado" in page.content()
    assert "Segredo" not in page.content()

    # -- sign out: the session is gone server-side
    page.goto(base + "/console/contacts")
    with page.expect_navigation():
        page.get_by_role("button", name="Sair").click()
    page.wait_for_url(re.compile(r"/console/login"))
    page.goto(base + "/console/contacts/100")
    assert page.url.endswith("/console/login")
    ctx.close()
