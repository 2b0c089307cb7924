//! The inner bundle as typed data: memory rows, the filter, and the cells'
//! canonical encoding (the framing around them is `writer`'s).
//!
//! Owns the 13 bundle columns (PROTOCOL.md §2) and their order. Cells keep
//! SQLite's storage class (an INTEGER 1 and a REAL 1.0 print differently in
//! Python), so the bytes equal what the reference makes from the same rows.
//! It never touches SQL or keys.

use super::canonical::{newline_indent, write_f64, write_i64, write_str};
use serde_json::{Map, Number, Value};

/// The 13 columns copied into a bundle, in the reference's order.
pub const BUNDLE_COLUMNS: [&str; 13] = [
    "id",
    "agent_id",
    "category",
    "scope",
    "content",
    "confidence",
    "tags",
    "created_at",
    "updated_at",
    "source_event_id",
    "supersedes_id",
    "trust_score",
    "memory_type",
];

/// Column indices of [`BUNDLE_COLUMNS`] sorted by name (canonical order).
pub(crate) const SORTED_COLUMN_INDEX: [usize; 13] = [1, 2, 5, 4, 7, 0, 12, 3, 9, 10, 6, 11, 8];

/// One SQLite value as Python's `sqlite3` would hand it to `json.dumps`.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Cell {
    /// SQL NULL / JSON null.
    #[default]
    Null,
    /// INTEGER.
    Int(i64),
    /// REAL (always finite here).
    Real(f64),
    /// TEXT.
    Text(String),
}

impl Cell {
    /// The text, if this cell holds text.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Cell::Text(s) => Some(s),
            _ => None,
        }
    }

    /// The number as f64, if numeric.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Cell::Int(i) => Some(*i as f64),
            Cell::Real(f) => Some(*f),
            _ => None,
        }
    }

    /// The integer, if this cell holds one.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Cell::Int(i) => Some(*i),
            _ => None,
        }
    }

    fn write_canonical(&self, out: &mut Vec<u8>) {
        match self {
            Cell::Null => out.extend_from_slice(b"null"),
            Cell::Int(i) => write_i64(out, *i),
            Cell::Real(f) => write_f64(out, *f),
            Cell::Text(s) => write_str(out, s),
        }
    }

    fn to_value(&self) -> Value {
        match self {
            Cell::Null => Value::Null,
            Cell::Int(i) => Value::from(*i),
            Cell::Real(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
            Cell::Text(s) => Value::String(s.clone()),
        }
    }

    /// Reads a JSON scalar back into a cell; `None` for arrays, objects,
    /// booleans and integers beyond i64 (no memory column holds those).
    pub fn from_value(v: &Value) -> Option<Cell> {
        match v {
            Value::Null => Some(Cell::Null),
            Value::String(s) => Some(Cell::Text(s.clone())),
            Value::Number(n) if n.is_i64() => n.as_i64().map(Cell::Int),
            Value::Number(n) if n.is_f64() => n.as_f64().map(Cell::Real),
            _ => None,
        }
    }
}

/// One memory row: the 13 bundle columns in [`BUNDLE_COLUMNS`] order.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryRow {
    /// Cells in [`BUNDLE_COLUMNS`] order.
    pub cells: [Cell; 13],
}

impl MemoryRow {
    /// The cell of column `name` (one of [`BUNDLE_COLUMNS`]).
    pub fn get(&self, name: &str) -> &Cell {
        let idx = BUNDLE_COLUMNS
            .iter()
            .position(|c| *c == name)
            .unwrap_or_else(|| panic!("{name} is not a bundle column"));
        &self.cells[idx]
    }

    /// The row's id (column 0), if it is an integer.
    pub fn id(&self) -> Option<i64> {
        self.cells[0].as_i64()
    }

