//! Wallet sign-in (PROTOCOL.md §9): challenge → Ed25519 signature over the
//! exact message → session. Nonces live 5 minutes and are taken out of the
//! store on first use, whatever the outcome, so none can be replayed or
//! brute-forced. A pubkey may hold several pending nonces (up to
//! `store::MAX_NONCES_PER_KEY`); over that a new challenge is refused,
//! never an older one dropped, so asking for challenges in someone's name
//! cannot cancel their sign-in. Sessions last 24 hours and are stored
//! (hashed) in the database: they survive a restart of the indexer.
//!
//! The message names the deployment ([`deployment_domain`]): the
//! operator's `--domain`, or a name generated once per database, so a
//! message one indexer issued never reads like another's (a malicious
//! indexer cannot pass a second indexer's challenge off as its own).
//!
//! Owns the auth rules; the HTTP layer only maps them to status codes.

use crate::store::{
    LogStore, Nonce, NoncePut, Session, StoreError, MAX_NONCES, MAX_NONCES_PER_KEY,
};
use ed25519_dalek::{Signature, Verifier, VerifyingKey};
use sha2::{Digest, Sha256};

/// Nonce lifetime.
pub const NONCE_TTL_SECS: i64 = 5 * 60;
/// Session lifetime.
pub const SESSION_TTL_SECS: i64 = 24 * 60 * 60;

/// Why sign-in or a session check failed.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// Malformed input (field named).
    #[error("{0}")]
    BadRequest(String),
    /// Unknown, used or expired nonce.
    #[error("unknown or already used nonce; request a new challenge")]
    UnknownNonce,
    /// Expired nonce.
    #[error("the challenge expired; request a new one")]
    ExpiredNonce,
    /// The nonce was issued to another key.
    #[error("the challenge was issued to another pubkey")]
    WrongPubkey,
    /// The signature does not verify.
    #[error("signature does not verify for this pubkey and challenge")]
    BadSignature,
    /// The pubkey has as many pending challenges as it may hold.
    #[error(
        "{pubkey} already has {max} pending sign-in challenges; sign one of them \
         (POST /auth/verify) or retry in {retry_secs} s, when the oldest expires"
    )]
    TooManyChallenges {
        /// Whose.
        pubkey: String,
        /// The bound.
        max: usize,
        /// Seconds until the oldest pending one expires.
        retry_secs: i64,
    },
    /// The indexer holds as many pending challenges as it may.
    #[error("the indexer holds {max} pending sign-in challenges; retry in a minute")]
    ChallengesFull {
        /// The bound.
        max: usize,
    },
    /// No, unknown or expired session.
    #[error("missing, unknown or expired session; sign in again")]
    NoSession,
    /// Storage.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A challenge to sign.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Challenge {
    /// Nonce (hex).
    pub nonce: String,
    /// Exactly what to sign (UTF-8 bytes).
    pub message_to_sign: String,
    /// Expiry (RFC 3339).
    pub expires_at: String,
}

/// A session token issued.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Issued {
    /// Bearer token.
    pub session_token: String,
    /// Wallet.
    pub pubkey: String,
    /// Expiry (RFC 3339).
    pub expires_at: String,
}

fn random_hex(bytes: usize) -> String {
    let mut b = vec![0u8; bytes];
    getrandom::getrandom(&mut b).expect("OS randomness");
    hex::encode(b)
}

fn key_of(pubkey: &str) -> Result<VerifyingKey, AuthError> {
    let bytes: [u8; 32] = bs58::decode(pubkey)
        .into_vec()
        .ok()
        .and_then(|v| v.try_into().ok())
        .ok_or_else(|| AuthError::BadRequest("`pubkey` is not a base58 32-byte key".into()))?;
    VerifyingKey::from_bytes(&bytes)
        .map_err(|_| AuthError::BadRequest("`pubkey` is not a valid Ed25519 key".into()))
}

