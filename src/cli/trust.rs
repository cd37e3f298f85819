//! Artifact trust on the command line: the `--trusted-key` and `--allow-unsigned` arguments of
//! the commands that load artifacts, and `byoc keygen`.

use std::path::PathBuf;

use anyhow::{Context, Result};
use byoc_artifact::keys::{
    config_dir, create_signing_key, user_trust_policy, PUBLIC_KEY_FILE, SECRET_KEY_FILE,
};
use byoc_artifact::TrustPolicy;
use clap::Args;

/// Which artifacts may be loaded.
#[derive(Clone, Debug, Default, Args)]
pub struct TrustArgs {
    /// A public key file (another user's signing.pub) whose signed artifacts are trusted,
    /// besides your own key and the files in BYOC_TRUSTED_KEYS (repeatable).
    #[arg(long = "trusted-key", value_name = "FILE")]
    pub trusted_keys: Vec<PathBuf>,
    /// Load an artifact that is unsigned or not signed by a trusted key. An artifact can hold
    /// native code: this runs whatever its author put there.
    #[arg(long)]
    pub allow_unsigned: bool,
}

impl TrustArgs {
    /// The policy these arguments, the user's key and BYOC_TRUSTED_KEYS describe.
    pub fn policy(&self) -> Result<TrustPolicy> {
        let dir = config_dir()?;
        Ok(user_trust_policy(&dir, &self.trusted_keys)
            .context("cannot read the trusted keys")?
            .allowing_unsigned(self.allow_unsigned))
    }
}

/// Arguments of `byoc keygen`.
#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// Where to write signing.key and signing.pub (default: the byoc configuration directory,
    /// $BYOC_CONFIG_DIR, else $XDG_CONFIG_HOME/byoc, else ~/.config/byoc).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Runs `byoc keygen`.
pub fn keygen(args: &KeygenArgs) -> Result<()> {
    let dir = match &args.dir {
        Some(dir) => dir.clone(),
        None => config_dir()?,
    };
    let key = create_signing_key(&dir).context("cannot make a signing key")?;
    println!("secret key: {}", dir.join(SECRET_KEY_FILE).display());
    println!(
        "public key: {} ({})",
        dir.join(PUBLIC_KEY_FILE).display(),
        key.public_key()
    );
    Ok(())
}
