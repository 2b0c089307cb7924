//! Bundle key files (PROTOCOL.md §4): `<keys_dir>/<blob id>.key`, lowercase
//! hex, mode 0600, created with O_EXCL and never overwritten. Plus the fix
//! for the reference's mismatch (it saved keys by blob id and looked them
//! up by listing id): `<keys_dir>/<listing id>.listing` names the blob id a
//! listing sells, so `listen` finds the key by listing.
//!
//! Owns these files only. Key bytes never appear in errors or logs.

use crate::seal::{key_from_hex, BlobKey};
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Key file errors.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// A key for this id exists; keys are never overwritten.
    #[error("a key file already exists at {0}; keys are never overwritten")]
    Exists(PathBuf),
    /// No key for this id / listing.
    #[error("no key for {0} in the keys dir")]
    Missing(String),
    /// The id would escape the directory or is not an id.
    #[error("`{0}` is not a valid id for a key file name")]
    BadId(String),
    /// Group/world-readable key file.
    #[error(
        "key file {path} is readable by group/others (mode {mode:o}); fix with: chmod 600 {path}"
    )]
    InsecurePermissions {
        /// File.
        path: PathBuf,
        /// Mode.
        mode: u32,
    },
    /// Not 64 hex chars.
    #[error("key file {0} does not hold a 32-byte hex key")]
    Corrupt(PathBuf),
    /// I/O.
    #[error("keys dir {path}: {source}")]
    Io {
        /// Path.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
}

fn safe_id(id: &str) -> Result<&str, KeyError> {
    let ok = !id.is_empty()
        && id.len() <= 96
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    ok.then_some(id)
        .ok_or_else(|| KeyError::BadId(id.chars().take(96).collect()))
}

/// A keys directory.
#[derive(Debug, Clone)]
pub struct KeyDir {
    dir: PathBuf,
}

impl KeyDir {
    /// The keys dir at `dir` (created 0700 on first write).
    pub fn new(dir: impl Into<PathBuf>) -> KeyDir {
        KeyDir { dir: dir.into() }
    }

    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> KeyError + '_ {
        move |source| KeyError::Io {
            path: path.into(),
            source,
        }
    }

    /// Writes a new secret file `name` (0600, O_EXCL, fsynced) in the
    /// 0700 directory; refuses to overwrite.
    pub fn create_exclusive(&self, name: &str, contents: &[u8]) -> Result<PathBuf, KeyError> {
        if !self.dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&self.dir)
                .map_err(Self::io(&self.dir))?;
        }
        let path = self.dir.join(name);
        let mut f = match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(KeyError::Exists(path))
            }
            Err(e) => return Err(KeyError::Io { path, source: e }),
        };
        f.write_all(contents)
            .and_then(|_| f.sync_all())
            .map_err(Self::io(&path))?;
        Ok(path)
    }

    /// Saves the key of blob `blob_id`; refuses to overwrite.
    pub fn save(&self, blob_id: &str, key: &[u8; 32]) -> Result<PathBuf, KeyError> {
        let id = safe_id(blob_id)?;
        self.create_exclusive(&format!("{id}.key"), hex::encode(key).as_bytes())
    }

    /// Loads the key of blob `blob_id` (permission-checked).
    pub fn load(&self, blob_id: &str) -> Result<BlobKey, KeyError> {
        let path = self.dir.join(format!("{}.key", safe_id(blob_id)?));
        let meta = std::fs::metadata(&path).map_err(|_| KeyError::Missing(blob_id.into()))?;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(KeyError::InsecurePermissions { path, mode });
        }
        let text =
            zeroize::Zeroizing::new(std::fs::read_to_string(&path).map_err(Self::io(&path))?);
        key_from_hex(&text).map_err(|_| KeyError::Corrupt(path))
    }

    /// Records that `listing_id` sells blob `blob_id` (once; never rewritten).
    pub fn link_listing(&self, listing_id: &str, blob_id: &str) -> Result<PathBuf, KeyError> {
        let l = safe_id(listing_id)?;
        self.create_exclusive(&format!("{l}.listing"), safe_id(blob_id)?.as_bytes())
    }

    /// The key a listing sells.
    pub fn load_for_listing(&self, listing_id: &str) -> Result<(String, BlobKey), KeyError> {
        let path = self.dir.join(format!("{}.listing", safe_id(listing_id)?));
        let blob =
            std::fs::read_to_string(&path).map_err(|_| KeyError::Missing(listing_id.into()))?;
        let blob = safe_id(blob.trim())?.to_string();
        let key = self.load(&blob)?;
        Ok((blob, key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_private_exclusive_and_found_by_listing() {
        let d = tempfile::tempdir().unwrap();
        let k = KeyDir::new(d.path().join("keys"));
        let p = k.save("blobid_1", &[7u8; 32]).unwrap();
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            std::fs::metadata(d.path().join("keys"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o700
        );
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "07".repeat(32));
        assert!(matches!(
            k.save("blobid_1", &[8u8; 32]),
            Err(KeyError::Exists(_))
        ));
        assert_eq!(
            *k.load("blobid_1").unwrap(),
            [7u8; 32],
            "the original key survives"
        );
        k.link_listing("20261101-0123456789ab", "blobid_1").unwrap();
        let (blob, key) = k.load_for_listing("20261101-0123456789ab").unwrap();
        assert_eq!((blob.as_str(), *key), ("blobid_1", [7u8; 32]));
        assert!(matches!(
            k.link_listing("20261101-0123456789ab", "other"),
            Err(KeyError::Exists(_))
        ));
        assert!(matches!(
            k.save("../x", &[0u8; 32]),
            Err(KeyError::BadId(_))
        ));
        assert!(matches!(
            k.load_for_listing("nope"),
            Err(KeyError::Missing(_))
        ));
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = k.load("blobid_1").unwrap_err().to_string();
        assert!(err.contains("chmod 600") && !err.contains("0707"), "{err}");
        let bad = k.save("short", &[1u8; 32]).unwrap();
        std::fs::write(&bad, "abcd").unwrap();
        assert!(matches!(k.load("short"), Err(KeyError::Corrupt(_))));
    }
}
