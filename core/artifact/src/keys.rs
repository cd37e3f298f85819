//! Key files: the user's signing key, created on first use, and public key files to trust.
//!
//! The user's key lives in the byoc configuration directory ([`config_dir`]): `signing.key`
//! holds the secret key (mode 0600) and `signing.pub` the public key to give to others. Both
//! are one line of text, a kind word and 64 hexadecimal digits:
//!
//! ```text
//! byoc-ed25519-secret 3f1c...   (signing.key)
//! byoc-ed25519-public 9a07...   (signing.pub)
//! ```
//!
//! Creation is race-free: a new key is written to a private temporary file and linked into
//! place only if no key exists yet, so concurrent first uses agree on one key.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use rand::RngCore as _;
use thiserror::Error;

use super::signature::{hex, PublicKey, SecretKey, TrustPolicy};

/// Overrides the configuration directory (tests use a temporary one).
pub const CONFIG_DIR_ENV: &str = "BYOC_CONFIG_DIR";
/// Public key files to trust besides the user's own, separated like `PATH` entries.
pub const TRUSTED_KEYS_ENV: &str = "BYOC_TRUSTED_KEYS";
/// The secret key's file name in the configuration directory.
pub const SECRET_KEY_FILE: &str = "signing.key";
/// The public key's file name in the configuration directory.
pub const PUBLIC_KEY_FILE: &str = "signing.pub";

const SECRET_KIND: &str = "byoc-ed25519-secret";
const PUBLIC_KIND: &str = "byoc-ed25519-public";

/// Errors of finding, reading and writing key files; each names the file.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyError {
    /// No configuration directory can be derived from the environment.
    #[error("no configuration directory for the signing key: set BYOC_CONFIG_DIR, XDG_CONFIG_HOME or HOME")]
    NoConfigDir,
    /// A file could not be read or written.
    #[error("'{path}': {message}")]
    Io {
        /// The file.
        path: String,
        /// The system's reason.
        message: String,
    },
    /// `byoc keygen` would overwrite a key.
    #[error("'{path}' already exists; remove it first to make a new key (artifacts it signed will no longer be trusted)")]
    Exists {
        /// The existing secret key file.
        path: String,
    },
    /// A file that is not a key file of the expected kind.
    #[error(
        "'{path}': not a byoc {kind} key file (expected one line '{kind_word} <64 hex digits>')"
    )]
    Malformed {
        /// The file.
        path: String,
        /// `secret` or `public`.
        kind: &'static str,
        /// The line's first word.
        kind_word: &'static str,
    },
}

fn io_error(path: &Path) -> impl Fn(std::io::Error) -> KeyError + '_ {
    move |e| KeyError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

/// The configuration directory: `$BYOC_CONFIG_DIR`, else `$XDG_CONFIG_HOME/byoc`, else
/// `$HOME/.config/byoc`.
pub fn config_dir() -> Result<PathBuf, KeyError> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var(CONFIG_DIR_ENV) {
        return Ok(PathBuf::from(dir));
    }
    if let Some(dir) = var("XDG_CONFIG_HOME") {
        return Ok(PathBuf::from(dir).join("byoc"));
    }
    var("HOME")
        .map(|home| PathBuf::from(home).join(".config").join("byoc"))
        .ok_or(KeyError::NoConfigDir)
}

