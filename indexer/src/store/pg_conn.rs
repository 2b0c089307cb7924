//! One PostgreSQL connection that prepares each distinct SQL text once
//! and reuses the prepared statement: a query given as text costs one
//! round trip instead of two (`tokio-postgres` prepares an unnamed
//! statement, then binds it, on every call). The set of texts is the
//! fixed set this crate writes, so the cache stays small; it is bounded
//! anyway.
//!
//! Owns the cache; never decides what to query.

use std::collections::HashMap;
use std::ops::Deref;
use std::sync::Mutex;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Error, Row, Statement};

/// Most statements kept (the crate writes a few dozen texts).
const CACHED: usize = 256;

/// Query parameters.
type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

/// A client with a prepared-statement cache; derefs to the client for
/// everything else (`batch_execute`, `simple_query`, ...).
pub struct Conn {
    client: Client,
    cache: Mutex<HashMap<String, Statement>>,
}

impl Conn {
    /// Wraps `client` with an empty cache.
    pub fn new(client: Client) -> Conn {
        Conn {
            client,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The prepared statement for `sql`, prepared now if it is new.
    pub async fn statement(&self, sql: &str) -> Result<Statement, Error> {
        if let Some(s) = self.cached().get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql).await?;
        let mut cache = self.cached();
        if cache.len() >= CACHED {
            cache.clear();
        }
        cache.insert(sql.to_string(), s.clone());
        Ok(s)
    }

    fn cached(&self) -> std::sync::MutexGuard<'_, HashMap<String, Statement>> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// [`Client::query`] through the cache.
    pub async fn query(&self, sql: &str, params: Params<'_>) -> Result<Vec<Row>, Error> {
        let s = self.statement(sql).await?;
        self.client.query(&s, params).await
    }

    /// [`Client::query_one`] through the cache.
    pub async fn query_one(&self, sql: &str, params: Params<'_>) -> Result<Row, Error> {
        let s = self.statement(sql).await?;
        self.client.query_one(&s, params).await
    }

    /// [`Client::query_opt`] through the cache.
    pub async fn query_opt(&self, sql: &str, params: Params<'_>) -> Result<Option<Row>, Error> {
        let s = self.statement(sql).await?;
        self.client.query_opt(&s, params).await
    }

    /// [`Client::query_one`] outside the cache: prepared unnamed and
    /// planned for these values. For a range whose size varies by orders
    /// of magnitude (the log after the head: all of it on a rebuild, a few
    /// records after): the generic plan PostgreSQL switches a cached
    /// statement to after five runs fits one of them, and a count that
    /// scanned the whole log cost every new memo 200 ms at 1,000,000.
    pub async fn query_one_planned(&self, sql: &str, params: Params<'_>) -> Result<Row, Error> {
        self.client.query_one(sql, params).await
    }

    /// [`Client::execute`] through the cache.
    pub async fn execute(&self, sql: &str, params: Params<'_>) -> Result<u64, Error> {
        let s = self.statement(sql).await?;
        self.client.execute(&s, params).await
    }
}

impl Deref for Conn {
    type Target = Client;

    fn deref(&self) -> &Client {
        &self.client
    }
}