/// RFC 3339 of a unix time.
pub fn rfc3339(t: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(t)
        .ok()
        .and_then(|d| {
            d.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}

/// Meta key of the sign-in domain generated for a database.
const DOMAIN_META: &str = "sign_in_domain";
/// Longest `--domain`.
const MAX_DOMAIN_BYTES: usize = 253;

/// The name this deployment's sign-in messages give themselves:
/// `configured` (the operator's `--domain`, e.g. the public host name
/// clients reach it at) when given; else `brainctl-indexer-<16 hex>`,
/// generated once and kept in the store's meta, so restarts and replicas
/// of one store say the same and no two deployments do.
pub fn deployment_domain(
    store: &mut dyn LogStore,
    configured: Option<&str>,
) -> Result<String, AuthError> {
    if let Some(d) = configured {
        if d.is_empty()
            || d.len() > MAX_DOMAIN_BYTES
            || d.chars().any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(AuthError::BadRequest(format!(
                "--domain {d:?} must be 1..={MAX_DOMAIN_BYTES} bytes without spaces or \
                 control characters (the host name clients reach this indexer at)"
            )));
        }
        return Ok(d.to_string());
    }
    if let Some(d) = store.meta(DOMAIN_META)? {
        return Ok(d);
    }
    store.set_meta(DOMAIN_META, &generated_domain())?;
    // read back: of two processes opening one new store, the last write
    // wins for both from here on
    Ok(store.meta(DOMAIN_META)?.unwrap_or_default())
}

/// A fresh `brainctl-indexer-<16 hex>`.
pub(crate) fn generated_domain() -> String {
    format!("brainctl-indexer-{}", random_hex(8))
}

/// The domain a sign-in message names (its first line's first word), for
/// a client checking it signs in where it meant to.
pub fn message_domain(message: &str) -> Option<&str> {
    message
        .lines()
        .next()?
        .split_once(" wants you to sign in")
        .map(|(d, _)| d)
}

/// Issues a challenge for `pubkey` at `now`.
pub fn challenge(
    store: &mut dyn LogStore,
    pubkey: &str,
    domain: &str,
    now: i64,
) -> Result<Challenge, AuthError> {
    key_of(pubkey)?;
    store.purge_auth(now)?;
    let nonce = random_hex(16);
    let expires_at = now + NONCE_TTL_SECS;
    let message = format!(
        "{domain} wants you to sign in with your Solana account:\n{pubkey}\n\nNonce: {nonce}\nExpires At: {}",
        rfc3339(expires_at)
    );
    let put = store.put_nonce(
        &nonce,
        &Nonce {
            pubkey: pubkey.into(),
            message: message.clone(),
            expires_at,
        },
    )?;
    match put {
        NoncePut::Stored => {}
        NoncePut::KeyFull { oldest_expires_at } => {
            return Err(AuthError::TooManyChallenges {
                pubkey: pubkey.into(),
                max: MAX_NONCES_PER_KEY,
                retry_secs: (oldest_expires_at - now).max(1),
            })
        }
        NoncePut::StoreFull => return Err(AuthError::ChallengesFull { max: MAX_NONCES }),
    }
    Ok(Challenge {
        nonce,
        message_to_sign: message,
        expires_at: rfc3339(expires_at),
    })
}

/// Checks a signed challenge and opens a session.
pub fn verify(
    store: &mut dyn LogStore,
    pubkey: &str,
    nonce: &str,
    signature_b58: &str,
    now: i64,
) -> Result<Issued, AuthError> {
    let key = key_of(pubkey)?;
    let sig: [u8; 64] = bs58::decode(signature_b58)
        .into_vec()
        .ok()
        .and_then(|v| v.try_into().ok())
        .ok_or_else(|| {
            AuthError::BadRequest("`signature_b58` is not a base58 64-byte signature".into())
        })?;
    if nonce.len() > 64 {
        return Err(AuthError::BadRequest("`nonce` is too long".into()));
    }
    let n = store.take_nonce(nonce)?.ok_or(AuthError::UnknownNonce)?;
    if now >= n.expires_at {
        return Err(AuthError::ExpiredNonce);
    }
    if n.pubkey != pubkey {
        return Err(AuthError::WrongPubkey);
    }
    key.verify(n.message.as_bytes(), &Signature::from_bytes(&sig))
        .map_err(|_| AuthError::BadSignature)?;
    let token = random_hex(32);
    let expires_at = now + SESSION_TTL_SECS;
    store.put_session(
        &token_hash(&token),
        &Session {
            pubkey: pubkey.into(),
            expires_at,
        },
    )?;
    Ok(Issued {
        session_token: token,
        pubkey: pubkey.into(),
        expires_at: rfc3339(expires_at),
    })
}

fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// The wallet behind a bearer token at `now`.
pub fn session(store: &dyn LogStore, token: &str, now: i64) -> Result<String, AuthError> {
    if token.is_empty() || token.len() > 128 {
        return Err(AuthError::NoSession);
    }
    match store.session(&token_hash(token))? {
        Some(s) if now < s.expires_at => Ok(s.pubkey),
        _ => Err(AuthError::NoSession),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::SqliteStore;
    use ed25519_dalek::{Signer, SigningKey};

    fn wallet(seed: u8) -> (SigningKey, String) {
        let k = SigningKey::from_bytes(&[seed; 32]);
        let pk = bs58::encode(k.verifying_key().as_bytes()).into_string();
        (k, pk)
    }

    fn sign(k: &SigningKey, msg: &str) -> String {
        bs58::encode(k.sign(msg.as_bytes()).to_bytes()).into_string()
    }

    #[test]
    fn a_challenge_flood_in_a_victims_name_never_evicts_the_victims_nonce() {
        let mut db = SqliteStore::in_memory().unwrap();
        let (k, pk) = wallet(2);
        // the victim asks first; then someone floods challenges in their name
        let victim = challenge(&mut db, &pk, "localhost", 1_000).unwrap();
        let flood: Vec<_> = (0..MAX_NONCES_PER_KEY + 5)
            .map(|_| challenge(&mut db, &pk, "localhost", 1_010))
            .collect();
        let issued = flood.iter().filter(|c| c.is_ok()).count();
        assert_eq!(issued, MAX_NONCES_PER_KEY - 1, "several pending, bounded");
        match flood.last().unwrap() {
            Err(e @ AuthError::TooManyChallenges { retry_secs, .. }) => {
                // the oldest pending (the victim's) expires 290 s later
                assert_eq!(*retry_secs, NONCE_TTL_SECS - 10);
                assert!(e.to_string().contains("pending sign-in challenges"), "{e}");
            }
            other => panic!("the new request must be refused: {other:?}"),
        }
        // the victim's nonce still signs in, and so does a flood one
        let sig = sign(&k, &victim.message_to_sign);
        assert!(verify(&mut db, &pk, &victim.nonce, &sig, 1_020).is_ok());
        let c = flood[0].as_ref().unwrap();
        assert!(verify(&mut db, &pk, &c.nonce, &sign(&k, &c.message_to_sign), 1_020).is_ok());
        // a used nonce frees its slot; expired ones free theirs
        assert!(challenge(&mut db, &pk, "localhost", 1_030).is_ok());
        assert!(challenge(&mut db, &pk, "localhost", 1_010 + NONCE_TTL_SECS).is_ok());
        // another key's nonces are its own
        let (k2, pk2) = wallet(3);
        let c = challenge(&mut db, &pk2, "localhost", 1_000).unwrap();
        assert!(verify(
            &mut db,
            &pk2,
            &c.nonce,
            &sign(&k2, &c.message_to_sign),
            1_001
        )
        .is_ok());
    }

    #[test]
    fn sign_in_then_session_and_nonce_is_single_use() {
        let mut db = SqliteStore::in_memory().unwrap();
        let (k, pk) = wallet(1);
        let c = challenge(&mut db, &pk, "localhost", 1_000).unwrap();
        let sig = sign(&k, &c.message_to_sign);
        let issued = verify(&mut db, &pk, &c.nonce, &sig, 1_010).unwrap();
        assert_eq!(session(&db, &issued.session_token, 1_020).unwrap(), pk);
        assert!(matches!(
            verify(&mut db, &pk, &c.nonce, &sig, 1_011),
            Err(AuthError::UnknownNonce)
        ));
        // sessions end after 24 h
        assert!(matches!(
            session(&db, &issued.session_token, 1_010 + SESSION_TTL_SECS),
            Err(AuthError::NoSession)
        ));
    }

    #[test]
    fn expired_wrong_key_and_bad_signature_are_refused_and_burn_the_nonce() {
        let mut db = SqliteStore::in_memory().unwrap();
        let (k, pk) = wallet(1);
        let (k2, pk2) = wallet(2);
        let c = challenge(&mut db, &pk, "localhost", 1_000).unwrap();
        assert!(matches!(
            verify(
                &mut db,
                &pk,
                &c.nonce,
                &sign(&k, &c.message_to_sign),
                1_000 + NONCE_TTL_SECS
            ),
            Err(AuthError::ExpiredNonce)
        ));
        let c = challenge(&mut db, &pk, "localhost", 2_000).unwrap();
        assert!(matches!(
            verify(
                &mut db,
                &pk2,
                &c.nonce,
                &sign(&k2, &c.message_to_sign),
                2_001
            ),
            Err(AuthError::WrongPubkey)
        ));
        let c = challenge(&mut db, &pk, "localhost", 3_000).unwrap();
        assert!(matches!(
            verify(
                &mut db,
                &pk,
                &c.nonce,
                &sign(&k2, &c.message_to_sign),
                3_001
            ),
            Err(AuthError::BadSignature)
        ));
        // the failed attempt used the nonce up
        assert!(matches!(
            verify(&mut db, &pk, &c.nonce, &sign(&k, &c.message_to_sign), 3_002),
            Err(AuthError::UnknownNonce)
        ));
        assert!(matches!(
            challenge(&mut db, "not-a-key", "localhost", 1),
            Err(AuthError::BadRequest(_))
        ));
        assert!(matches!(session(&db, "nope", 1), Err(AuthError::NoSession)));
    }
}
