-- Channel routing: an inbox is reached at a channel address (WhatsApp Cloud API
-- phone_number_id) and may belong to a unit; customers are found by phone.
ALTER TABLE inboxes ADD COLUMN IF NOT EXISTS channel_address text UNIQUE;
ALTER TABLE inboxes ADD COLUMN IF NOT EXISTS unit_id bigint;
-- not unique: contacts imported from other systems may share a phone; the
-- channel resolver picks the oldest and serialises creation with an advisory lock
CREATE INDEX IF NOT EXISTS contacts_account_phone ON contacts (account_id, phone) WHERE phone IS NOT NULL;
-- ids for contacts first seen on a channel (ids given by other systems stay below)
CREATE SEQUENCE IF NOT EXISTS channel_contact_ids START 1000000000;
