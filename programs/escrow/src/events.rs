//! The program's events live with its instructions
//! (`crate::sealed::events`); re-exported here.

pub use crate::sealed::events::*;
