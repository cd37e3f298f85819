//! Artifact signatures: who built an artifact, checked before anything in it is loaded.
//!
//! A signed artifact is the artifact's bytes (header, manifest and every payload section: the
//! host program, the parameters, each partition's compiled bytes and any section added later)
//! followed by a signature block:
//!
//! ```text
//! "BYOCSIG1"     8 bytes tag
//! public key     32 bytes: the signer's ed25519 key
//! signature      64 bytes: ed25519 over every byte before the block
//! ```
//!
//! The SHA-256 checksums inside the artifact catch damage, not intent: anyone who alters a
//! section can recompute them. The signature can only be made with the signer's secret key,
//! so [`TrustPolicy::check`] accepts an artifact only when its block verifies under one of
//! the trusted public keys. An artifact without a block (or whose last bytes merely resemble
//! one) is unsigned; it is refused unless the policy allows unsigned artifacts.

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use thiserror::Error;

/// The tag that starts a signature block.
pub const SIGNATURE_TAG: &[u8; 8] = b"BYOCSIG1";
/// Bytes of a signature block: tag, public key, signature.
pub const SIGNATURE_BLOCK_LEN: usize = 8 + 32 + 64;

/// An ed25519 public key that verifies artifact signatures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PublicKey(pub(super) VerifyingKey);

impl PublicKey {
    /// The key's 32 bytes.
    pub fn to_bytes(&self) -> [u8; 32] {
        self.0.to_bytes()
    }

    /// The key from its 32 bytes; `None` when they are not a valid ed25519 point.
    pub fn from_bytes(bytes: &[u8; 32]) -> Option<PublicKey> {
        VerifyingKey::from_bytes(bytes).ok().map(PublicKey)
    }

    /// The key in hexadecimal (as key files and messages show it).
    pub fn to_hex(&self) -> String {
        hex(&self.to_bytes())
    }
}

impl std::fmt::Display for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_hex())
    }
}

/// An ed25519 secret key that signs artifacts.
pub struct SecretKey(pub(super) SigningKey);

impl SecretKey {
    /// The key of a 32-byte seed.
    pub fn from_seed(seed: &[u8; 32]) -> SecretKey {
        SecretKey(SigningKey::from_bytes(seed))
    }

    /// The seed (what a key file stores).
    pub fn seed(&self) -> [u8; 32] {
        self.0.to_bytes()
    }

    /// The matching public key.
    pub fn public_key(&self) -> PublicKey {
        PublicKey(self.0.verifying_key())
    }

    /// `artifact` (the bytes of an unsigned artifact) followed by its signature block.
    pub fn sign(&self, artifact: &[u8]) -> Vec<u8> {
        let signature = self.0.sign(artifact);
        let mut out = Vec::with_capacity(artifact.len() + SIGNATURE_BLOCK_LEN);
        out.extend_from_slice(artifact);
        out.extend_from_slice(SIGNATURE_TAG);
        out.extend_from_slice(&self.public_key().to_bytes());
        out.extend_from_slice(&signature.to_bytes());
        out
    }
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretKey(public {})", self.public_key())
    }
}

/// Why an artifact is not trusted.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TrustError {
    /// No signature block.
    #[error("the artifact is not signed; sign it by building it with `byoc build`, or pass --allow-unsigned to load it anyway (it may contain native code)")]
    Unsigned,
    /// The block's public key is not a valid ed25519 key.
    #[error("the artifact's signature block holds an invalid public key")]
    InvalidKey,
    /// The signature does not verify: the artifact was modified after signing.
    #[error("the artifact's signature does not match its contents (signed by key {key}): it was modified after signing")]
    BadSignature {
        /// The key the block names.
        key: String,
    },
    /// A valid signature by a key that is not trusted.
    #[error("the artifact is signed by key {key}, which is not trusted; trust it with --trusted-key FILE or BYOC_TRUSTED_KEYS, or pass --allow-unsigned")]
    Untrusted {
        /// The signer's key.
        key: String,
    },
}

/// How an artifact was accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trust {
    /// Signed by this trusted key.
    Signed(PublicKey),
    /// Accepted without a valid trusted signature because the policy allows it.
    AllowedUnsigned,
}

