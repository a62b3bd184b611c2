import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from uuid import uuid4

import pytest

from streams.respond.generate import (
    CONFIRMATION_REPLY,
    FALLBACK_NO_KNOWLEDGE,
    GREETING_REPLY,
    OfflineComposer,
    OpenAIChatGenerator,
    price_amounts,
    unsupported_prices,
)
from streams.respond.lead import MAX_LEAD_STATE_BYTES, enforce_size, next_lead_state
from streams.respond.model import KnowledgeChunk, ReplyRequest
from streams.respond.recall import MemoryFact, ScoredFact
from tests.respond.fakes import FixedClock

PRICES = ("Suíte Standard: período de 2 horas R$ 89; pernoite R$ 180. Suíte Luxo: período de 2 horas "
          "R$ 129; pernoite R$ 240. Suíte Master (com piscina aquecida e sauna): pernoite R$ 450. "
          "Hora adicional: R$ 30 nas suítes Standard e Luxo.")
RULES = ("Não é permitido entrar com animais de estimação. Cancelamento com menos de 24 horas: "
         "o sinal é convertido em crédito válido por 60 dias.")


def chunk(text):
    return KnowledgeChunk(uuid4(), uuid4(), 0.2, text)


def req(message, intent, retrieval="required", chunks=(), memories=()):
    return ReplyRequest(messages=[], message=message, intent=intent, retrieval=retrieval,
                        chunks=tuple(chunks), memories=tuple(memories))


def test_price_amounts_normalise():
    assert price_amounts("R$ 1.200 ou R$1200,00 ou r$ 89,9") == {"1200,00", "89,90"}
    assert unsupported_prices("custa R$ 240", [chunk(PRICES)]) == set()
    assert unsupported_prices("custa R$ 241", [chunk(PRICES)]) == {"241,00"}


@pytest.mark.parametrize("message,intent,expect", [
    ("Quanto custa o pernoite na suíte Luxo?", "price_question", "R$ 240"),
    ("Tem suíte com piscina? Quanto fica o pernoite?", "price_question", "R$ 450"),
    ("Posso levar meus animais?", "policy", "animais"),
    ("Se eu cancelar no mesmo dia perco o sinal?", "policy", "60 dias"),
])
def test_offline_composer_answers_from_chunks(message, intent, expect):
    text = OfflineComposer().generate(req(message, intent, chunks=[chunk(PRICES), chunk(RULES)])).text
    assert expect in text
    assert not unsupported_prices(text, [chunk(PRICES), chunk(RULES)])


@pytest.mark.parametrize("message", [
    "Quanto custa a suíte presidencial? É R$ 999?", "Faz por R$ 50 o pernoite?",
    "Quanto fica a diária com desconto?", "R$ 259 é caro demais, tem mais barato?",
])
def test_offline_composer_never_emits_a_price_not_in_chunks(message):
    chunks = [chunk(PRICES), chunk(RULES)]
    for intent in ("price_question", "objection", "general", "info_request"):
        text = OfflineComposer().generate(req(message, intent, chunks=chunks)).text
        assert not unsupported_prices(text, chunks), text
    # and with nothing retrieved there is no amount at all
    text = OfflineComposer().generate(req(message, "price_question", chunks=[])).text
    assert text == FALLBACK_NO_KNOWLEDGE and not price_amounts(text)


def test_offline_canned_and_memory_weaving():
    pref = ScoredFact(MemoryFact(1, "preferencia", "Prefere a suíte Master com piscina", 0.9, "global", None), 0.8, 0.8)
    money = ScoredFact(MemoryFact(2, "preferencia", "Prefere pagar R$ 999", 0.9, "global", None), 0.9, 0.9)
    c = OfflineComposer()
    assert c.generate(req("Oi", "greeting", "none")).text == GREETING_REPLY
    assert c.generate(req("Ok, obrigada!", "confirmation", "none")).text == CONFIRMATION_REPLY
    text = c.generate(req("Quanto custa o pernoite?", "price_question", chunks=[chunk(PRICES)],
                          memories=[money, pref])).text
    assert "suíte Master com piscina" in text and "999" not in text
    assert "memória" not in text.lower() and "registro" not in text.lower()


