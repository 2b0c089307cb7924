-- The seller's release lookup table (`listen --lookup-table`): its
-- address, kept before the transaction creating it is sent. One row.
CREATE TABLE lookup_tables (
    address TEXT PRIMARY KEY,
    created_at TEXT NOT NULL
);
