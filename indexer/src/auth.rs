//! Wallet sign-in (PROTOCOL.md §9): challenge → Ed25519 signature over the
//! exact message → session. Nonces live 5 minutes and are taken out of the
//! store on first use, whatever the outcome, so none can be replayed or
//! brute-forced. Sessions last 24 hours and are stored (hashed) in the
//! database: they survive a restart of the indexer.
//!
//! Owns the auth rules; the HTTP layer only maps them to status codes.

use crate::store::{LogStore, Nonce, Session, StoreError};
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
    store.put_nonce(
        &nonce,
        &Nonce {
            pubkey: pubkey.into(),
            message: message.clone(),
            expires_at,
        },
    )?;
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
    fn a_challenge_flood_keeps_nonce_storage_bounded() {
        use crate::store::MAX_NONCES_PER_KEY;
        let mut db = SqliteStore::in_memory().unwrap();
        let (k, pk) = wallet(2);
        let issued: Vec<Challenge> = (0..MAX_NONCES_PER_KEY + 5)
            .map(|_| challenge(&mut db, &pk, "localhost", 1_000).unwrap())
            .collect();
        // the oldest are dropped: only the newest MAX_NONCES_PER_KEY answer
        let first = &issued[0];
        assert!(matches!(
            verify(
                &mut db,
                &pk,
                &first.nonce,
                &sign(&k, &first.message_to_sign),
                1_001
            ),
            Err(AuthError::UnknownNonce)
        ));
        let last = issued.last().unwrap();
        assert!(verify(
            &mut db,
            &pk,
            &last.nonce,
            &sign(&k, &last.message_to_sign),
            1_001
        )
        .is_ok());
        let kept = issued[5..]
            .iter()
            .filter(|c| {
                verify(&mut db, &pk, &c.nonce, &sign(&k, &c.message_to_sign), 1_001).is_ok()
            })
            .count();
        assert_eq!(kept, MAX_NONCES_PER_KEY - 1, "the last was used above");
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