/// The artifact's bytes without the signature block, and the block's key and signature.
fn split(bytes: &[u8]) -> Option<(&[u8], [u8; 32], [u8; 64])> {
    let at = bytes.len().checked_sub(SIGNATURE_BLOCK_LEN)?;
    let (body, block) = bytes.split_at(at);
    if &block[..8] != SIGNATURE_TAG {
        return None;
    }
    let key = block[8..40].try_into().ok()?;
    let signature = block[40..].try_into().ok()?;
    Some((body, key, signature))
}

/// The artifact's bytes without its signature block (all of `bytes` when unsigned).
pub fn unsigned_part(bytes: &[u8]) -> &[u8] {
    split(bytes).map_or(bytes, |(body, _, _)| body)
}

/// Which artifacts may be loaded: those signed by a trusted key, and all of them when
/// unsigned artifacts are allowed.
#[derive(Clone, Debug, Default)]
pub struct TrustPolicy {
    trusted: Vec<PublicKey>,
    allow_unsigned: bool,
}

impl TrustPolicy {
    /// A policy trusting `keys`.
    pub fn new(keys: impl IntoIterator<Item = PublicKey>) -> TrustPolicy {
        TrustPolicy {
            trusted: keys.into_iter().collect(),
            allow_unsigned: false,
        }
    }

    /// This policy, also accepting unsigned and badly signed artifacts when `allow` is true.
    pub fn allowing_unsigned(mut self, allow: bool) -> TrustPolicy {
        self.allow_unsigned = allow;
        self
    }

    /// The trusted keys.
    pub fn trusted(&self) -> &[PublicKey] {
        &self.trusted
    }

    /// Checks `bytes` (a whole artifact file) and returns the artifact without its signature
    /// block, ready for [`super::Artifact::from_bytes`].
    pub fn check<'a>(&self, bytes: &'a [u8]) -> Result<(&'a [u8], Trust), TrustError> {
        match (self.verify(bytes), self.allow_unsigned) {
            (Ok(key), _) => Ok((unsigned_part(bytes), Trust::Signed(key))),
            (Err(_), true) => Ok((unsigned_part(bytes), Trust::AllowedUnsigned)),
            (Err(e), false) => Err(e),
        }
    }

    fn verify(&self, bytes: &[u8]) -> Result<PublicKey, TrustError> {
        let (body, key, signature) = split(bytes).ok_or(TrustError::Unsigned)?;
        let key = PublicKey::from_bytes(&key).ok_or(TrustError::InvalidKey)?;
        key.0
            .verify_strict(body, &Signature::from_bytes(&signature))
            .map_err(|_| TrustError::BadSignature { key: key.to_hex() })?;
        if !self.trusted.contains(&key) {
            return Err(TrustError::Untrusted { key: key.to_hex() });
        }
        Ok(key)
    }
}

/// Lowercase hexadecimal of `bytes`.
pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u8) -> SecretKey {
        SecretKey::from_seed(&[n; 32])
    }

    #[test]
    fn only_trusted_intact_signatures_are_accepted() {
        let body = b"BYOCART\0 artifact bytes".to_vec();
        let signed = key(1).sign(&body);
        assert_eq!(signed.len(), body.len() + SIGNATURE_BLOCK_LEN);
        let trusting = TrustPolicy::new([key(1).public_key()]);
        let (got, trust) = trusting.check(&signed).unwrap();
        assert_eq!(got, &body[..]);
        assert_eq!(trust, Trust::Signed(key(1).public_key()));

        let other = TrustPolicy::new([key(2).public_key()]);
        assert!(matches!(
            other.check(&signed),
            Err(TrustError::Untrusted { .. })
        ));
        assert_eq!(trusting.check(&body), Err(TrustError::Unsigned));
        for i in 0..signed.len() {
            let mut bad = signed.clone();
            bad[i] ^= 0x40;
            assert!(trusting.check(&bad).is_err(), "flip at byte {i} accepted");
        }
        let allowing = other.allowing_unsigned(true);
        assert_eq!(allowing.check(&body).unwrap().1, Trust::AllowedUnsigned);
        assert_eq!(allowing.check(&signed).unwrap().0, &body[..]);
    }
}