    pub(crate) fn write_canonical(&self, out: &mut Vec<u8>) {
        out.push(b'{');
        for (n, &idx) in SORTED_COLUMN_INDEX.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            out.push(b'"');
            out.extend_from_slice(BUNDLE_COLUMNS[idx].as_bytes());
            out.extend_from_slice(b"\":");
            self.cells[idx].write_canonical(out);
        }
        out.push(b'}');
    }

    /// Writes the row as `json.dumps(indent=2)` lays out [`MemoryRow::to_value`]
    /// with `layout`'s framing, without building it.
    pub(crate) fn write_pretty(&self, out: &mut Vec<u8>, layout: &PrettyLayout) {
        out.push(b'{');
        for (key, cell) in layout.keys.iter().zip(&self.cells) {
            out.extend_from_slice(key);
            match cell {
                // a non-finite real is null in the JSON value
                Cell::Real(f) if !f.is_finite() => out.extend_from_slice(b"null"),
                c => c.write_canonical(out),
            }
        }
        out.extend_from_slice(&layout.close);
    }

    /// JSON object in the reference's column order.
    pub fn to_value(&self) -> Value {
        let mut m = Map::with_capacity(13);
        for (name, cell) in BUNDLE_COLUMNS.iter().zip(&self.cells) {
            m.insert((*name).to_string(), cell.to_value());
        }
        Value::Object(m)
    }

    /// Checks a bundle's JSON row has only scalar bundle columns, without
    /// copying anything.
    pub fn check_value(v: &Value) -> Result<(), String> {
        let obj = v.as_object().ok_or("memory is not a JSON object")?;
        for name in BUNDLE_COLUMNS {
            if let Some(val) = obj.get(name) {
                let scalar = val.is_null() || val.is_string() || val.is_i64() || val.is_f64();
                if !scalar {
                    return Err(format!(
                        "memory field `{name}` has an unsupported JSON type"
                    ));
                }
            }
        }
        Ok(())
    }

    /// Reads a row from a bundle's JSON object. Missing columns are null
    /// (as the reference's `_row_to_dict`); non-scalar values are refused.
    pub fn from_value(v: &Value) -> Result<MemoryRow, String> {
        let obj = v.as_object().ok_or("memory is not a JSON object")?;
        let mut cells: [Cell; 13] = Default::default();
        for (i, name) in BUNDLE_COLUMNS.iter().enumerate() {
            cells[i] = match obj.get(*name) {
                None => Cell::Null,
                Some(val) => Cell::from_value(val)
                    .ok_or_else(|| format!("memory field `{name}` has an unsupported JSON type"))?,
            };
        }
        Ok(MemoryRow { cells })
    }
}

/// The bytes around a row's cells in the file text at one nesting depth
/// (separator, newline, indent, key), computed once for every row.
#[derive(Debug, Clone)]
pub(crate) struct PrettyLayout {
    keys: [Vec<u8>; 13],
    close: Vec<u8>,
}

impl PrettyLayout {
    /// The framing of a row object at nesting `depth`.
    pub(crate) fn at(depth: usize) -> PrettyLayout {
        let keys = std::array::from_fn(|i| {
            let mut key = Vec::with_capacity(32);
            if i > 0 {
                key.push(b',');
            }
            newline_indent(&mut key, depth + 1);
            key.push(b'"');
            key.extend_from_slice(BUNDLE_COLUMNS[i].as_bytes());
            key.extend_from_slice(b"\": ");
            key
        });
        let mut close = Vec::with_capacity(16);
        newline_indent(&mut close, depth);
        close.push(b'}');
        PrettyLayout { keys, close }
    }
}

/// The export filter, echoed into the bundle as `filter_used`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    /// `--filter-agent`.
    pub agent_id: Option<String>,
    /// `--category`.
    pub category: Option<String>,
    /// `--scope`.
    pub scope: Option<String>,
    /// `--created-after` (inclusive, string comparison as the reference).
    pub created_after: Option<String>,
    /// `--created-before` (inclusive).
    pub created_before: Option<String>,
    /// `--ids`: exactly these rows, retired included, other filters ignored.
    pub ids: Option<Vec<i64>>,
}

impl Filter {
    fn opt_str(v: &Option<String>) -> Value {
        v.as_ref().map_or(Value::Null, |s| Value::String(s.clone()))
    }

