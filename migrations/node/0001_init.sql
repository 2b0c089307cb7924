-- brainctl-rs memory store, schema version 1.
-- The 13 bundle columns keep the reference's names and meanings
-- (PROTOCOL.md §2); columns after `retired_at` are ours.
CREATE TABLE agents (
    id           TEXT PRIMARY KEY,
    created_at   TEXT NOT NULL
);

CREATE TABLE memories (
    id                  INTEGER PRIMARY KEY,
    agent_id            TEXT,
    category            TEXT,
    scope               TEXT,
    content             TEXT NOT NULL,
    confidence          REAL,
    tags                TEXT,          -- a JSON array inside a string, as the reference
    created_at          TEXT,
    updated_at          TEXT,
    source_event_id     INTEGER,
    supersedes_id       INTEGER,
    trust_score         REAL,
    memory_type         TEXT,
    retired_at          TEXT,
    -- provenance of imported rows
    origin_signer       TEXT,
    origin_bundle_hash  TEXT,
    origin_id           INTEGER,
    suspicious          TEXT           -- JSON array of injection findings, NULL if clean
);
CREATE INDEX memories_scope ON memories(scope);
CREATE INDEX memories_agent ON memories(agent_id);
CREATE INDEX memories_category ON memories(category);
CREATE UNIQUE INDEX memories_origin ON memories(origin_bundle_hash, origin_id)
    WHERE origin_bundle_hash IS NOT NULL;

CREATE TABLE imports (
    bundle_hash     TEXT PRIMARY KEY,
    signer          TEXT NOT NULL,
    scope           TEXT NOT NULL,
    memories_count  INTEGER NOT NULL,
    imported_at     TEXT NOT NULL,
    source          TEXT
);

CREATE VIRTUAL TABLE memories_fts USING fts5(
    content, tags, content='memories', content_rowid='id', tokenize='unicode61'
);
CREATE TRIGGER memories_fts_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, content, tags) VALUES (new.id, new.content, new.tags);
END;
CREATE TRIGGER memories_fts_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, content, tags) VALUES ('delete', old.id, old.content, old.tags);
END;
CREATE TRIGGER memories_fts_au AFTER UPDATE OF content, tags ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, content, tags) VALUES ('delete', old.id, old.content, old.tags);
    INSERT INTO memories_fts(rowid, content, tags) VALUES (new.id, new.content, new.tags);
END;
