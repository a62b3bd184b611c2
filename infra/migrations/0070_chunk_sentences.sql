-- The offline composer's sentence vectors of a chunk (issue 12): its quotable units
-- (streams/respond/compose.py answer_units) embedded as passages when the chunk is indexed,
-- so a reply embeds only the question. Derived data, written by the chunk indexer (like the
-- Qdrant point) for the chunk's content_hash; sentence_model names the embedder: a reply
-- under another model (a re-embed under way) computes its own. Rows indexed before this
-- migration have none until indexed again (memoria reindex); the composer then computes them.
ALTER TABLE chunks ADD COLUMN IF NOT EXISTS sentence_model   text;
ALTER TABLE chunks ADD COLUMN IF NOT EXISTS sentence_texts   text[];
ALTER TABLE chunks ADD COLUMN IF NOT EXISTS sentence_vectors bytea;   -- float32, len(sentence_texts) rows