    /// JSON object in the reference's key order.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("agent_id".into(), Self::opt_str(&self.agent_id));
        m.insert("category".into(), Self::opt_str(&self.category));
        m.insert("scope".into(), Self::opt_str(&self.scope));
        m.insert("created_after".into(), Self::opt_str(&self.created_after));
        m.insert("created_before".into(), Self::opt_str(&self.created_before));
        m.insert(
            "ids".into(),
            self.ids.as_ref().map_or(Value::Null, |ids| {
                ids.iter().copied().map(Value::from).collect()
            }),
        );
        Value::Object(m)
    }
}

/// The inner (hashed) bundle.
#[derive(Debug, Clone, PartialEq)]
pub struct Bundle {
    /// Always 1.
    pub version: i64,
    /// ISO 8601 time of export.
    pub generated_at: String,
    /// The filter that selected the rows.
    pub filter_used: Filter,
    /// Rows ordered by id ascending.
    pub memories: Vec<MemoryRow>,
}

impl Bundle {
    /// JSON object in the reference's key order (for the pretty file).
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("version".into(), Value::from(self.version));
        m.insert(
            "generated_at".into(),
            Value::String(self.generated_at.clone()),
        );
        m.insert("filter_used".into(), self.filter_used.to_value());
        m.insert(
            "memories".into(),
            Value::Array(self.memories.iter().map(MemoryRow::to_value).collect()),
        );
        Value::Object(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::canonical::canonical;

    #[test]
    fn sorted_index_is_sorted() {
        let names: Vec<&str> = SORTED_COLUMN_INDEX
            .iter()
            .map(|&i| BUNDLE_COLUMNS[i])
            .collect();
        let mut sorted = BUNDLE_COLUMNS.to_vec();
        sorted.sort();
        assert_eq!(names, sorted);
    }

    #[test]
    fn fast_path_equals_value_path() {
        let row = MemoryRow {
            cells: [
                Cell::Int(7),
                Cell::Text("a".into()),
                Cell::Text("lesson".into()),
                Cell::Text("global".into()),
                Cell::Text("héllo \"x\"\n".into()),
                Cell::Real(0.1),
                Cell::Text("[\"t\"]".into()),
                Cell::Text("2026-01-01T00:00:00Z".into()),
                Cell::Null,
                Cell::Int(-3),
                Cell::Null,
                Cell::Real(1.0),
                Cell::Text("semantic".into()),
            ],
        };
        let b = Bundle {
            version: 1,
            generated_at: "2026-11-01T12:00:00+00:00".into(),
            filter_used: Filter {
                ids: Some(vec![3, 1]),
                ..Default::default()
            },
            memories: vec![row.clone(), row],
        };
        assert_eq!(b.canonical_bytes(), canonical(&b.to_value()));
    }

    fn cell() -> impl proptest::strategy::Strategy<Value = Cell> {
        use proptest::prelude::*;
        prop_oneof![
            Just(Cell::Null),
            any::<i64>().prop_map(Cell::Int),
            any::<f64>().prop_map(Cell::Real),
            Just(Cell::Real(f64::NAN)),
            any::<String>().prop_map(Cell::Text),
            "[ -~]{0,40}".prop_map(Cell::Text),
        ]
    }

    proptest::proptest! {
        /// The typed file writer lays out exactly what the JSON-value path
        /// does (the reference's `json.dumps(indent=2)`), for any cells,
        /// any number of rows (none included) and any filter.
        #[test]
        fn the_typed_file_text_equals_the_value_path(
            rows in proptest::collection::vec(proptest::collection::vec(cell(), 13), 0..4),
            ids in proptest::option::of(proptest::collection::vec(proptest::prelude::any::<i64>(), 0..3)),
            scope in proptest::option::of("[a-z:]{0,10}"),
            generated_at in proptest::prelude::any::<String>(),
        ) {
            let memories = rows
                .into_iter()
                .map(|c| MemoryRow { cells: c.try_into().expect("13 cells") })
                .collect();
            let b = Bundle {
                version: 1,
                generated_at,
                filter_used: Filter { ids, scope, ..Default::default() },
                memories,
            };
            let w = crate::wallet::Wallet::from_seed(&[5u8; 32]);
            let signed = crate::bundle::SignedBundle::sign(b, &w, "2026-11-24T00:00:00+00:00");
            proptest::prop_assert_eq!(signed.to_file_text(), signed.to_file_text_via_value());
        }
    }
}
