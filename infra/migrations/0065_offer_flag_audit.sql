-- The anniversary-offers flag (issue 11) gets the same audit trail as the two
-- memory flags (issue 10): who turned outbound offers on or off, and when.
ALTER TABLE account_flag_changes DROP CONSTRAINT IF EXISTS account_flag_changes_flag_check;
ALTER TABLE account_flag_changes ADD CONSTRAINT account_flag_changes_flag_check
    CHECK (flag IN ('memory_extraction_enabled', 'memory_recall_enabled', 'anniversary_offers_enabled'));
