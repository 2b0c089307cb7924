//! The part of a listings page's filter the database decides: a
//! [`Sieve`] becomes one `SELECT` over `state_listings`'s view columns
//! (cancelled, contested, expiry, visibility, USD price), so a page walks
//! the index instead of decoding every listing it passes over. The
//! statement picks a superset of the page: [`ListingFilter::matches`]
//! stays the one exact rule, applied to what comes back (a category, say,
//! is only in the manifest).
//!
//! A live page (the default) reads the partial index
//! `state_listings_open (id, expires_at) WHERE NOT cancelled AND NOT
//! contested`: the expiry test runs inside the index, so expired and
//! cancelled listings cost nothing to skip.
//!
//! Owns that statement's text and parameters; never runs it.

use crate::views::ListingFilter;

/// What the database may decide of a page's filter.
#[derive(Debug, Clone, PartialEq)]
pub struct Sieve {
    /// Listings after this id (id order).
    pub after: String,
    /// Only this seller's.
    pub seller: Option<String>,
    /// Only this visibility.
    pub visibility: Option<String>,
    /// At most this USD price.
    pub max_price_usd: Option<f64>,
    /// live | cancelled | expired | contested | all.
    pub status: String,
    /// The state's time (unix seconds): what "expired" is measured at.
    pub now: i64,
}

/// One parameter of the statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    /// Text.
    Text(String),
    /// An integer.
    Int(i64),
    /// A float.
    Real(f64),
}

impl Sieve {
    /// The sieve of `f` at `now`, resuming after `after`.
    pub fn of(f: &ListingFilter, after: Option<&str>, now: i64) -> Sieve {
        Sieve {
            after: after.unwrap_or("").to_string(),
            seller: f.seller.clone(),
            visibility: f.visibility.clone(),
            max_price_usd: f.max_price_usd,
            status: f.status.clone().unwrap_or_else(|| "live".into()),
            now,
        }
    }

    /// The statement reading at most `limit` `(id, body)` rows in id
    /// order, with its parameters; `mark(n)` writes the n-th placeholder
    /// (`?n` or `$n`). Only present filters are bound, so every
    /// parameter's type follows from the column it meets.
    pub fn query(&self, limit: usize, mark: fn(usize) -> String) -> (String, Vec<Param>) {
        let mut params = vec![Param::Text(self.after.clone())];
        let mut bind = |p: Param| {
            params.push(p);
            mark(params.len())
        };
        let mut conds = vec![format!("id > {}", mark(1))];
        if let Some(s) = &self.seller {
            conds.push(format!("seller = {}", bind(Param::Text(s.clone()))));
        }
        if let Some(v) = &self.visibility {
            conds.push(format!("visibility = {}", bind(Param::Text(v.clone()))));
        }
        if let Some(p) = self.max_price_usd {
            // a price the database could not hold as a number is decided in Rust
            conds.push(format!(
                "(price_usd IS NULL OR price_usd <= {})",
                bind(Param::Real(p))
            ));
        }
        match self.status.as_str() {
            "all" => {}
            "cancelled" => conds.push("cancelled".into()),
            "live" => {
                let now = bind(Param::Int(self.now));
                conds.push(format!(
                    "NOT cancelled AND NOT contested AND expires_at > {now}"
                ));
            }
            "contested" => {
                let now = bind(Param::Int(self.now));
                conds.push(format!(
                    "NOT cancelled AND contested AND expires_at > {now}"
                ));
            }
            "expired" => {
                let now = bind(Param::Int(self.now));
                conds.push(format!("NOT cancelled AND expires_at <= {now}"));
            }
            // no listing has any other status
            _ => conds.push("FALSE".into()),
        }
        let limit = bind(Param::Int(limit as i64));
        let sql = format!(
            "SELECT id, body FROM state_listings WHERE {} ORDER BY id LIMIT {limit}",
            conds.join(" AND ")
        );
        (sql, params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dollar(n: usize) -> String {
        format!("${n}")
    }

    #[test]
    fn a_live_page_names_the_open_index_predicate_and_binds_only_what_is_set() {
        let f = ListingFilter {
            limit: 20,
            ..Default::default()
        };
        let (sql, params) = Sieve::of(&f, Some("L9"), 1_700).query(21, dollar);
        assert_eq!(
            sql,
            "SELECT id, body FROM state_listings WHERE id > $1 AND NOT cancelled AND \
             NOT contested AND expires_at > $2 ORDER BY id LIMIT $3"
        );
        assert_eq!(
            params,
            vec![Param::Text("L9".into()), Param::Int(1_700), Param::Int(21)]
        );
    }

    #[test]
    fn every_filter_present_is_bound_in_order() {
        let f = ListingFilter {
            seller: Some("S".into()),
            visibility: Some("private".into()),
            max_price_usd: Some(2.5),
            status: Some("expired".into()),
            limit: 5,
            ..Default::default()
        };
        let (sql, params) = Sieve::of(&f, None, 9).query(6, |n| format!("?{n}"));
        assert_eq!(
            sql,
            "SELECT id, body FROM state_listings WHERE id > ?1 AND seller = ?2 AND \
             visibility = ?3 AND (price_usd IS NULL OR price_usd <= ?4) AND NOT cancelled \
             AND expires_at <= ?5 ORDER BY id LIMIT ?6"
        );
        assert_eq!(params.len(), 6);
        assert_eq!(params[3], Param::Real(2.5));
    }

    #[test]
    fn an_unknown_status_selects_nothing() {
        let f = ListingFilter {
            status: Some("sold".into()),
            ..Default::default()
        };
        let (sql, _) = Sieve::of(&f, None, 0).query(1, dollar);
        assert!(sql.contains("AND FALSE ORDER BY"), "{sql}");
    }
}
