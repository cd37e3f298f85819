//! The artifact format (`model.byoc`): one file holding a compiled model.
//!
//! Layout (integers little-endian):
//!
//! ```text
//! "BYOCART\0"        8 bytes magic
//! format version     u32
//! manifest length    u64
//! manifest SHA-256   32 bytes (of the manifest JSON)
//! manifest           JSON: format and byoc versions, targets with plugin name and version,
//!                    the payload's SHA-256, and the (offset, length) of every section
//! payload            the host program, the parameters, each partition's compiled bytes
//! ```
//!
//! The host program is the partitioned module as Relay text, with two changes that keep it
//! small: every constant of a host function is replaced by a placeholder (an `int64` scalar
//! holding the index of its parameter section, stored as raw bytes), and each external
//! function keeps its signature and attributes but gets a zero-filled body of its result
//! type (its real body lives, compiled, in its partition section). Loading checks the magic,
//! the format version, both checksums and every section's bounds before anything is parsed,
//! then resolves each partition's plugin by name and checks its version.
//!
//! `byoc build` signs the file ([`signature`]: an ed25519 signature over every byte above,
//! appended as a block) with the user's key ([`keys`]); commands that load an artifact check
//! the signature against the trusted keys ([`TrustPolicy`]) before reading anything else, and
//! plugins check native sections ([`byoc_sdk::native`]) before loading them.

mod format;
mod host;
pub mod io;
pub mod keys;
pub mod signature;

pub use format::{Artifact, ArtifactError, Partition, TargetEntry, ARTIFACT_MAGIC, FORMAT_VERSION};
pub use signature::{PublicKey, SecretKey, Trust, TrustError, TrustPolicy};
