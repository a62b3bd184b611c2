-- When the customer stated a fact (the source conversation's last message), as
-- opposed to when the worker learnt it. Conversations of one contact can be
-- processed in any order (they are keyed by conversation), so contradictions
-- are settled by this time: an older statement never supersedes a newer one.
ALTER TABLE contact_memories ADD COLUMN IF NOT EXISTS observed_at timestamptz;
UPDATE contact_memories SET observed_at = created_at WHERE observed_at IS NULL;
ALTER TABLE contact_memories ALTER COLUMN observed_at SET DEFAULT now();
