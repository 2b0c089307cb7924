//! `brainctl_bm25(memories_fts)`: FTS5's own `bm25()` ranking, computed
//! the same way to the bit, except that each memory's token count is kept
//! in memory once FTS5 has read it.
//!
//! Ranking a common word means scoring every memory that holds it, and
//! FTS5's `bm25()` spends most of that reading each match's token count
//! from its docsize table (one SQL statement per match). Those counts
//! change only when a memory is written, so a long-lived process (an MCP
//! server answering searches) keeps them: the connection's update hook
//! forgets each memory it rewrites, and the store clears them all when
//! another process has committed ([`DocLens::clear`]).
//!
//! Bit for bit where SQLite's C is compiled without fused multiply-add
//! (x86-64 builds; an arm64 compiler may fuse `a + b * c` in
//! `fts5Bm25Function`, and the scores then differ in the last bit).
//!
//! Owns the registration of the function on a connection (the only
//! `unsafe` of the store: the FTS5 C extension API) and the token-count
//! cache. Its one query is [`warm`]'s pass over the docsize table; it never
//! writes.

use rusqlite::{ffi, Connection};
use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex, PoisonError};

/// Token counts (all columns) of memories by rowid, as FTS5 computed them.
#[derive(Debug, Default)]
pub struct DocLens {
    /// `count + 1` at index `rowid`; 0 = not known yet.
    by_rowid: Vec<u32>,
}

impl DocLens {
    /// Rowids past this are not kept (the vector would be too sparse):
    /// 16M memories, 64 MiB at most.
    const MAX_ROWID: i64 = 1 << 24;

    fn get(&self, rowid: i64) -> Option<c_int> {
        let slot = usize::try_from(rowid).ok()?;
        match self.by_rowid.get(slot) {
            Some(&n) if n > 0 => c_int::try_from(n - 1).ok(),
            _ => None,
        }
    }

    fn put(&mut self, rowid: i64, tokens: c_int) {
        let (Ok(slot), Ok(tokens)) = (usize::try_from(rowid), u32::try_from(tokens)) else {
            return;
        };
        if rowid >= Self::MAX_ROWID || tokens == u32::MAX {
            return;
        }
        if slot >= self.by_rowid.len() {
            self.by_rowid.resize((slot + 1).next_power_of_two(), 0);
        }
        self.by_rowid[slot] = tokens + 1;
    }

    /// Forgets one memory's count (this connection rewrote its row).
    fn forget(&mut self, rowid: i64) {
        if let Some(n) = usize::try_from(rowid)
            .ok()
            .and_then(|i| self.by_rowid.get_mut(i))
        {
            *n = 0;
        }
    }

    /// Forgets every count (another process committed).
    pub fn clear(&mut self) {
        self.by_rowid.clear();
    }

    /// How many memories' counts are kept.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.by_rowid.iter().filter(|n| **n > 0).count()
    }
}

/// The cache as the connection's ranking function and the store share it.
pub type SharedDocLens = Arc<Mutex<DocLens>>;

/// Reads every memory's token count in one pass over FTS5's docsize table
/// (`sz`: one varint per column, all columns indexed), as a long-lived
/// process does once at start; returns how many. The same counts
/// `xColumnSize(-1)` gives (property-tested).
pub fn warm(conn: &Connection, lens: &SharedDocLens) -> rusqlite::Result<usize> {
    let mut stmt = conn.prepare("SELECT id, sz FROM memories_fts_docsize")?;
    let mut rows = stmt.query([])?;
    let mut lens = lens.lock().unwrap_or_else(PoisonError::into_inner);
    let mut n = 0;
    while let Some(row) = rows.next()? {
        if let (Ok(id), rusqlite::types::ValueRef::Blob(sz)) =
            (row.get::<_, i64>(0), row.get_ref(1)?)
        {
            if let Some(tokens) = varint_sum(sz) {
                lens.put(id, tokens);
                n += 1;
            }
        }
    }
    Ok(n)
}

/// The sum of SQLite-format varints (big-endian 7-bit groups, a ninth
/// byte of 8 bits); `None` if truncated or out of `c_int` range.
fn varint_sum(mut bytes: &[u8]) -> Option<c_int> {
    let mut sum: i64 = 0;
    while !bytes.is_empty() {
        let mut v: u64 = 0;
        let mut used = 0;
        loop {
            let b = *bytes.get(used)?;
            used += 1;
            if used == 9 {
                v = (v << 8) | u64::from(b);
                break;
            }
            v = (v << 7) | u64::from(b & 0x7f);
            if b & 0x80 == 0 {
                break;
            }
        }
        bytes = &bytes[used..];
        sum = sum.checked_add(i64::try_from(v).ok()?)?;
    }
    c_int::try_from(sum).ok()
}

