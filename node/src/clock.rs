//! Timestamps in the two shapes the reference writes.
//!
//! Owns formatting only; callers decide which instant.

use time::format_description::well_known::Rfc3339;
use time::{OffsetDateTime, UtcOffset};

/// `YYYY-MM-DDTHH:MM:SS` in UTC.
fn utc_seconds(t: OffsetDateTime) -> String {
    let t = t.to_offset(UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        t.year(),
        t.month() as u8,
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// `2026-11-22T23:41:15Z`: the memory row timestamp format.
pub fn row_timestamp(t: OffsetDateTime) -> String {
    format!("{}Z", utc_seconds(t))
}

/// Python's `datetime.now(timezone.utc).isoformat()`:
/// `2026-11-01T12:00:00.123456+00:00` (micros omitted when zero).
pub fn python_isoformat(t: OffsetDateTime) -> String {
    match t.microsecond() {
        0 => format!("{}+00:00", utc_seconds(t)),
        us => format!("{}.{us:06}+00:00", utc_seconds(t)),
    }
}

/// Now, as a row timestamp.
pub fn now_row() -> String {
    row_timestamp(OffsetDateTime::now_utc())
}

/// Now, as Python `isoformat()`.
pub fn now_iso() -> String {
    python_isoformat(OffsetDateTime::now_utc())
}

/// Parses an ISO 8601 / RFC 3339 time (`Z` or offset; Python's microsecond
/// forms included).
pub fn parse_iso(s: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(s, &Rfc3339).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn formats_match_the_reference() {
        let t = datetime!(2026-11-01 12:00:00.504532 UTC);
        assert_eq!(python_isoformat(t), "2026-11-01T12:00:00.504532+00:00");
        assert_eq!(
            python_isoformat(datetime!(2026-11-01 12:00:00 UTC)),
            "2026-11-01T12:00:00+00:00"
        );
        assert_eq!(row_timestamp(t), "2026-11-01T12:00:00Z");
        assert_eq!(
            parse_iso("2026-11-25T23:41:16.504532+00:00")
                .unwrap()
                .microsecond(),
            504532
        );
    }
}
