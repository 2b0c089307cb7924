//! The program's accounts live with the instructions that own them
//! (`crate::sealed::state`); re-exported here.

pub use crate::sealed::state::*;
