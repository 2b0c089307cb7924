//! Wallets: Solana CLI keystores on disk, Ed25519 signing, and the
//! libsodium-compatible X25519 key derived from the same seed.
//!
//! Owns key files and their permissions (PROTOCOL.md §1). The secret never
//! leaves this module except as a signature or a derived key handed to
//! `seal`; `Debug` prints the address only and errors never carry key bytes.

use curve25519_dalek::edwards::CompressedEdwardsY;
use ed25519_dalek::{Signer, SigningKey};
use sha2::{Digest, Sha512};
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use zeroize::Zeroizing;

/// Env var overriding the default wallet path.
pub const WALLET_PATH_ENV: &str = "BRAINCTL_WALLET_PATH";

/// Wallet errors. None of them carries secret bytes.
#[derive(Debug, thiserror::Error)]
pub enum WalletError {
    /// No file at the path.
    #[error("no wallet at {0}; create one with `brainctl wallet new` or pass --keystore")]
    NotFound(PathBuf),
    /// Readable by group or others.
    #[error(
        "wallet {path} is readable by group/others (mode {mode:o}); fix with: chmod 600 {path}"
    )]
    InsecurePermissions {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// Neither a JSON array of 64 integers 0..=255 nor a base58 64-byte secret.
    #[error("{path} is not a Solana keystore (expected a JSON array of 64 integers 0-255, or the base58 64-byte secret Phantom, Backpack, Solflare and Glow export): {why}")]
    BadFormat {
        /// The file.
        path: PathBuf,
        /// What is wrong (never the content).
        why: String,
    },
    /// Bytes 32..64 are not the public key of bytes 0..32.
    #[error("{0} is corrupt: its public key does not match its secret seed")]
    KeypairMismatch(PathBuf),
    /// Refusing to overwrite.
    #[error("a wallet already exists at {0}; refusing to overwrite it (use --force to replace it; the old file is kept as a .bak)")]
    Exists(PathBuf),
    /// Filesystem failure.
    #[error("wallet file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// No home directory to put the default wallet in.
    #[error("cannot find a home directory for the default wallet path; pass --keystore or set {WALLET_PATH_ENV}")]
    NoHome,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> WalletError + '_ {
    move |source| WalletError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The default wallet path: `<home>/.brainctl/wallet.json` (the CLI takes
/// `$BRAINCTL_WALLET_PATH` through its `--keystore` flag).
pub fn default_wallet_path(home: Option<&Path>) -> Result<PathBuf, WalletError> {
    let home = home.ok_or(WalletError::NoHome)?;
    Ok(home.join(".brainctl").join("wallet.json"))
}

/// An Ed25519 keypair.
pub struct Wallet {
    signing: SigningKey,
}

impl std::fmt::Debug for Wallet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wallet")
            .field("address", &self.address())
            .finish_non_exhaustive()
    }
}

impl Wallet {
    /// A fresh random keypair.
    pub fn generate() -> Wallet {
        let seed = Zeroizing::new(crate::crypto::random_bytes::<32>());
        Wallet::from_seed(&seed)
    }

    /// The keypair of a 32-byte seed.
    pub fn from_seed(seed: &[u8; 32]) -> Wallet {
        Wallet {
            signing: SigningKey::from_bytes(seed),
        }
    }

    /// From the 64 keystore bytes (seed ‖ pubkey), checking they agree.
    pub fn from_keypair_bytes(bytes: &[u8; 64]) -> Option<Wallet> {
        SigningKey::from_keypair_bytes(bytes)
            .ok()
            .map(|signing| Wallet { signing })
    }

