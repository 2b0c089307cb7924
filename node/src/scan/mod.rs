//! Content scanners: secrets/PII before export, prompt injection on import.
//!
//! Pure functions over text; they never see keys and never log matches.

pub mod injection;
pub mod sensitive;
