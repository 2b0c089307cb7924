//! A content-addressed directory of signed data items: `<dir>/<id>` holds
//! the item bytes. The offline default; ids equal a bundler's.
//!
//! Writes are atomic (temp + rename) and idempotent; reads verify the item
//! and that its id matches the file name (a swapped file is refused).

use super::item::DataItem;
use super::StorageError;
use std::path::{Path, PathBuf};

/// A directory store.
#[derive(Debug, Clone)]
pub struct FsStore {
    dir: PathBuf,
}

fn valid_id(id: &str) -> bool {
    id.len() == 43
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl FsStore {
    /// A store rooted at `dir` (created on first put).
    pub fn new(dir: impl Into<PathBuf>) -> FsStore {
        FsStore { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stores the item; returns its id.
    pub fn put(&self, item: &DataItem) -> Result<String, StorageError> {
        let id = item.id();
        let path = self.dir.join(&id);
        if path.exists() {
            return Ok(id);
        }
        std::fs::create_dir_all(&self.dir).map_err(|source| StorageError::Io {
            path: self.dir.clone(),
            source,
        })?;
        let tmp = self.dir.join(format!(".{id}.tmp-{}", std::process::id()));
        std::fs::write(&tmp, item.to_bytes())
            .and_then(|_| std::fs::rename(&tmp, &path))
            .map_err(|source| StorageError::Io {
                path: path.clone(),
                source,
            })?;
        Ok(id)
    }

    /// Reads and verifies the item with `id`.
    pub fn get(&self, id: &str) -> Result<DataItem, StorageError> {
        if !valid_id(id) {
            return Err(StorageError::BadId(id.chars().take(64).collect()));
        }
        let path = self.dir.join(id);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StorageError::NotFound(id.into()))
            }
            Err(source) => return Err(StorageError::Io { path, source }),
        };
        let item = DataItem::from_bytes(&bytes)?;
        if item.id() != id {
            return Err(StorageError::IdMismatch {
                want: id.into(),
                got: item.id(),
            });
        }
        Ok(item)
    }
}