    /// Loads a keystore file, refusing group/world-readable files.
    pub fn load(path: &Path) -> Result<Wallet, WalletError> {
        let meta = match fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(WalletError::NotFound(path.into()))
            }
            Err(e) => return Err(io_err(path)(e)),
        };
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(WalletError::InsecurePermissions {
                path: path.into(),
                mode,
            });
        }
        Self::load_unchecked_perms(path)
    }

    /// Reads a keystore without the permission check (for `wallet import`
    /// of a file the user points at; the copy we write is 0600).
    pub fn load_unchecked_perms(path: &Path) -> Result<Wallet, WalletError> {
        let text = Zeroizing::new(fs::read(path).map_err(io_err(path))?);
        Wallet::from_secret_text(&text, path)
    }

    /// A wallet from a secret as text (`origin` names where it came from in
    /// errors, never the text): a Solana CLI keystore array or the base58
    /// 64-byte secret wallet apps export.
    pub fn from_secret_text(text: &[u8], origin: &Path) -> Result<Wallet, WalletError> {
        let bytes = parse_secret(text).map_err(|why| WalletError::BadFormat {
            path: origin.into(),
            why,
        })?;
        Wallet::from_keypair_bytes(&bytes)
            .ok_or_else(|| WalletError::KeypairMismatch(origin.into()))
    }

    /// The secret as the base58 64-byte string Phantom, Backpack, Solflare
    /// and Glow import (the reference's `wallet export-key`). It is the
    /// whole key: never log it.
    pub fn secret_base58(&self) -> Zeroizing<String> {
        Zeroizing::new(bs58::encode(&*self.keypair_bytes()).into_string())
    }

    /// Writes this wallet to `path` (0600 file, 0700 parent created if
    /// missing). Refuses an existing file unless `force`, in which case the
    /// old file is renamed to `<path>.bak-<unix seconds>` first. Returns the
    /// backup path, if any.
    pub fn save(&self, path: &Path, force: bool) -> Result<Option<PathBuf>, WalletError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !dir.exists() {
                fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(dir)
                    .map_err(io_err(dir))?;
            }
        }
        let exists = path.exists();
        if exists && !force {
            return Err(WalletError::Exists(path.into()));
        }
        let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
        let _ = fs::remove_file(&tmp);
        let json = Zeroizing::new(keystore_json(&self.keypair_bytes()));
        {
            let mut f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)
                .map_err(io_err(&tmp))?;
            f.write_all(json.as_bytes()).map_err(io_err(&tmp))?;
            f.sync_all().map_err(io_err(&tmp))?;
        }
        let mut backup = None;
        if exists {
            let secs = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let bak = PathBuf::from(format!("{}.bak-{secs}", path.display()));
            fs::rename(path, &bak).map_err(io_err(path))?;
            backup = Some(bak);
        }
        fs::rename(&tmp, path).map_err(io_err(path))?;
        Ok(backup)
    }

    fn keypair_bytes(&self) -> Zeroizing<[u8; 64]> {
        Zeroizing::new(self.signing.to_keypair_bytes())
    }

    /// The same key as a Solana signer. It carries the secret: hand it only
    /// to transaction signing, never to logs.
    #[cfg(feature = "chain")]
    pub fn solana_keypair(&self) -> solana_sdk::signature::Keypair {
        solana_sdk::signature::Keypair::new_from_array(self.signing.to_bytes())
    }

    /// The 32-byte Ed25519 public key.
    pub fn pubkey(&self) -> [u8; 32] {
        self.signing.verifying_key().to_bytes()
    }

    /// The base58 address.
    pub fn address(&self) -> String {
        bs58::encode(self.pubkey()).into_string()
    }

    /// Ed25519 signature over `message`.
    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        self.signing.sign(message).to_bytes()
    }

    /// The sealed-escrow scalar k of our listing whose program account is
    /// `listing_account` (`node::escrow::listing_scalar` derives that
    /// account): a function of this wallet's seed and the account alone,
    /// so `listen` derives it again after any crash (never a second secret
    /// to lose).
    pub fn escrow_listing_scalar(&self, listing_account: &[u8; 32]) -> Zeroizing<[u8; 32]> {
        escrow_math::client::listing_scalar(&self.signing.to_bytes(), listing_account)
    }

    /// The same scalar bound to the cluster whose genesis hash is
    /// `genesis_hash` (`escrow_math::client::cluster_listing_scalar`): what
    /// new listings use.
    pub fn escrow_cluster_listing_scalar(
        &self,
        genesis_hash: &[u8; 32],
        listing_account: &[u8; 32],
    ) -> Zeroizing<[u8; 32]> {
        escrow_math::client::cluster_listing_scalar(
            &self.signing.to_bytes(),
            genesis_hash,
            listing_account,
        )
    }

    /// libsodium `crypto_sign_ed25519_sk_to_curve25519`: clamp(SHA-512(seed)[..32]).
    pub fn x25519_secret(&self) -> Zeroizing<[u8; 32]> {
        let h = Sha512::digest(self.signing.to_bytes());
        let mut k = Zeroizing::new([0u8; 32]);
        k.copy_from_slice(&h[..32]);
        k[0] &= 248;
        k[31] &= 127;
        k[31] |= 64;
        k
    }

    /// The X25519 public key in base58 (what a `buy` memo carries).
    pub fn x25519_address(&self) -> String {
        bs58::encode(self.x25519_public()).into_string()
    }

    /// libsodium `crypto_sign_ed25519_pk_to_curve25519` of our pubkey.
    pub fn x25519_public(&self) -> [u8; 32] {
        ed25519_pub_to_x25519(&self.pubkey()).expect("our own pubkey is a valid point")
    }
}

/// The X25519 (Montgomery) form of an Ed25519 public key, as libsodium
/// computes it; `None` if the bytes are not a valid point.
pub fn ed25519_pub_to_x25519(pk: &[u8; 32]) -> Option<[u8; 32]> {
    let point = CompressedEdwardsY(*pk).decompress()?;
    if point.is_small_order() {
        return None;
    }
    Some(point.to_montgomery().to_bytes())
}

