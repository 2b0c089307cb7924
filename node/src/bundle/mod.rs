//! Bundles and manifests: canonical JSON, the typed bundle, signing and
//! verification.
//!
//! Owns every byte that is hashed or signed. Never touches SQL, files or
//! the network: callers read rows (`store`) and write files (`cli`).

pub mod canonical;
pub mod manifest;
pub mod model;
pub mod signed;
mod transcode;
pub mod writer;

pub use canonical::{canonical, python_pretty};
pub use manifest::{
    manifest_hash, sign_manifest, verify_manifest, verify_manifest_by, ManifestError,
};
pub use model::{Bundle, Cell, Filter, MemoryRow, BUNDLE_COLUMNS};
pub use signed::{
    verify_file_text, verify_text, verify_value, SignedBundle, Verdict, VerifiedBundle,
    VerifyReport,
};
pub use writer::{CanonicalWriter, FileTextWriter};