/// Registers `brainctl_bm25` on `conn`, reading and filling `lens`, and
/// the connection's update hook, which forgets the count of every memory
/// the connection itself rewrites (FTS5 rewrites its docsize row): its own
/// writes keep the other counts; other processes' commits are the store's
/// to notice (`PRAGMA data_version`).
pub fn register(conn: &Connection, lens: SharedDocLens) -> rusqlite::Result<()> {
    let rewritten = lens.clone();
    conn.update_hook(Some(
        move |_: rusqlite::hooks::Action, _: &str, table: &str, rowid: i64| {
            if table == "memories_fts_docsize" {
                rewritten
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .forget(rowid);
            }
        },
    ));
    // SAFETY: `handle` is the live connection; the statement is finalized
    // before returning; `api` is written by SQLite through the pointer we
    // bind (the documented way to obtain `fts5_api`), and is valid for the
    // connection's life.
    unsafe {
        let db = conn.handle();
        let api = fts5_api(db)?;
        let create = (*api)
            .xCreateFunction
            .ok_or_else(|| misuse("no xCreateFunction"))?;
        let user = Box::into_raw(Box::new(lens)).cast::<c_void>();
        let rc = create(
            api,
            c"brainctl_bm25".as_ptr(),
            user,
            Some(bm25),
            Some(drop_lens),
        );
        if rc != ffi::SQLITE_OK {
            drop(Box::from_raw(user.cast::<SharedDocLens>()));
            return Err(rusqlite::Error::SqliteFailure(ffi::Error::new(rc), None));
        }
    }
    Ok(())
}

fn misuse(what: &str) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        ffi::Error::new(ffi::SQLITE_MISUSE),
        Some(format!("FTS5 extension API: {what}")),
    )
}

/// `SELECT fts5(?1)` with a pointer bound: SQLite writes its `fts5_api*`.
unsafe fn fts5_api(db: *mut ffi::sqlite3) -> rusqlite::Result<*mut ffi::fts5_api> {
    let mut stmt: *mut ffi::sqlite3_stmt = std::ptr::null_mut();
    let rc = ffi::sqlite3_prepare_v2(
        db,
        c"SELECT fts5(?1)".as_ptr(),
        -1,
        &mut stmt,
        std::ptr::null_mut(),
    );
    if rc != ffi::SQLITE_OK {
        return Err(rusqlite::Error::SqliteFailure(ffi::Error::new(rc), None));
    }
    let mut api: *mut ffi::fts5_api = std::ptr::null_mut();
    ffi::sqlite3_bind_pointer(
        stmt,
        1,
        (&raw mut api).cast::<c_void>(),
        c"fts5_api_ptr".as_ptr(),
        None,
    );
    ffi::sqlite3_step(stmt);
    ffi::sqlite3_finalize(stmt);
    if api.is_null() {
        return Err(misuse("SQLite has no FTS5"));
    }
    Ok(api)
}

unsafe extern "C" fn drop_lens(user: *mut c_void) {
    drop(Box::from_raw(user.cast::<SharedDocLens>()));
}

/// What FTS5's bm25 computes once per statement (`Fts5Bm25Data`).
struct QueryStats {
    idf: Vec<f64>,
    avgdl: f64,
    freq: Vec<f64>,
}

unsafe extern "C" fn drop_stats(p: *mut c_void) {
    drop(Box::from_raw(p.cast::<QueryStats>()));
}

unsafe extern "C" fn count_row(
    _api: *const ffi::Fts5ExtensionApi,
    _fts: *mut ffi::Fts5Context,
    n: *mut c_void,
) -> c_int {
    *n.cast::<i64>() += 1;
    ffi::SQLITE_OK
}

