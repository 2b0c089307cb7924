//! File helpers for command output: size-capped reads and atomic,
//! private (0600) writes so a crash never leaves half a file.

use crate::failure::{CliResult, Failure};
use anyhow::{anyhow, Context as _};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Largest input file we read (signed bundles are capped far below this).
pub const MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;

/// Reads a file, refusing anything over [`MAX_INPUT_BYTES`] (bad input).
pub fn read_capped(path: &Path) -> CliResult<Vec<u8>> {
    let f = std::fs::File::open(path)
        .with_context(|| format!("cannot read {}", path.display()))
        .map_err(Failure::bad_input)?;
    let mut buf = Vec::new();
    f.take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut buf)
        .with_context(|| format!("cannot read {}", path.display()))
        .map_err(Failure::bad_input)?;
    if buf.len() as u64 > MAX_INPUT_BYTES {
        return Err(Failure::bad_input(anyhow!(
            "{} is larger than {MAX_INPUT_BYTES} bytes",
            path.display()
        )));
    }
    Ok(buf)
}

/// Writes `data` to `path` atomically (temp file + fsync + rename), mode 0600.
pub fn write_private_atomic(path: &Path, data: &[u8]) -> CliResult<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let name = path
        .file_name()
        .ok_or_else(|| anyhow!("{} is not a file path", path.display()))?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        anyhow!(e).context(format!("cannot write {}", path.display()))
    })?;
    Ok(())
}
