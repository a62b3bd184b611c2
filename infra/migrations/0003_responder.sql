-- Responder bookkeeping (design §4C). The agent's reply is stored as an agent
-- message whose channel_message_id is the deterministic reply_id; its full
-- OutboundReply and the moment Kafka acknowledged it let a redelivered inbound
-- message re-emit a reply that was stored but never published (crash between
-- the commit and the send), and skip one that was.
ALTER TABLE messages ADD COLUMN IF NOT EXISTS reply jsonb;
ALTER TABLE messages ADD COLUMN IF NOT EXISTS published_at timestamptz;