def test_lead_state_progress_and_size_limit():
    now = FixedClock().now()
    s = next_lead_state(None, intent="greeting", retrieval_count=0, now=now)
    s = next_lead_state(s, intent="price_question", retrieval_count=1, now=now)
    s = next_lead_state(s, intent="general", retrieval_count=2, now=now)
    assert s["stage"] == "cotacao" and s["last_intent"] == "general" and s["retrieval_count"] == 2
    s = next_lead_state(s, intent="confirmation", retrieval_count=2, now=now)
    assert s["stage"] == "fechamento"
    big = dict(s, notes="x" * 10_000, other=["y" * 100] * 50)
    trimmed = next_lead_state(big, intent="info_request", retrieval_count=3, now=now)
    size = len(json.dumps(trimmed, ensure_ascii=False, sort_keys=True).encode())
    assert size <= MAX_LEAD_STATE_BYTES and trimmed["retrieval_count"] == 3 and trimmed["stage"] == "fechamento"
    assert len(json.dumps(enforce_size({"stage": "é" * 9000}), ensure_ascii=False).encode()) <= MAX_LEAD_STATE_BYTES


# ------------------------------------------------------- OpenAI-compatible
class _Scripted(BaseHTTPRequestHandler):
    script: list = []
    seen: list = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(body)
        status = type(self).script.pop(0) if type(self).script else 200
        if status != 200:
            payload = {"error": {"message": "boom", "type": "server_error"}}
        else:
            payload = {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": " Olá! O pernoite é R$ 240. "}}],
                       "usage": {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49}}
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


@pytest.fixture
def llm_server():
    _Scripted.script, _Scripted.seen = [], []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Scripted)
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1", _Scripted
    srv.shutdown()
    srv.server_close()


def test_openai_generator_retries_5xx_and_reports_usage(llm_server):
    url, handler = llm_server
    handler.script = [500, 503]
    gen = OpenAIChatGenerator("m-default", base_url=url, api_key="k", max_retries=3, backoff_max=0.05, timeout=5)
    r = ReplyRequest(messages=[{"role": "user", "content": "oi"}], message="oi", intent="greeting",
                     retrieval="none", model="inbox-model", temperature=0.2)
    g = gen.generate(r)
    assert g.text == "Olá! O pernoite é R$ 240." and g.usage.prompt_tokens == 42 and g.usage.completion_tokens == 7
    assert len(handler.seen) == 3
    assert handler.seen[-1]["model"] == "inbox-model" and handler.seen[-1]["temperature"] == 0.2


def test_openai_generator_does_not_retry_4xx(llm_server):
    import openai

    url, handler = llm_server
    handler.script = [400, 200]
    gen = OpenAIChatGenerator("m", base_url=url, api_key="k", max_retries=3, backoff_max=0.05, timeout=5)
    with pytest.raises(openai.BadRequestError):
        gen.generate(ReplyRequest(messages=[{"role": "user", "content": "oi"}], message="oi",
                                  intent="general", retrieval="optional"))
    assert len(handler.seen) == 1


def test_composer_embeds_each_chunk_sentence_once_and_reuses_the_query_vector():
    from uuid import uuid4

    from streams.respond.generate import OfflineComposer
    from streams.respond.model import KnowledgeChunk, ReplyRequest
    from tests.respond.fakes import BagOfWordsEmbedder

    class Counting(BagOfWordsEmbedder):
        def __init__(self):
            super().__init__()
            self.passages = 0

        def embed_passages(self, texts):
            self.passages += len(texts)
            return super().embed_passages(texts)

    emb = Counting()
    composer = OfflineComposer(embedder=emb)
    chunk = KnowledgeChunk(uuid4(), uuid4(), 0.3, "O pernoite na suíte Luxo custa R$ 240. Aceitamos Pix.")
    qv = emb.embed_queries(["Quanto custa o pernoite na Luxo?"])[0]
    req = ReplyRequest(messages=[], message="Quanto custa o pernoite na Luxo?", intent="price_question",
                       retrieval="required", chunks=(chunk,), query_vector=qv, query_model=emb.name)
    passages, calls = emb.passages, emb.calls
    first = composer.compose(req)
    second = composer.compose(req)
    assert first == second and "R$ 240" in first
    assert emb.passages - passages == 2   # two sentences, embedded on the first reply only
    assert emb.calls == calls             # the message vector came with the request
