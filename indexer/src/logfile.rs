//! The recorded log as a file: one JSON [`TxRecord`] per line, in chain
//! order (`export-log` / `replay-log`), for tests, benchmarks and moving
//! an index between machines. Reading is strict: a bad line is an error
//! naming its line number, never a panic.

use crate::record::TxRecord;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};

/// Log file errors.
#[derive(Debug, thiserror::Error)]
pub enum LogFileError {
    /// I/O.
    #[error("log file: {0}")]
    Io(#[from] std::io::Error),
    /// A line is not a record.
    #[error("log file line {line}: {source}")]
    Line {
        /// 1-based line.
        line: usize,
        /// Why.
        source: serde_json::Error,
    },
}

/// Writes `records` as JSONL.
pub fn write(out: impl Write, records: &[TxRecord]) -> Result<(), LogFileError> {
    let mut w = BufWriter::new(out);
    for r in records {
        serde_json::to_writer(&mut w, r).map_err(std::io::Error::from)?;
        w.write_all(b"\n")?;
    }
    w.flush()?;
    Ok(())
}

/// Reads JSONL records (blank lines skipped).
pub fn read(input: impl Read) -> Result<Vec<TxRecord>, LogFileError> {
    let mut out = Vec::new();
    for (i, line) in BufReader::new(input).lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        out.push(
            serde_json::from_str(&line).map_err(|source| LogFileError::Line {
                line: i + 1,
                source,
            })?,
        );
    }
    Ok(out)
}
