-- Memory learning (issue 3): trigger and retry bookkeeping.

-- A model answer that was unusable (empty, truncated, not JSON) "discards the
-- conversation with a warning": it is final, unlike 'failed' (retried later).
ALTER TABLE conversation_extractions DROP CONSTRAINT conversation_extractions_status_check;
ALTER TABLE conversation_extractions ADD CONSTRAINT conversation_extractions_status_check
    CHECK (status IN ('done', 'failed', 'skipped', 'discarded'));
-- contact_id: erasure must find the bookkeeping of a contact after its
-- conversations are gone; next_attempt_at: when a failed extraction is retried.
ALTER TABLE conversation_extractions ADD COLUMN contact_id bigint;
ALTER TABLE conversation_extractions ADD COLUMN next_attempt_at timestamptz;
CREATE INDEX conversation_extractions_retry ON conversation_extractions (next_attempt_at)
    WHERE status = 'failed';
CREATE INDEX conversation_extractions_contact ON conversation_extractions (account_id, contact_id);

-- The silence detector announces a conversation once (design §4B, §4D).
CREATE TABLE conversation_silences (
    conversation_id  bigint PRIMARY KEY,
    account_id       bigint NOT NULL,
    contact_id       bigint NOT NULL,
    last_message_at  timestamptz,
    announced_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX conversation_silences_contact ON conversation_silences (account_id, contact_id);

-- Facts waiting for an embedding (final failure, or a new memory model).
CREATE INDEX contact_memories_unembedded ON contact_memories (id)
    WHERE embedding IS NULL AND deleted_at IS NULL;
-- Aging scans live facts by expiry.
CREATE INDEX contact_memories_expiry ON contact_memories (expires_at)
    WHERE deleted_at IS NULL AND expires_at IS NOT NULL;
