-- rag_distance_threshold NULL means "the cut-off calibrated for the chunk
-- collection's embedding model" (streams/ingest/knowledge.py). Distances are
-- not comparable across models (measured on the pt-BR fixtures: answers sit at
-- 0.09-0.19 with e5, 0.23-0.75 with MiniLM, 0.58-0.99 with USE), so a fixed
-- 0.35 silently rejects almost every answer with the offline models.
ALTER TABLE inboxes ALTER COLUMN rag_distance_threshold DROP NOT NULL;
ALTER TABLE inboxes ALTER COLUMN rag_distance_threshold SET DEFAULT NULL;