/// Parses a secret: a Solana CLI keystore array (starts with `[`) or a
/// base58 string of the 64 keypair bytes; surrounding whitespace ignored.
/// Errors describe the shape, never the content.
pub fn parse_secret(text: &[u8]) -> Result<Zeroizing<[u8; 64]>, String> {
    let trimmed = text.trim_ascii();
    if trimmed.starts_with(b"[") {
        return parse_keystore(trimmed).map(Zeroizing::new);
    }
    let decoded = Zeroizing::new(
        bs58::decode(trimmed)
            .into_vec()
            .map_err(|_| "neither a JSON array nor base58 text".to_string())?,
    );
    let bytes: [u8; 64] = decoded.as_slice().try_into().map_err(|_| {
        format!(
            "base58 text of {} bytes, want the 64-byte keypair (seed and public key)",
            decoded.len()
        )
    })?;
    Ok(Zeroizing::new(bytes))
}

/// Parses a Solana CLI keystore: a JSON array of exactly 64 integers 0..=255.
pub fn parse_keystore(text: &[u8]) -> Result<[u8; 64], String> {
    let v: serde_json::Value = serde_json::from_slice(text)
        .map_err(|e| format!("not JSON (line {}, column {})", e.line(), e.column()))?;
    let arr = v.as_array().ok_or("not a JSON array")?;
    if arr.len() != 64 {
        return Err(format!("array has {} entries, want 64", arr.len()));
    }
    let mut out = [0u8; 64];
    for (i, x) in arr.iter().enumerate() {
        out[i] = x
            .as_u64()
            .filter(|n| *n <= 255)
            .ok_or_else(|| format!("entry {i} is not an integer 0-255"))? as u8;
    }
    Ok(out)
}

fn keystore_json(bytes: &[u8; 64]) -> String {
    let parts: Vec<String> = bytes.iter().map(u8::to_string).collect();
    format!("[{}]", parts.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keystore_rejects_bad_shapes_without_echoing_content() {
        assert!(parse_keystore(b"[1,2,3]")
            .unwrap_err()
            .contains("3 entries"));
        let mut v: Vec<u64> = vec![1; 64];
        v[5] = 256;
        let text = serde_json::to_vec(&v).unwrap();
        let err = parse_keystore(&text).unwrap_err();
        assert!(err.contains("entry 5"), "{err}");
        assert!(!err.contains("256"));
        assert!(parse_keystore(b"{}").is_err());
        assert!(parse_keystore(b"not json").is_err());
    }

    #[test]
    fn base58_secrets_round_trip_and_bad_ones_are_described_not_echoed() {
        let w = Wallet::from_seed(&[7u8; 32]);
        let b58 = w.secret_base58();
        let back =
            Wallet::from_secret_text(format!(" {}\n", &*b58).as_bytes(), Path::new("-")).unwrap();
        assert_eq!(back.address(), w.address());
        let array = keystore_json(&w.keypair_bytes());
        let same = Wallet::from_secret_text(array.as_bytes(), Path::new("k.json")).unwrap();
        assert_eq!(same.address(), w.address());
        let short = bs58::encode([1u8; 32]).into_string();
        let e = Wallet::from_secret_text(short.as_bytes(), Path::new("-"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("32 bytes") && !e.contains(&short), "{e}");
        let e = Wallet::from_secret_text(b"0OIl not base58", Path::new("-"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("neither a JSON array nor base58"), "{e}");
        let mut bytes = *w.keypair_bytes();
        bytes[40] ^= 1;
        let e =
            Wallet::from_secret_text(bs58::encode(bytes).into_string().as_bytes(), Path::new("-"));
        assert!(matches!(e, Err(WalletError::KeypairMismatch(_))));
    }

    #[test]
    fn mismatched_pubkey_is_refused() {
        let w = Wallet::from_seed(&[9u8; 32]);
        let mut bytes = *w.keypair_bytes();
        bytes[40] ^= 1;
        assert!(Wallet::from_keypair_bytes(&bytes).is_none());
    }

    #[test]
    fn x25519_public_matches_secret() {
        let w = Wallet::from_seed(&[3u8; 32]);
        let from_secret = curve25519_dalek::MontgomeryPoint::mul_base_clamped(*w.x25519_secret());
        assert_eq!(from_secret.to_bytes(), w.x25519_public());
    }

    #[test]
    fn debug_never_shows_secret() {
        let w = Wallet::from_seed(&[1u8; 32]);
        let dbg = format!("{w:?}");
        assert!(dbg.contains(&w.address()));
        assert!(!dbg.contains("[1, 1"));
    }
}
