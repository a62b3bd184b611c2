-- Conversation lifecycle, exactly-once delivery, message types, stable document keys (issue 9).

-- A conversation can be reopened and resolved again: its extraction row then
-- goes to 'reopened', and the next learning reads only the messages after
-- through_message_id (the last message the previous learning covered).
ALTER TABLE conversations ADD COLUMN IF NOT EXISTS reopened_at timestamptz;
ALTER TABLE conversation_extractions ADD COLUMN IF NOT EXISTS through_message_id bigint;
ALTER TABLE conversation_extractions DROP CONSTRAINT conversation_extractions_status_check;
ALTER TABLE conversation_extractions ADD CONSTRAINT conversation_extractions_status_check
    CHECK (status IN ('done', 'failed', 'skipped', 'discarded', 'reopened'));

-- The channel's message type (text, image, audio, location, reaction...);
-- messages.text holds its text form.
ALTER TABLE messages ADD COLUMN IF NOT EXISTS message_type text NOT NULL DEFAULT 'text';

-- The sent ledger: a reply reaches the channel at most once per reply_id.
-- 'sending' is written before the channel API call and 'sent' after it; a
-- 'sending' row found by a later delivery means the call's outcome is unknown
-- (the process died during it): it becomes 'unknown' and is not sent again.
-- 'retrying': the API said it did not take the message (429, 5xx, no connection).
CREATE TABLE sent_replies (
    reply_id            text PRIMARY KEY,
    account_id          bigint NOT NULL,
    channel             text NOT NULL,
    status              text NOT NULL CHECK (status IN ('sending', 'sent', 'retrying', 'rejected', 'unknown')),
    attempts            integer NOT NULL DEFAULT 0,
    channel_message_id  text,
    last_error          text,
    claimed_at          timestamptz NOT NULL DEFAULT now(),
    sent_at             timestamptz
);
CREATE INDEX sent_replies_account ON sent_replies (account_id, claimed_at);