/// The 32 bytes of a key file's one line `kind_word <hex>`.
fn parse_key_line(text: &str, kind_word: &str) -> Option<[u8; 32]> {
    let mut words = text.split_whitespace();
    if words.next() != Some(kind_word) {
        return None;
    }
    let digits = words.next()?;
    if words.next().is_some() || digits.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(digits.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// Reads a public key file (`signing.pub` of another user, or of this one).
pub fn read_public_key(path: &Path) -> Result<PublicKey, KeyError> {
    let text = byoc_ir::memory::read_file_to_string(path).map_err(io_error(path))?;
    parse_key_line(&text, PUBLIC_KIND)
        .and_then(|b| PublicKey::from_bytes(&b))
        .ok_or_else(|| KeyError::Malformed {
            path: path.display().to_string(),
            kind: "public",
            kind_word: PUBLIC_KIND,
        })
}

/// Reads a secret key file.
pub fn read_secret_key(path: &Path) -> Result<SecretKey, KeyError> {
    let text = byoc_ir::memory::read_file_to_string(path).map_err(io_error(path))?;
    parse_key_line(&text, SECRET_KIND)
        .map(|seed| SecretKey::from_seed(&seed))
        .ok_or_else(|| KeyError::Malformed {
            path: path.display().to_string(),
            kind: "secret",
            kind_word: SECRET_KIND,
        })
}

/// Writes `text` to a new private (0600) file beside `path` and links it to `path` unless
/// `path` exists; returns whether this call created `path`.
fn create_exclusive(path: &Path, text: &str) -> Result<bool, KeyError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut seed = [0u8; 8];
    rand::rngs::OsRng.fill_bytes(&mut seed);
    let tmp = dir.join(format!(".{}.{}", hex(&seed), std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options
        .open(&tmp)
        .and_then(|mut f| f.write_all(text.as_bytes()).and_then(|()| f.sync_all()))
        .map_err(io_error(&tmp));
    let linked = written.and_then(|()| match std::fs::hard_link(&tmp, path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(io_error(path)(e)),
    });
    // The temporary name is removed whether or not the link was made.
    let _ = std::fs::remove_file(&tmp);
    linked
}

/// The user's signing key in `dir`, created (with its public key file) when there is none.
/// Returns the key and whether it was created now.
pub fn load_or_create_signing_key(dir: &Path) -> Result<(SecretKey, bool), KeyError> {
    let secret = dir.join(SECRET_KEY_FILE);
    let created = if secret.exists() {
        false
    } else {
        std::fs::create_dir_all(dir).map_err(io_error(dir))?;
        let mut seed = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut seed);
        create_exclusive(&secret, &format!("{SECRET_KIND} {}\n", hex(&seed)))?
    };
    // Read back: when another process created the key first, its key wins.
    let key = read_secret_key(&secret)?;
    let public = dir.join(PUBLIC_KEY_FILE);
    let line = format!("{PUBLIC_KIND} {}\n", key.public_key().to_hex());
    if byoc_ir::memory::read_file_to_string(&public)
        .ok()
        .as_deref()
        != Some(line.as_str())
    {
        let tmp = dir.join(format!("{PUBLIC_KEY_FILE}.{}", std::process::id()));
        std::fs::write(&tmp, &line).map_err(io_error(&tmp))?;
        std::fs::rename(&tmp, &public).map_err(io_error(&public))?;
    }
    Ok((key, created))
}

/// Creates a new signing key in `dir`; refuses when `dir` already holds one (a key that
/// signed artifacts is never overwritten). Returns the key.
pub fn create_signing_key(dir: &Path) -> Result<SecretKey, KeyError> {
    let secret = dir.join(SECRET_KEY_FILE);
    if secret.exists() {
        return Err(KeyError::Exists {
            path: secret.display().to_string(),
        });
    }
    match load_or_create_signing_key(dir)? {
        (key, true) => Ok(key),
        (_, false) => Err(KeyError::Exists {
            path: secret.display().to_string(),
        }),
    }
}

/// The keys a user trusts: their own (when `dir` holds a signing key), each file of
/// `extra`, and each file named by [`TRUSTED_KEYS_ENV`].
pub fn user_trust_policy(dir: &Path, extra: &[PathBuf]) -> Result<TrustPolicy, KeyError> {
    let mut keys = Vec::new();
    let secret = dir.join(SECRET_KEY_FILE);
    if secret.exists() {
        keys.push(read_secret_key(&secret)?.public_key());
    }
    let from_env: Vec<PathBuf> = std::env::var_os(TRUSTED_KEYS_ENV)
        .map(|v| {
            std::env::split_paths(&v)
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default();
    for file in extra.iter().chain(&from_env) {
        keys.push(read_public_key(file)?);
    }
    Ok(TrustPolicy::new(keys))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_created_once_and_read_back() {
        let dir = std::env::temp_dir().join(format!("byoc-keys-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (first, created) = load_or_create_signing_key(&dir).unwrap();
        assert!(created);
        let (again, created) = load_or_create_signing_key(&dir).unwrap();
        assert!(!created);
        assert_eq!(first.seed(), again.seed());
        let public = read_public_key(&dir.join(PUBLIC_KEY_FILE)).unwrap();
        assert_eq!(public, first.public_key());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(dir.join(SECRET_KEY_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "the secret key is readable by others");
        }
        let err = read_public_key(&dir.join(SECRET_KEY_FILE)).unwrap_err();
        assert!(matches!(err, KeyError::Malformed { kind: "public", .. }));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
