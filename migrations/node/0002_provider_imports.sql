-- brainctl-rs memory store, schema version 2: memories imported from
-- another memory system (`brainctl import mem0|json FILE`) keep which
-- provider they came from and their id there. Their origin_bundle_hash is
-- the export file's SHA-256 and origin_id the record's position in it.
ALTER TABLE memories ADD COLUMN origin_provider TEXT;
ALTER TABLE memories ADD COLUMN origin_source_id TEXT;
