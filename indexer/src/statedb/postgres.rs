//! The state tables in PostgreSQL (the server mode).
