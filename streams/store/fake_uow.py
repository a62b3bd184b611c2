"""An in-memory unit of work: the same ports as Postgres, for unit tests of the domain logic.

``FakeDatabase`` is the committed state (plain dicts and lists); each
``FakeUnitOfWork`` block works on a deep copy of it and replaces it only at
``commit()``, so an exception or an early return leaves nothing behind, as a
rolled-back transaction does. Committed events land in ``db.outbox`` as
``(type, event)`` pairs, already validated by ``UnitOfWork.commit``.

Usage::

    db = FakeDatabase()
    db.add_account(1, memory_extraction_enabled=True)
    ports = LearnPorts(pool=None, ..., uow=db.unit_of_work)
    learn_conversation(ports, conversation_id)
    assert [t for t, _ in db.outbox] == ["memory.created", ...]
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from uuid6 import uuid7

from streams.learn.consolidate import MAX_LIVE_FACTS, Plan, StoredFact, over_cap
from streams.learn.model import Message, Transcript
from streams.learn.store import Applied, Conversation, memory_event
from streams.outbox.write import OutboxEvent
from streams.store.uow import UnitOfWork


@dataclass
class FakeState:
    accounts: dict[int, dict] = field(default_factory=dict)          # id -> settings
    conversations: dict[int, Conversation] = field(default_factory=dict)
    messages: list[dict] = field(default_factory=list)               # id, conversation_id, role, text, sent_at, type
    extractions: dict[int, dict] = field(default_factory=dict)       # conversation id -> row
    memories: dict[int, dict] = field(default_factory=dict)          # id -> contact_memories row
    erased: set[tuple[int, int]] = field(default_factory=set)        # (account, contact)
    erasure_ledger: dict[tuple[int, int], dict] = field(default_factory=dict)  # (account, contact) -> removed
    ledger: list = field(default_factory=list)                       # model calls
    processed: set[tuple[str, str]] = field(default_factory=set)     # (consumer, event id)
    owners: dict[tuple[str, int], int] = field(default_factory=dict)  # (contacts|inboxes, id) -> account
    channel_conversations: dict[str, int] = field(default_factory=dict)  # external id -> conversation id
    lead_states: dict[int, dict] = field(default_factory=dict)      # conversation id -> lead state
    transitions: dict[int, dict] = field(default_factory=dict)      # conversation id -> resolved_at, reopened_at
    silences: dict[int, dict] = field(default_factory=dict)         # conversation id -> silence tracked
    offers: dict[tuple[int, int, str, int], dict] = field(default_factory=dict)  # (account, contact, occasion, year)
    flag_changes: list[dict] = field(default_factory=list)          # account_id, flag, enabled, changed_by, token_id
    documents: dict[str, dict] = field(default_factory=dict)         # id -> account_id, source, title, deleted
    chunks: dict[str, dict] = field(default_factory=dict)            # id -> account_id, document_id, seq, ...
    privacy_requests: dict[tuple[int, str], dict] = field(default_factory=dict)  # (account, message id) -> row
    optouts: dict[tuple[int, int], dict] = field(default_factory=dict)   # (account, contact) -> message_id, text
    inbox_tools: dict[tuple[int, int], object] = field(default_factory=dict)  # (account, inbox) -> tools JSON
    tool_calls: dict[tuple[int, str], dict] = field(default_factory=dict)  # (account, message id) -> row
    inboxes: dict[tuple[int, int], dict] = field(default_factory=dict)   # (account, inbox id) -> row
    inbox_changes: list[dict] = field(default_factory=list)          # account_id, inbox_id, changed_by, changes
    console_sessions: dict[str, dict] = field(default_factory=dict)  # session hash -> account_id, token_id, ...
    contact_phones: dict[int, str] = field(default_factory=dict)     # contact id -> phone (the channel's wa_id)
    erased_phones: set[tuple[int, str]] = field(default_factory=set)  # (account, phone) in the erasure ledger
    sent_replies: dict[str, dict] = field(default_factory=dict)      # reply id -> account_id, channel, status, ...
    api_tokens: dict[int, dict] = field(default_factory=dict)        # token id -> account_id, name, hash, ...
    single_flight: dict[str, tuple[str, datetime]] = field(default_factory=dict)  # key -> (owner, expires_at)
    outbox: list[tuple[str, OutboxEvent]] = field(default_factory=list)
    next_id: int = 1

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id - 1


class FakeDatabase:
    """The committed state the fake units of work share (one per test)."""

    def __init__(self) -> None:
        self.state = FakeState()
        self.commits = 0

    # test set-up helpers (write committed state directly, announce nothing)
    def add_account(self, account_id: int, **settings) -> None:
        self.state.accounts[account_id] = dict(settings)

    def add_conversation(self, conv: Conversation, messages: list[tuple[str, str, datetime]]) -> None:
        self.state.conversations[conv.id] = conv
        for role, text, sent_at in messages:
            self.state.messages.append({"id": self.state.new_id(), "conversation_id": conv.id, "role": role,
                                        "text": text, "sent_at": sent_at, "message_type": "text"})

    def unit_of_work(self) -> "FakeUnitOfWork":
        return FakeUnitOfWork(self)

    @property
    def outbox(self) -> list[tuple[str, OutboxEvent]]:
        return self.state.outbox

    def live_memories(self, account_id: int, contact_id: int) -> list[dict]:
        return [m for m in self.state.memories.values() if m["account_id"] == account_id
                and m["contact_id"] == contact_id and m["deleted_at"] is None and m["superseded_at"] is None]


class FakeUnitOfWork(UnitOfWork):
    def __init__(self, db: FakeDatabase):
        super().__init__()
        self.db = db
        self.work: FakeState | None = None

    def _begin(self) -> None:
        self.work = copy.deepcopy(self.db.state)

    def _commit(self, events: list[tuple[str, OutboxEvent]]) -> None:
        self.work.outbox.extend(events)
        self.db.state = self.work
        self.db.commits += 1
        self.work = copy.deepcopy(self.db.state)  # the unit stays usable, as a connection does

    def _rollback(self) -> None:
        if self.work is not None:
            self.work = copy.deepcopy(self.db.state)

    def _end(self, failed: bool) -> None:
        self.work = None

    @property
    def learning(self) -> "FakeLearningRepository":
        return FakeLearningRepository(self)

    @property
    def knowledge(self) -> "FakeKnowledgeRepository":
        return FakeKnowledgeRepository(self)

    @property
    def conversations(self) -> "FakeConversationRepository":
        return FakeConversationRepository(self)

    @property
    def erasure(self) -> "FakeErasureRepository":
        return FakeErasureRepository(self)

    @property
    def offers(self) -> "FakeOfferRepository":
        return FakeOfferRepository(self)

    @property
    def accounts(self) -> "FakeAccountSettingsRepository":
        return FakeAccountSettingsRepository(self)

    @property
    def lifecycle(self) -> "FakeLifecycleRepository":
        return FakeLifecycleRepository(self)

    @property
    def acts(self) -> "FakeActsRepository":
        return FakeActsRepository(self)

    @property
    def inboxes(self) -> "FakeInboxRepository":
        return FakeInboxRepository(self)

    @property
    def console_sessions(self) -> "FakeConsoleSessionRepository":
        return FakeConsoleSessionRepository(self)

    @property
    def routes(self) -> "FakeRouteRepository":
        return FakeRouteRepository(self)

    @property
    def sent_replies(self) -> "FakeSentReplyRepository":
        return FakeSentReplyRepository(self)

    @property
    def tokens(self) -> "FakeTokenRepository":
        return FakeTokenRepository(self)

    @property
    def flights(self) -> "FakeFlightRepository":
        return FakeFlightRepository(self)

    @property
    def processed(self) -> "FakeProcessedEventsRepository":
        return FakeProcessedEventsRepository(self)


class FakeProcessedEventsRepository:
    """``streams.store.events.ProcessedEventsRepository`` in memory (``state.processed``; no clock: nothing
    is ever old enough to purge)."""

    def __init__(self, uow: FakeUnitOfWork):
        self.uow = uow

    def unprocessed(self, consumer, event_ids):
        return {e for e in event_ids if (consumer, e) not in self.uow.work.processed}

    def mark(self, consumer, event_ids):
        self.uow.work.processed.update((consumer, e) for e in event_ids)

    def purge(self, older_than_days):
        return 0


class FakeFlightRepository:
    """``streams.respond.tools.FlightRepository`` in memory (the wall clock, as Postgres's ``clock_timestamp``)."""

    def __init__(self, uow: FakeUnitOfWork):
        self.uow = uow

    def acquire(self, key, owner, ttl_ms):
        now, keys = datetime.now(timezone.utc), self.uow.work.single_flight
        held = keys.get(key)
        if held is not None and held[1] >= now:
            return False
        keys[key] = (owner, now + timedelta(milliseconds=ttl_ms))
        return True

    def release(self, key, owner):
        keys = self.uow.work.single_flight
        if key in keys and keys[key][0] == owner:
            del keys[key]


class FakeTokenRepository:
    """``streams.admin.tokens.TokenRepository`` in memory (rows of ``state.api_tokens``)."""

    def __init__(self, uow: FakeUnitOfWork):
        self.uow = uow

    def account_exists(self, account_id):
        return account_id in self.uow.work.accounts

    def insert(self, account_id, name, token_hash):
        tid = self.uow.work.new_id()
        self.uow.work.api_tokens[tid] = {"account_id": account_id, "name": name, "token_hash": token_hash,
                                         "revoked": False, "last_used_at": None}
        return tid

    def revoke(self, token_id):
        row = self.uow.work.api_tokens.get(token_id)
        if row is None or row["revoked"]:
            return False
        row["revoked"] = True
        return True

    def use(self, token_hash):
        for tid, row in self.uow.work.api_tokens.items():
            if row["token_hash"] == token_hash and not row["revoked"]:
                row["last_used_at"] = datetime.now(timezone.utc)
                return {"id": tid, "account_id": row["account_id"], "name": row["name"]}
        return None


class FakeRouteRepository:
    """``connectors.whatsapp.postgres_resolver.RouteRepository`` in memory (an inbox's business number is
    its row's ``channel_address``; a contact's phone is in ``contact_phones``)."""

    def __init__(self, uow: FakeUnitOfWork):
        self.uow = uow

    @property
    def s(self) -> FakeState:
        return self.uow.work

    def inbox(self, phone_number_id):
        for (account_id, inbox_id), row in sorted(self.s.inboxes.items()):
            if row.get("channel_address") == phone_number_id:
                return {"id": inbox_id, "account_id": account_id, "unit_id": row.get("unit_id")}
        return None

    def lock_customer(self, account_id, wa_id):
        pass  # one process, one unit at a time: nothing to serialise

    def contact_by_phone(self, account_id, wa_id):
        return min((cid for cid, phone in self.s.contact_phones.items()
                    if phone == wa_id and self.s.owners.get(("contacts", cid)) == account_id), default=None)

    def phone_erased(self, account_id, wa_id, *, key):
        return (account_id, wa_id) in self.s.erased_phones

    def create_contact(self, account_id, wa_id):
        cid = self.s.new_id()
        self.s.owners[("contacts", cid)] = account_id
        self.s.contact_phones[cid] = wa_id
        return cid

    def lock_contact(self, contact_id):
        pass

    def open_conversation(self, account_id, inbox_id, contact_id):
        channel = {cid: ext for ext, cid in self.s.channel_conversations.items()}
        open_ = [c.id for c in self.s.conversations.values() if c.status == "open" and c.id in channel
                 and (c.account_id, c.inbox_id, c.contact_id) == (account_id, inbox_id, contact_id)]
        return channel[max(open_)] if open_ else None

    def create_conversation(self, external_id, account_id, inbox_id, contact_id, unit_id):
        cid = self.s.new_id()
        self.s.channel_conversations[external_id] = cid
        self.s.conversations[cid] = Conversation(id=cid, account_id=account_id, contact_id=contact_id,
                                                 inbox_id=inbox_id, unit_id=unit_id, status="open",
                                                 last_message_at=None)

    def destination(self, account_id, contact_id, conversation_id):
        conv = self.s.conversations.get(self.s.channel_conversations.get(conversation_id))
        if conv is None or (conv.account_id, conv.contact_id) != (account_id, contact_id):
            return None
        inbox = self.s.inboxes.get((account_id, conv.inbox_id), {})
        return {"phone": self.s.contact_phones.get(contact_id), "channel_address": inbox.get("channel_address")}


class FakeSentReplyRepository:
    """``connectors.whatsapp.delivery.SentReplyRepository`` in memory (rows of ``state.sent_replies``)."""

    def __init__(self, uow: FakeUnitOfWork):
        self.uow = uow

    def insert_claim(self, reply_id, account_id, channel):
        rows = self.uow.work.sent_replies
        if reply_id in rows:
            return False
        rows[reply_id] = {"account_id": account_id, "channel": channel, "status": "sending", "attempts": 1,
                          "channel_message_id": None, "last_error": None, "sent": False}
        return True

    def locked_status(self, reply_id):
        return self.uow.work.sent_replies[reply_id]["status"]

    def reclaim(self, reply_id):
        row = self.uow.work.sent_replies[reply_id]
        row.update(status="sending", attempts=row["attempts"] + 1)

    def finish(self, reply_id, status, *, channel_message_id, error):
        row = self.uow.work.sent_replies.get(reply_id)
        if row is None:  # an UPDATE of no row changes nothing
            return
        row.update(status=status, channel_message_id=channel_message_id or row["channel_message_id"],
                   last_error=(error or None) and error[:2000], sent=row["sent"] or status == "sent")


class FakeInboxRepository:
    """``streams.admin.inboxes.InboxRepository`` in memory (rows of ``state.inboxes``)."""

    def __init__(self, uow: FakeUnitOfWork):
        self.uow = uow

    def locked(self, account_id, inbox_id, fields):
        row = self.uow.work.inboxes.get((account_id, inbox_id))
        return None if row is None else {k: copy.deepcopy(row.get(k)) for k in fields}

    def update(self, account_id, inbox_id, changes):
        from streams.admin.inboxes import COLUMNS

        row = self.uow.work.inboxes[(account_id, inbox_id)]
        row.update(copy.deepcopy(changes))
        return {k: copy.deepcopy(row.get(k)) for k in ("id", *COLUMNS)}

    def record_change(self, account_id, inbox_id, operator, diff):
        self.uow.work.inbox_changes.append({"account_id": account_id, "inbox_id": inbox_id,
                                            "changed_by": operator.label, "token_id": operator.token_id,
                                            "changes": copy.deepcopy(diff)})


    def set_tools(self, account_id, inbox_id, tools):
        if (account_id, inbox_id) not in self.uow.work.inboxes:
            return None
        self.uow.work.inbox_tools[(account_id, inbox_id)] = copy.deepcopy(tools)  # what uow.acts reads
        return copy.deepcopy(tools)


class FakeConsoleSessionRepository:
    """``streams.admin.console.sessions.ConsoleSessionRepository`` in memory."""

    def __init__(self, uow: FakeUnitOfWork):
        self.uow = uow

    def create(self, session_hash, op, csrf, expires_at):
        now = datetime.now(timezone.utc)
        sessions = self.uow.work.console_sessions
        for h in [h for h, row in sessions.items() if row["expires_at"] < now]:
            del sessions[h]
        sessions[session_hash] = {"account_id": op.account_id, "token_id": op.token_id, "csrf_token": csrf,
                                  "expires_at": expires_at}

    def delete(self, session_hash):
        self.uow.work.console_sessions.pop(session_hash, None)


class FakeActsRepository:
    """``streams.respond.acts_store.ActsRepository`` in memory."""

    def __init__(self, uow: FakeUnitOfWork):
        self.uow = uow

    @property
    def s(self) -> FakeState:
        return self.uow.work

    def live_fact_contents(self, account_id, contact_id):
        from streams.respond.adapters import REDUCE_WEIGHT_TYPES

        now = datetime.now(timezone.utc)
        latest: dict[str, datetime] = {}
        for m in self.s.memories.values():
            if (m["account_id"], m["contact_id"]) == (account_id, contact_id) and m["deleted_at"] is None \
                    and m["superseded_at"] is None and (m["expires_at"] is None or m["expires_at"] >= now
                                                        or m["memory_type"] in REDUCE_WEIGHT_TYPES):
                latest[m["content"]] = max(latest.get(m["content"], m["last_verified_at"]), m["last_verified_at"])
        return sorted(latest, key=latest.__getitem__, reverse=True)

    def request_facts(self, account_id, message_id):
        row = self.s.privacy_requests.get((account_id, message_id))
        return None if row is None else row["facts"]

    def record_request(self, msg, kind, facts):
        self.s.privacy_requests.setdefault((msg.account_id, msg.message_id), {
            "contact_id": msg.contact_id, "conversation_id": msg.conversation_id, "kind": kind, "text": msg.text,
            "facts": facts})

    def discard_unlearnt(self, account_id, contact_id, reason):
        for conv in self.s.conversations.values():
            if (conv.account_id, conv.contact_id) != (account_id, contact_id):
                continue
            row = self.s.extractions.setdefault(conv.id, {"status": None, "attempts": 0, "through_message_id": None,
                                                          "extractor": None, "next_attempt_at": None,
                                                          "account_id": account_id, "contact_id": contact_id})
            if row["status"] not in ("done", "discarded"):
                row.update(status="discarded", last_error=reason, updated_at=datetime.now(timezone.utc))

    def record_opt_out(self, msg):
        self.s.optouts.setdefault((msg.account_id, msg.contact_id), {"message_id": msg.message_id, "text": msg.text})

    def inbox_tools(self, account_id, inbox_id):
        return self.s.inbox_tools.get((account_id, inbox_id))

    def tool_call(self, account_id, message_id):
        row = self.s.tool_calls.get((account_id, message_id))
        return None if row is None else {"outcome": row["outcome"], "result": row["result"]}

    def record_tool_call(self, msg, tool, key, arguments, outcome, result):
        row = self.s.tool_calls.setdefault((msg.account_id, msg.message_id), {
            "contact_id": msg.contact_id, "conversation_id": msg.conversation_id, "tool": tool, "flight_key": key,
            "arguments": dict(arguments)})
        row.update(outcome=outcome, result=None if result is None else dict(result),
                   finished=outcome != "running")

    def save_agent_message(self, reply):
        cid = self.s.channel_conversations.get(reply.conversation_id)
        conv = self.s.conversations.get(cid)
        if conv is None or conv.account_id != reply.account_id \
                or any(m.get("channel_message_id") == reply.reply_id for m in self.s.messages):
            return
        self.s.messages.append({"id": self.s.new_id(), "conversation_id": cid, "role": "agent", "text": reply.text,
                                "sent_at": reply.created_at, "message_type": "text",
                                "channel_message_id": reply.reply_id, "reply": reply.model_dump(mode="json")})

    def is_published(self, reply_id):
        return any(m.get("channel_message_id") == reply_id and m.get("published_at") is not None
                   for m in self.s.messages)


class FakeLifecycleRepository:
    """``streams.learn.lifecycle.LifecycleRepository`` in memory (a conversation's channel id is the
    key of ``channel_conversations``; its last change is in ``transitions``)."""

    def __init__(self, uow: FakeUnitOfWork):
        self.uow = uow

    def locked_conversation(self, account_id, *, conversation_id=None, external_id=None):
        s = self.uow.work
        channel = {cid: ext for ext, cid in s.channel_conversations.items()}
        cid = conversation_id if conversation_id is not None else s.channel_conversations.get(external_id)
        conv = s.conversations.get(cid)
        if conv is None or conv.account_id != account_id:
            return None
        times = [t for t in (s.transitions.get(cid, {}).get(k) for k in ("resolved_at", "reopened_at")) if t]
        return {"id": cid, "external_id": channel.get(cid), "contact_id": conv.contact_id, "status": conv.status,
                "last_change": max(times, default=None)}

    def status(self, conversation_id):
        return self.uow.work.conversations[conversation_id].status


class FakeAccountSettingsRepository:
    """``streams.admin.flags.AccountSettingsRepository`` in memory."""

    def __init__(self, uow: FakeUnitOfWork):
        self.uow = uow

    def change_settings(self, account_id, values, *, flag, enabled, operator):
        s = self.uow.work
        if account_id in s.accounts:  # an UPDATE of an unknown account changes nothing
            s.accounts[account_id].update(values)
        s.flag_changes.append({"account_id": account_id, "flag": flag, "enabled": bool(enabled),
                               "changed_by": operator.label, "token_id": operator.token_id})


class FakeOfferRepository:
    """``streams.maintain.offers.OfferRepository`` in memory (unique per account × contact × occasion × year)."""

    def __init__(self, uow: FakeUnitOfWork):
        self.uow = uow

    def record(self, proposals):
        offers, n = self.uow.work.offers, 0
        for p in proposals:
            key = (p.account_id, p.contact_id, p.occasion, p.year)
            if key not in offers:
                offers[key] = {"reply_id": p.reply_id, "occasion_date": p.occasion_date, "memory_id": p.memory_id,
                               "conversation_id": p.conversation_id, "text": p.text, "template": p.template,
                               "chunk_ids": list(p.chunk_ids), "published": False}
                n += 1
        return n

    def mark_published(self, reply_ids):
        for row in self.uow.work.offers.values():
            if row["reply_id"] in reply_ids:
                row["published"] = True


class FakeErasureRepository:
    """``streams.maintain.erasure.ErasureRepository`` in memory (the ledger keyed by the ids, not a hash)."""

    def __init__(self, uow: FakeUnitOfWork):
        self.uow = uow

    @property
    def s(self) -> FakeState:
        return self.uow.work

    def erase_contact(self, account_id, contact_id, *, key):
        from streams.maintain.erasure import ACT_TABLES

        s, who = self.s, (account_id, contact_id)
        conv_ids = {cid for cid, c in s.conversations.items() if (c.account_id, c.contact_id) == who}
        mine = [m for m in s.memories.values() if (m["account_id"], m["contact_id"]) == who]
        counts = {"messages": sum(m["conversation_id"] in conv_ids for m in s.messages),
                  "conversation_extractions": sum(cid in conv_ids or (r.get("account_id"), r.get("contact_id")) == who
                                                  for cid, r in s.extractions.items()),
                  "conversation_silences": sum(cid in conv_ids or (r["account_id"], r["contact_id"]) == who
                                               for cid, r in s.silences.items()),
                  "conversations": len(conv_ids), "contact_memories": len(mine),
                  "outbox": sum(_of(e, who) for _, e in s.outbox), **{t: 0 for t in ACT_TABLES},
                  "offers": sum(k[:2] == who for k in s.offers),
                  "contacts": int(("contacts", contact_id) in s.owners),
                  "pgvector_embeddings": sum(m["embedding"] is not None for m in mine)}
        s.messages = [m for m in s.messages if m["conversation_id"] not in conv_ids]
        s.extractions = {cid: r for cid, r in s.extractions.items()
                         if cid not in conv_ids and (r.get("account_id"), r.get("contact_id")) != who}
        s.silences = {cid: r for cid, r in s.silences.items()
                      if cid not in conv_ids and (r["account_id"], r["contact_id"]) != who}
        for cid in conv_ids:
            del s.conversations[cid]
            s.lead_states.pop(cid, None)
            s.transitions.pop(cid, None)
        s.channel_conversations = {k: v for k, v in s.channel_conversations.items() if v not in conv_ids}
        for m in mine:
            del s.memories[m["id"]]
        s.outbox = [(t, e) for t, e in s.outbox if not _of(e, who)]
        s.offers = {k: v for k, v in s.offers.items() if k[:2] != who}
        s.owners.pop(("contacts", contact_id), None)
        phone = s.contact_phones.pop(contact_id, None)
        if phone:  # the channel identity is in the ledger too (a late webhook never re-creates it)
            s.erased_phones.add((account_id, phone))
        s.erased.add(who)
        s.erasure_ledger.setdefault(who, counts)  # a second erasure keeps the first one's record
        return counts

    def ledger_entry(self, account_id, contact_id, *, key):
        removed = self.s.erasure_ledger.get((account_id, contact_id))
        return None if removed is None else {"identity_hash": f"contact:{account_id}:{contact_id}",
                                             "removed": dict(removed)}


def _of(event: OutboxEvent, who: tuple[int, int]) -> bool:
    """An outbox event of the contact (conversation, memory and contact events carry its ids)."""
    return (getattr(event, "account_id", None), getattr(event, "contact_id", None)) == who


class FakeConversationRepository:
    """``streams.respond.store.ConversationRepository`` in memory."""

    def __init__(self, uow: FakeUnitOfWork):
        self.uow = uow

    @property
    def s(self) -> FakeState:
        return self.uow.work

    def erased(self, msg, erasure_key):
        return (msg.account_id, msg.contact_id) in self.s.erased

    def _has_message(self, channel_message_id: str) -> bool:
        return any(m.get("channel_message_id") == channel_message_id for m in self.s.messages)

    def store_inbound(self, msg, reply_id):
        from streams.respond.store import TenantMismatch

        self.s.accounts.setdefault(msg.account_id, {})
        for table, row_id in (("contacts", msg.contact_id), ("inboxes", msg.inbox_id)):
            if self.s.owners.setdefault((table, row_id), msg.account_id) != msg.account_id:
                raise TenantMismatch(f"{table[:-1]} {row_id} belongs to another account")
        cid = self.s.channel_conversations.get(msg.conversation_id)
        if cid is None:
            cid = self.s.new_id()
            self.s.channel_conversations[msg.conversation_id] = cid
            self.s.conversations[cid] = Conversation(id=cid, account_id=msg.account_id, contact_id=msg.contact_id,
                                                     inbox_id=msg.inbox_id, unit_id=msg.unit_id, status="open",
                                                     last_message_at=msg.sent_at)
        conv = self.s.conversations[cid]
        if conv.account_id != msg.account_id or conv.contact_id != msg.contact_id:
            raise TenantMismatch(f"conversation {msg.conversation_id} belongs to another account/contact")
        if not self._has_message(msg.message_id):
            self.s.messages.append({"id": self.s.new_id(), "conversation_id": cid, "role": "contact",
                                    "text": msg.text, "sent_at": msg.sent_at, "message_type": msg.message_type,
                                    "channel_message_id": msg.message_id})
            return True
        return not self._has_message(reply_id)

    def save_reply(self, reply, stored, lead_state, calls):
        cid = self.s.channel_conversations[reply.conversation_id]
        new = not self._has_message(reply.reply_id)
        if new:
            self.s.messages.append({"id": self.s.new_id(), "conversation_id": cid, "role": "agent",
                                    "text": reply.text, "sent_at": reply.created_at, "message_type": "text",
                                    "channel_message_id": reply.reply_id, "reply": stored})
        for call in calls:  # the ledger is unique per (account, stage, model, ref), as in Postgres
            if call is not None and call not in self.s.ledger:
                self.s.ledger.append(call)
        self.s.lead_states[cid] = dict(lead_state or {})
        return new

    def mark_published(self, reply_ids):
        for m in self.s.messages:
            if m.get("channel_message_id") in reply_ids and m.get("published_at") is None:
                m["published_at"] = datetime.now(timezone.utc)


class FakeKnowledgeRepository:
    """``streams.ingest.store.KnowledgeRepository`` in memory."""

    def __init__(self, uow: FakeUnitOfWork):
        self.uow = uow

    @property
    def s(self) -> FakeState:
        return self.uow.work

    def ensure_account(self, account_id, name=""):
        self.s.accounts.setdefault(account_id, {})

    def upsert_document(self, account_id, source, title):
        for doc_id, d in self.s.documents.items():
            if d["account_id"] == account_id and d["source"] == source:
                d.update(title=title, deleted=False)
                return doc_id
        doc_id = str(uuid7())
        self.s.documents[doc_id] = {"account_id": account_id, "source": source, "title": title, "deleted": False}
        return doc_id

    def find_document(self, account_id, *, document_id=None, key=None):
        for doc_id, d in self.s.documents.items():
            if d["account_id"] == account_id and (doc_id == document_id or (key is not None and d["source"] == key)):
                return doc_id
        return None

    def adopt_legacy_source(self, account_id, key, legacy_source):
        if key == legacy_source or self.find_document(account_id, key=key):
            return False
        doc_id = self.find_document(account_id, key=legacy_source)
        if doc_id is None:
            return False
        self.s.documents[doc_id]["source"] = key
        return True

    def live_chunks(self, document_id):
        return [{"id": cid, "seq": c["seq"], "content_hash": c["content_hash"]} for cid, c in self.s.chunks.items()
                if c["document_id"] == document_id and not c["deleted"]]

    def tombstone_chunks(self, chunk_ids):
        for cid in chunk_ids:
            self.s.chunks[cid]["deleted"] = True

    def tombstone_document(self, document_id):
        gone = [c["id"] for c in self.live_chunks(document_id)]
        self.tombstone_chunks(gone)
        self.s.documents[document_id]["deleted"] = True
        return gone

    def move_chunks(self, moves):
        for cid, seq in moves:
            self.s.chunks[cid]["seq"] = seq

    def record_calls(self, calls):
        calls = [c for c in calls if c is not None]
        for call in calls:  # a ref is unique per account and stage, as in Postgres
            if call.ref is None or not any((c.account_id, c.stage, c.ref) == (call.account_id, call.stage, call.ref)
                                           for c in self.s.ledger):
                self.s.ledger.append(call)
        return len(calls)

    def insert_chunks(self, rows):
        for cid, account_id, doc_id, seq, content, content_hash in rows:
            self.s.chunks[cid] = {"account_id": account_id, "document_id": doc_id, "seq": seq, "content": content,
                                  "content_hash": content_hash, "deleted": False}


def _stored(m: dict) -> StoredFact:
    return StoredFact(id=m["id"], memory_type=m["memory_type"], memory_key=m["memory_key"], content=m["content"],
                      normalized_value=m["normalized_value"] or "", confidence=float(m["confidence"]),
                      embedding=m["embedding"], last_verified_at=m["last_verified_at"],
                      source_conversation_id=m["source_conversation_id"],
                      supporting_conversation_ids=list(m["supporting_conversation_ids"]),
                      observed_at=m["observed_at"])


class FakeLearningRepository:
    """``streams.learn.store.LearningRepository`` in memory (same semantics as the SQL)."""

    def __init__(self, uow: FakeUnitOfWork):
        self.uow = uow

    @property
    def s(self) -> FakeState:
        return self.uow.work  # after a commit the unit works on a fresh copy

    def conversation(self, conversation_id):
        return self.s.conversations.get(conversation_id)

    def extraction_state(self, conversation_id, *, for_update=False):
        row = self.s.extractions.get(conversation_id)
        return None if row is None else {k: row[k] for k in ("status", "attempts", "through_message_id")}

    def extraction_enabled(self, account_id):
        return self.s.accounts.get(account_id, {}).get("memory_extraction_enabled") is True

    def record_extraction(self, conv, status, *, now, facts=0, error=None, extractor=None, next_attempt_at=None,
                          count_attempt=True, through_message_id=None):
        row = self.s.extractions.setdefault(conv.id, {"attempts": 0, "through_message_id": None, "extractor": None})
        row.update(status=status, facts_extracted=facts, last_error=(error or None) and error[:2000],
                   next_attempt_at=next_attempt_at, updated_at=now, account_id=conv.account_id,
                   contact_id=conv.contact_id)
        row["attempts"] += 1 if count_attempt else 0
        row["extractor"] = extractor or row["extractor"]
        row["through_message_id"] = through_message_id or row["through_message_id"]
        return row["attempts"]

    def due_retries(self, now, limit=20):
        due = sorted((r["next_attempt_at"], cid) for cid, r in self.s.extractions.items()
                     if r["status"] == "failed" and r["next_attempt_at"] is not None and r["next_attempt_at"] <= now)
        return [cid for _, cid in due[:limit]]

    def last_message_id(self, conversation_id):
        ids = [m["id"] for m in self.s.messages if m["conversation_id"] == conversation_id]
        return max(ids) if ids else None

    def transcript(self, conv, *, after_message_id=None, through_message_id=None):
        top = through_message_id if through_message_id is not None else 2**63 - 1
        rows = sorted((m for m in self.s.messages if m["conversation_id"] == conv.id
                       and (after_message_id or 0) < m["id"] <= top and m["message_type"] != "reaction"),
                      key=lambda m: (m["sent_at"], m["id"]))
        return Transcript(conversation_id=conv.id, account_id=conv.account_id, contact_id=conv.contact_id,
                          unit_id=conv.unit_id, inbox_id=conv.inbox_id,
                          messages=[Message(role=m["role"], text=m["text"], sent_at=m["sent_at"]) for m in rows])

    def lock_contact(self, account_id, contact_id):
        pass  # one process, one unit at a time: nothing to serialise

    def erased_or_gone(self, conv, erasure_key=None):
        return (conv.account_id, conv.contact_id) in self.s.erased or conv.id not in self.s.conversations

    def live_facts(self, account_id, contact_id):
        rows = [m for m in self.s.memories.values() if m["account_id"] == account_id
                and m["contact_id"] == contact_id and m["deleted_at"] is None and m["superseded_at"] is None]
        return [_stored(m) for m in sorted(rows, key=lambda m: (m["last_verified_at"], m["id"]), reverse=True)]

    def facts_learnt_from(self, account_id, contact_id, conversation_id):
        return [_stored(m) for m in self.s.memories.values() if m["account_id"] == account_id
                and m["contact_id"] == contact_id and (m["source_conversation_id"] == conversation_id
                                                       or conversation_id in m["supporting_conversation_ids"])]

    def _emit(self, type_, memory_id, conv_or_ids):
        account_id, contact_id = conv_or_ids
        self.uow.add_event(*memory_event(type_, memory_id, account_id, contact_id))

    def apply_plan(self, plan: Plan, conv, *, now, metadata, embedding_model, observed_at=None) -> Applied:
        out, who = Applied(), (conv.account_id, conv.contact_id)
        for r in plan.reinforce:
            m = self.s.memories[r.memory_id]
            m.update(last_verified_at=now, confidence=max(m["confidence"], r.confidence), expires_at=r.expires_at,
                     weight=1.0, updated_at=now)
            m["supporting_conversation_ids"].append(conv.id)
            if m["embedding"] is None and r.fill_embedding is not None:
                m.update(embedding=r.fill_embedding, embedding_model=embedding_model)
            out.reinforced.append(r.memory_id)
            self._emit("memory.reinforced", r.memory_id, who)
        for ins in plan.inserts:
            f, mid = ins.fact, self.s.new_id()
            self.s.memories[mid] = dict(
                id=mid, account_id=conv.account_id, contact_id=conv.contact_id, memory_type=f.memory_type,
                memory_key=f.memory_key, content=f.content, normalized_value=f.normalized_value or "",
                evidence=f.evidence, confidence=f.confidence, scope=ins.scope, embedding=ins.embedding,
                embedding_model=embedding_model if ins.embedding is not None else None,
                source_conversation_id=conv.id, supporting_conversation_ids=[conv.id], expires_at=ins.expires_at,
                last_verified_at=now, metadata=dict(metadata), created_at=now, updated_at=now,
                observed_at=observed_at or now, superseded_at=now if ins.superseded_by else None,
                superseded_by_id=ins.superseded_by, deleted_at=None, weight=1.0)
            out.created.append(mid)
            self._emit("memory.created", mid, who)
            if ins.superseded_by:
                out.superseded.append((mid, ins.superseded_by, f.memory_type, "stated before the live fact"))
                self._emit("memory.superseded", mid, who)
        for s in plan.supersede:
            new_id, old = out.created[s.new_index], self.s.memories.get(s.old_id)
            if old is not None and old["superseded_at"] is None:
                old.update(superseded_at=now, superseded_by_id=new_id, updated_at=now)
                out.superseded.append((s.old_id, new_id, s.memory_type, s.reason))
                self._emit("memory.superseded", s.old_id, who)
        return out

    def soft_delete(self, ids, account_id, contact_id, *, now, reason, actor="system", drop_embedding=False):
        done = []
        for i in ids:
            m = self.s.memories.get(i)
            if m is None or m["account_id"] != account_id or m["contact_id"] != contact_id or m["deleted_at"]:
                continue
            m.update(deleted_at=now, updated_at=now)
            m["metadata"] = {**m["metadata"], "deleted": {"by": actor, "at": now.isoformat(), "reason": reason}}
            if drop_embedding:
                m.update(embedding=None, embedding_model=None)
            done.append(i)
            self._emit("memory.deleted", i, (account_id, contact_id))
        return done

    def enforce_cap(self, account_id, contact_id, *, now, cap=MAX_LIVE_FACTS, dry_run=False):
        live = [(f.id, f.last_verified_at) for f in self.live_facts(account_id, contact_id)]
        victims = over_cap(live, cap)
        if dry_run:
            return victims
        return self.soft_delete(victims, account_id, contact_id, now=now, reason="cap")

    def record_calls(self, calls):
        calls = [c for c in calls if c is not None]
        self.s.ledger.extend(calls)
        return len(calls)

    def unembedded(self, model, limit):
        rows = [m for m in sorted(self.s.memories.values(), key=lambda m: m["id"]) if m["deleted_at"] is None
                and m["superseded_at"] is None and (m["embedding"] is None or m["embedding_model"] != model)]
        return [{"id": m["id"], "content": m["content"]} for m in rows[:limit]]

    def set_embedding(self, memory_id, content, vector, model):
        m = self.s.memories.get(memory_id)
        if m is None or m["content"] != content or m["deleted_at"] is not None:
            return False
        m.update(embedding=vector, embedding_model=model)
        return True

    def contact_of_memory(self, account_id, memory_id):
        m = self.s.memories.get(memory_id)
        return m["contact_id"] if m and m["account_id"] == account_id and m["deleted_at"] is None else None

    def memory_ids(self, account_id, contact_id):
        return [m["id"] for m in self.s.memories.values() if m["account_id"] == account_id
                and m["contact_id"] == contact_id and m["deleted_at"] is None]

    def expired(self, now):
        return [{k: m[k] for k in ("id", "account_id", "contact_id", "memory_type", "weight", "superseded_at")}
                for m in sorted(self.s.memories.values(), key=lambda m: m["id"])
                if m["deleted_at"] is None and m["expires_at"] is not None and m["expires_at"] <= now]

    def age(self, delete_ids, reduce_ids, *, now, weight):
        for i in delete_ids:
            m = self.s.memories[i]
            m.update(deleted_at=now, updated_at=now)
            m["metadata"] = {**m["metadata"], "deleted": {"by": "aging", "at": now.isoformat(), "reason": "ttl"}}
        for i in reduce_ids:
            self.s.memories[i].update(weight=min(self.s.memories[i]["weight"], weight), updated_at=now)

    def crowded(self, cap):
        count: dict[tuple[int, int], int] = {}
        for m in self.s.memories.values():
            if m["deleted_at"] is None and m["superseded_at"] is None:
                key = (m["account_id"], m["contact_id"])
                count[key] = count.get(key, 0) + 1
        return [k for k, n in count.items() if n > cap]

    # -- restore ---------------------------------------------------------------
    def memory_content(self, account_id, memory_id):
        m = self.s.memories.get(memory_id)
        return m["content"] if m is not None and m["account_id"] == account_id else None

    def locked_memory(self, account_id, memory_id):
        m = self.s.memories.get(memory_id)
        return dict(m) if m is not None and m["account_id"] == account_id else None

    def restore(self, memory_id, *, vector, embedding_model, now, superseded_by, audit):
        m = self.s.memories[memory_id]
        m.update(deleted_at=None, embedding=vector, embedding_model=embedding_model, updated_at=now,
                 metadata={**m["metadata"], **audit})
        if superseded_by is not None:
            m.update(superseded_at=now, superseded_by_id=superseded_by)

    def edit_content(self, memory_id, content, *, vector, embedding_model, now, edits):
        m = self.s.memories[memory_id]
        m.update(content=content, embedding=vector, embedding_model=embedding_model, updated_at=now,
                 metadata={**m["metadata"], "edits": list(edits)})

    def supersede(self, ids, by_id, *, now):
        for i in ids:
            m = self.s.memories.get(i)
            if m is not None and m["superseded_at"] is None:
                m.update(superseded_at=now, superseded_by_id=by_id, updated_at=now)

    # -- triggers (the same transitions as the SQL) ---------------------------
    def _move(self, conversation_id, from_status, to_status, **times):
        conv = self.s.conversations.get(conversation_id)
        if conv is None or conv.status != from_status:
            return None
        self.s.conversations[conversation_id] = dataclasses.replace(conv, status=to_status)
        self.s.transitions.setdefault(conversation_id, {}).update(times)
        return conv.account_id, conv.contact_id

    def resolve(self, conversation_id, *, now):
        who = self._move(conversation_id, "open", "resolved", resolved_at=now)
        if who is not None:
            self.s.lead_states[conversation_id] = {}
        return who

    def reopen(self, conversation_id, *, now):
        who = self._move(conversation_id, "resolved", "open", resolved_at=None, reopened_at=now)
        if who is not None:
            row = self.s.extractions.get(conversation_id)
            if row is not None and row["status"] in ("done", "discarded", "skipped"):
                row.update(status="reopened", next_attempt_at=None, updated_at=now)
            self.s.silences.pop(conversation_id, None)
        return who

    def mark_silent(self, *, now, cut, limit):
        due = sorted((c for c in self.s.conversations.values() if c.status == "open"
                      and c.last_message_at is not None and c.last_message_at < cut
                      and self.s.extractions.get(c.id, {}).get("status") not in ("done", "discarded")
                      and c.id not in self.s.silences), key=lambda c: c.last_message_at)[:limit]
        for c in due:
            self.s.silences[c.id] = {"account_id": c.account_id, "contact_id": c.contact_id,
                                     "last_message_at": c.last_message_at, "announced_at": now}
        return [{"conversation_id": c.id, "account_id": c.account_id, "contact_id": c.contact_id} for c in due]

    def hard_delete(self, before, *, dry_run):
        gone = [m for m in self.s.memories.values() if m["deleted_at"] is not None and m["deleted_at"] < before]
        counts: dict[int, int] = {}
        for m in gone:
            counts[m["account_id"]] = counts.get(m["account_id"], 0) + 1
            if not dry_run:
                del self.s.memories[m["id"]]
        return counts