/// `fts5Bm25GetData`: average row length and each phrase's IDF, with the
/// same arithmetic in the same order.
unsafe fn query_stats(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
) -> Result<*mut QueryStats, c_int> {
    let get = api.xGetAuxdata.ok_or(ffi::SQLITE_MISUSE)?;
    let existing = get(fts, 0).cast::<QueryStats>();
    if !existing.is_null() {
        return Ok(existing);
    }
    let phrases = api.xPhraseCount.ok_or(ffi::SQLITE_MISUSE)?(fts).max(0) as usize;
    let (mut rows, mut tokens) = (0i64, 0i64);
    check(api.xRowCount.ok_or(ffi::SQLITE_MISUSE)?(fts, &mut rows))?;
    check(api.xColumnTotalSize.ok_or(ffi::SQLITE_MISUSE)?(
        fts,
        -1,
        &mut tokens,
    ))?;
    let avgdl = tokens as f64 / rows as f64;
    let mut idf = Vec::with_capacity(phrases);
    for phrase in 0..phrases {
        let mut hits = 0i64;
        check(api.xQueryPhrase.ok_or(ffi::SQLITE_MISUSE)?(
            fts,
            phrase as c_int,
            (&raw mut hits).cast::<c_void>(),
            Some(count_row),
        ))?;
        let v = (((rows - hits) as f64 + 0.5) / (hits as f64 + 0.5)).ln();
        idf.push(if v <= 0.0 { 1e-6 } else { v });
    }
    let stats = Box::into_raw(Box::new(QueryStats {
        idf,
        avgdl,
        freq: vec![0.0; phrases],
    }));
    let set = api.xSetAuxdata.ok_or(ffi::SQLITE_MISUSE)?;
    check(set(fts, stats.cast::<c_void>(), Some(drop_stats)))?;
    Ok(stats)
}

fn check(rc: c_int) -> Result<(), c_int> {
    if rc == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(rc)
    }
}

/// The row's token count: kept, or read by FTS5 (and then kept).
unsafe fn row_tokens(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
) -> Result<c_int, c_int> {
    let user = api.xUserData.ok_or(ffi::SQLITE_MISUSE)?(fts).cast::<SharedDocLens>();
    let rowid = api.xRowid.ok_or(ffi::SQLITE_MISUSE)?(fts);
    let lens = &*user;
    if let Some(n) = lens
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(rowid)
    {
        return Ok(n);
    }
    let mut n: c_int = 0;
    check(api.xColumnSize.ok_or(ffi::SQLITE_MISUSE)?(fts, -1, &mut n))?;
    lens.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .put(rowid, n);
    Ok(n)
}

/// `fts5Bm25Function` with unit column weights (what `bm25(t)` and
/// `rank` use): `-Σ idf·f(k1+1) / (f + k1(1 - b + b·D/avgdl))`.
unsafe fn score(api: &ffi::Fts5ExtensionApi, fts: *mut ffi::Fts5Context) -> Result<f64, c_int> {
    const K1: f64 = 1.2;
    const B: f64 = 0.75;
    let stats = &mut *query_stats(api, fts)?;
    stats.freq.iter_mut().for_each(|f| *f = 0.0);
    let mut insts: c_int = 0;
    check(api.xInstCount.ok_or(ffi::SQLITE_MISUSE)?(fts, &mut insts))?;
    let inst = api.xInst.ok_or(ffi::SQLITE_MISUSE)?;
    for i in 0..insts {
        let (mut phrase, mut col, mut off) = (0, 0, 0);
        check(inst(fts, i, &mut phrase, &mut col, &mut off))?;
        if let Some(f) = usize::try_from(phrase)
            .ok()
            .and_then(|p| stats.freq.get_mut(p))
        {
            *f += 1.0;
        }
    }
    let d = f64::from(row_tokens(api, fts)?);
    let mut score = 0.0;
    for (idf, f) in stats.idf.iter().zip(&stats.freq) {
        score += idf * ((f * (K1 + 1.0)) / (f + K1 * (1.0 - B + B * d / stats.avgdl)));
    }
    Ok(-score)
}

unsafe extern "C" fn bm25(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    ctx: *mut ffi::sqlite3_context,
    n_val: c_int,
    _values: *mut *mut ffi::sqlite3_value,
) {
    if n_val > 0 {
        // bm25's column weights are not supported: refuse, never ignore
        return ffi::sqlite3_result_error(
            ctx,
            c"brainctl_bm25 takes no column weights".as_ptr(),
            -1,
        );
    }
    match score(&*api, fts) {
        Ok(v) => ffi::sqlite3_result_double(ctx, v),
        Err(rc) => ffi::sqlite3_result_error_code(ctx, rc),
    }
}

#[cfg(test)]
mod tests {
    use super::varint_sum;

    #[test]
    fn docsize_varints_sum_per_column() {
        assert_eq!(varint_sum(&[]), Some(0));
        assert_eq!(varint_sum(&[0x7f]), Some(127));
        assert_eq!(varint_sum(&[0x81, 0x00]), Some(128));
        assert_eq!(varint_sum(&[0x02, 0x81, 0x01]), Some(131));
        assert_eq!(varint_sum(&[0x83, 0xff, 0x7f, 0x05]), Some(0xffff + 5));
        assert_eq!(varint_sum(&[0x81]), None, "truncated");
        assert_eq!(varint_sum(&[0xff; 9]), None, "beyond a row's token count");
    }
}
