//! A bundle's two encodings written a row at a time: the canonical bytes
//! (hashed and signed) and the signed file's text (the reference's
//! `json.dumps(indent=2)` layout).
//!
//! Owns the framing around the rows (head, separators, tail) so an export
//! can encode rows as it reads them, on two cores, and [`Bundle`]'s own
//! whole-bundle writers are the same code. It never hashes, signs, reads
//! rows or touches files.
//!
//! [`Bundle`]: super::Bundle

use super::canonical::{newline_indent, write_canonical, write_i64, write_pretty, write_str};
use super::model::{Bundle, Filter, MemoryRow, PrettyLayout};

/// Outer format version (the signed file's `version`).
pub const SIGNED_VERSION: i64 = 1;

impl Bundle {
    /// Canonical bytes, written directly (no intermediate `Value`).
    /// Equal to `canonical(&self.to_value())`, which the tests check.
    pub fn canonical_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(128 + self.memories.len() * 512);
        let mut w = CanonicalWriter::open(&mut out, &self.filter_used, &self.generated_at);
        for m in &self.memories {
            w.row(&mut out, m);
        }
        w.close(&mut out, self.version);
        out
    }
}

/// The canonical bytes of a bundle (`sort_keys`, no whitespace), written
/// as `open`, `row`…, `close`: keys sort as `filter_used`, `generated_at`,
/// `memories`, `version`, so the rows sit between a head and a tail.
#[derive(Debug)]
pub struct CanonicalWriter {
    rows: usize,
}

impl CanonicalWriter {
    /// Writes everything before the first row.
    pub fn open(out: &mut Vec<u8>, filter_used: &Filter, generated_at: &str) -> CanonicalWriter {
        out.extend_from_slice(b"{\"filter_used\":");
        write_canonical(out, &filter_used.to_value());
        out.extend_from_slice(b",\"generated_at\":");
        write_str(out, generated_at);
        out.extend_from_slice(b",\"memories\":[");
        CanonicalWriter { rows: 0 }
    }

    /// Appends one row (rows come in bundle order, id ascending).
    pub fn row(&mut self, out: &mut Vec<u8>, row: &MemoryRow) {
        if self.rows > 0 {
            out.push(b',');
        }
        row.write_canonical(out);
        self.rows += 1;
    }

    /// Writes everything after the last row.
    pub fn close(self, out: &mut Vec<u8>, version: i64) {
        out.extend_from_slice(b"],\"version\":");
        write_i64(out, version);
        out.push(b'}');
    }
}

/// The signed file's text up to and including the inner bundle, written as
/// `open`, `row`…, `close`; then [`FileTextWriter::finish`] adds the outer
/// fields once the hash is signed. Keys in the reference's insertion order.
#[derive(Debug)]
pub struct FileTextWriter {
    rows: usize,
    /// The framing of each row object (two levels below the bundle).
    layout: PrettyLayout,
}

/// Nesting of the inner bundle object inside the signed file.
const DEPTH: usize = 1;

impl FileTextWriter {
    /// Starts the signed file (`{ "version": 1, "bundle": {`…) and writes
    /// the inner bundle up to its first row.
    pub fn open_file(
        out: &mut Vec<u8>,
        version: i64,
        filter_used: &Filter,
        generated_at: &str,
    ) -> FileTextWriter {
        out.push(b'{');
        newline_indent(out, 1);
        out.extend_from_slice(b"\"version\": ");
        write_i64(out, SIGNED_VERSION);
        out.push(b',');
        newline_indent(out, 1);
        out.extend_from_slice(b"\"bundle\": ");
        out.push(b'{');
        newline_indent(out, DEPTH + 1);
        out.extend_from_slice(b"\"version\": ");
        write_i64(out, version);
        out.push(b',');
        newline_indent(out, DEPTH + 1);
        out.extend_from_slice(b"\"generated_at\": ");
        write_str(out, generated_at);
        out.push(b',');
        newline_indent(out, DEPTH + 1);
        out.extend_from_slice(b"\"filter_used\": ");
        write_pretty(out, &filter_used.to_value(), DEPTH + 1);
        out.push(b',');
        newline_indent(out, DEPTH + 1);
        out.extend_from_slice(b"\"memories\": ");
        FileTextWriter {
            rows: 0,
            layout: PrettyLayout::at(DEPTH + 2),
        }
    }

    /// Appends one row.
    pub fn row(&mut self, out: &mut Vec<u8>, row: &MemoryRow) {
        out.push(if self.rows == 0 { b'[' } else { b',' });
        newline_indent(out, DEPTH + 2);
        row.write_pretty(out, &self.layout);
        self.rows += 1;
    }

    /// Closes the inner bundle (an empty list prints as `[]`).
    pub fn close(self, out: &mut Vec<u8>) {
        if self.rows == 0 {
            out.extend_from_slice(b"[]");
        } else {
            newline_indent(out, DEPTH + 1);
            out.push(b']');
        }
        newline_indent(out, DEPTH);
        out.push(b'}');
    }

    /// Ends the signed file after the closed bundle: the outer fields, in
    /// the reference's order.
    pub fn finish(
        out: &mut Vec<u8>,
        bundle_hash_hex: &str,
        signature_b58: &str,
        signer_pubkey_b58: &str,
        signed_at: &str,
    ) {
        for (k, v) in [
            ("bundle_hash_hex", bundle_hash_hex),
            ("signature_b58", signature_b58),
            ("signer_pubkey_b58", signer_pubkey_b58),
            ("signed_at", signed_at),
        ] {
            out.push(b',');
            newline_indent(out, 1);
            write_str(out, k);
            out.extend_from_slice(b": ");
            write_str(out, v);
        }
        newline_indent(out, 0);
        out.push(b'}');
    }
}
