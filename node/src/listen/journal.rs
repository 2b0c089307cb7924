//! The journal of release transactions the chain would not refuse to
//! repeat ([`crate::mint::receipt::Receipt::needs_journal`]): each one signed is
//! written here, durably, before it is sent, and a release of that buy
//! after a crash first finishes what was kept
//! ([`crate::chain::Chain::finish_recorded`]) and signs a new one only once
//! none of them landed or can land. So a buy is released at most once
//! whatever the step the process died at.
//!
//! Its own connection to the seller's state (`listen.db`, WAL), so releases
//! in flight write it while the daemon's pass holds the main connection;
//! it never touches a buy's state (the pass records the release).

use crate::chain::{ChainError, Signature};
use crate::seller::{ListenDb, StateError};
use rusqlite::{params, Connection};
use std::str::FromStr;
use std::sync::Mutex;

/// One transaction kept for a buy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptSend {
    /// Its signature.
    pub signature: Signature,
    /// The last block height its blockhash is valid at.
    pub last_valid: u64,
    /// The signed transaction.
    pub wire: Vec<u8>,
}

/// The journal (one per daemon; shared by its releases in flight).
pub struct SendJournal {
    conn: Mutex<Connection>,
}

impl SendJournal {
    /// Opens the journal beside `db` (the same file; its table is made by
    /// `db`'s migrations).
    pub fn beside(db: &ListenDb) -> Result<SendJournal, StateError> {
        let conn = match db.path() {
            Some(path) => Connection::open(path)?,
            None => {
                return Err(StateError::Unknown(
                    "a release journal needs the state in a file".into(),
                ))
            }
        };
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        Ok(SendJournal {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps `wire` (signed as `signature`) for `buy`, committed before
    /// this returns.
    pub fn keep(
        &self,
        buy: &str,
        signature: &Signature,
        last_valid: u64,
        wire: &[u8],
    ) -> Result<(), StateError> {
        self.keep_for(&[buy], signature, last_valid, wire)
    }

    /// Keeps `wire` (signed as `signature`, releasing every one of `buys`)
    /// under each of them, in one database transaction committed before
    /// this returns: never under some and not others, or a restart that
    /// finds it from one buy would land the release of another that signs
    /// its own again.
    pub fn keep_for(
        &self,
        buys: &[&str],
        signature: &Signature,
        last_valid: u64,
        wire: &[u8],
    ) -> Result<(), StateError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let (sig, at) = (signature.to_string(), crate::clock::now_iso());
        for buy in buys {
            tx.execute(
                "INSERT OR IGNORE INTO release_sends(signature, buy, last_valid, wire, sent_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![sig, buy, last_valid as i64, wire, at],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// What was kept for `buy`, oldest first.
    pub fn kept(&self, buy: &str) -> Result<Vec<KeptSend>, StateError> {
        let conn = self.conn();
        let mut st = conn.prepare(
            "SELECT signature, last_valid, wire FROM release_sends WHERE buy = ?1 ORDER BY rowid",
        )?;
        let rows = st.query_map([buy], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, Vec<u8>>(2)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (sig, last_valid, wire) = row?;
            let signature = Signature::from_str(&sig)
                .map_err(|_| StateError::Unknown(format!("kept release signature {sig}")))?;
            out.push(KeptSend {
                signature,
                last_valid: last_valid as u64,
                wire,
            });
        }
        Ok(out)
    }

    /// A [`crate::chain::client::RecordSend`] keeping each transaction for
    /// `buy` (then the `release_signed` fault point, for crash tests).
    pub fn recorder<'a>(
        &'a self,
        buy: &'a str,
    ) -> impl Fn(&Signature, u64, &[u8]) -> Result<(), ChainError> + Sync + 'a {
        self.recorder_for(vec![buy])
    }

    /// A [`crate::chain::client::RecordSend`] keeping each transaction
    /// under every one of `buys` at once ([`SendJournal::keep_for`]).
    pub fn recorder_for<'a>(
        &'a self,
        buys: Vec<&'a str>,
    ) -> impl Fn(&Signature, u64, &[u8]) -> Result<(), ChainError> + Sync + 'a {
        move |sig, last_valid, wire| {
            self.keep_for(&buys, sig, last_valid, wire).map_err(|e| {
                ChainError::Config(format!("keeping the release before sending it: {e}"))
            })?;
            crate::fault::maybe_abort("release_signed");
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_sends_survive_a_reopen_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("listen.db");
        let mut db = ListenDb::open(&path).unwrap();
        db.record_seen("buy1", "20261128-0123456789ab", 1).unwrap();
        let j = SendJournal::beside(&db).unwrap();
        let (a, b) = (Signature::from([1; 64]), Signature::from([2; 64]));
        j.keep("buy1", &a, 10, b"one").unwrap();
        j.keep("buy1", &b, 20, b"two").unwrap();
        j.keep("buy1", &a, 10, b"one").unwrap();
        drop(j);
        let j = SendJournal::beside(&ListenDb::open(&path).unwrap()).unwrap();
        let kept = j.kept("buy1").unwrap();
        assert_eq!(
            kept.iter()
                .map(|k| (k.signature, k.last_valid, k.wire.as_slice()))
                .collect::<Vec<_>>(),
            vec![(a, 10, &b"one"[..]), (b, 20, &b"two"[..])]
        );
        assert!(j.kept("buy2").unwrap().is_empty());
    }

    #[test]
    fn a_shared_release_is_kept_under_each_buy_it_releases() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("listen.db");
        let mut db = ListenDb::open(&path).unwrap();
        for b in ["buy1", "buy2", "buy3"] {
            db.record_seen(b, "20261128-0123456789ab", 1).unwrap();
        }
        let j = SendJournal::beside(&db).unwrap();
        let (solo, shared) = (Signature::from([1; 64]), Signature::from([2; 64]));
        j.keep("buy1", &solo, 10, b"solo").unwrap();
        j.keep_for(&["buy1", "buy2"], &shared, 20, b"shared")
            .unwrap();
        let sigs = |b: &str| -> Vec<Signature> {
            j.kept(b)
                .unwrap()
                .into_iter()
                .map(|k| k.signature)
                .collect()
        };
        assert_eq!(sigs("buy1"), vec![solo, shared]);
        assert_eq!(sigs("buy2"), vec![shared]);
        assert!(sigs("buy3").is_empty());
        // and after a reopen, from either buy
        drop(j);
        let j = SendJournal::beside(&ListenDb::open(&path).unwrap()).unwrap();
        assert_eq!(j.kept("buy2").unwrap()[0].wire, b"shared");
    }
}
