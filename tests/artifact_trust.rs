//! Artifact signing and trust, end to end with the csource plugin (whose partitions are
//! shared objects): `byoc build` signs with the user's key (made on first use), `byoc run`
//! loads only artifacts signed by a trusted key (the user's own, `--trusted-key`,
//! `BYOC_TRUSTED_KEYS`) unless `--allow-unsigned`, an artifact whose embedded shared object
//! was altered and whose checksums were recomputed is refused before any plugin loads it, and
//! native sections are checked before `dlopen`. Every test uses its own configuration
//! directories (`BYOC_CONFIG_DIR`), never the user's.

mod plugin_build;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use anyhow::{anyhow, ensure, Context, Result};
use byoc_artifact::Artifact;
use rand::{Rng, SeedableRng};
use sha2::{Digest, Sha256};

const MODEL: &str = "examples/models/small_cnn.relay";
/// Header bytes before the manifest: magic, version, manifest length, manifest SHA-256.
const HEADER_LEN: usize = 8 + 4 + 8 + 32;
/// The signature block at the end of a signed artifact: tag, public key, signature.
const SIGNATURE_BLOCK_LEN: usize = 8 + 32 + 64;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn plugin_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| plugin_build::build_next_to_byoc(&root(), &["byoc-plugin-csource"]))
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = plugin_dir()
        .join("trust-tests")
        .join(format!("{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Runs byoc with `config` as its configuration directory (where its signing key lives).
fn byoc(config: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    plugin_dir();
    Command::new(env!("CARGO_BIN_EXE_byoc"))
        .current_dir(root())
        .args(args)
        .env("BYOC_CONFIG_DIR", config)
        .env_remove("BYOC_TRUSTED_KEYS")
        .envs(env.iter().copied())
        .output()
        .expect("byoc runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn succeeded(out: Output) -> Result<String> {
    ensure!(out.status.success(), "byoc failed: {}", stderr(&out));
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Asserts exit code 2 and returns standard error.
fn refused(out: Output) -> Result<String> {
    ensure!(
        out.status.code() == Some(2),
        "expected exit code 2, got {:?}; stderr {}",
        out.status.code(),
        stderr(&out)
    );
    Ok(stderr(&out))
}

/// Builds the model for csource into `dir/name`, signed by the key of `config`.
fn build(config: &Path, dir: &Path, name: &str) -> Result<PathBuf> {
    let out = dir.join(name);
    let stdout = succeeded(byoc(
        config,
        &["build", MODEL, "--target", "csource", "-o", &path(&out)],
        &[],
    ))?;
    ensure!(stdout.contains("signed by key "), "{stdout}");
    Ok(out)
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

fn run(config: &Path, artifact: &Path, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let mut args = vec!["run", "--random-inputs", "1"];
    args.extend_from_slice(extra);
    let artifact = path(artifact);
    args.push(&artifact);
    byoc(config, &args, env)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An artifact's parts as an attacker sees them: the manifest, where the payload starts, and
/// the byte range of the first partition's embedded shared object.
struct Layout {
    manifest: serde_json::Value,
    payload: usize,
    shared_object: std::ops::Range<usize>,
}

fn layout(bytes: &[u8]) -> Result<Layout> {
    let manifest_len = usize::try_from(u64::from_le_bytes(bytes[12..20].try_into()?))?;
    let manifest: serde_json::Value =
        serde_json::from_slice(&bytes[HEADER_LEN..HEADER_LEN + manifest_len])?;
    let payload = HEADER_LEN + manifest_len;
    let section = &manifest["partitions"][0]["section"];
    let offset = section["offset"].as_u64().context("no partition offset")? as usize;
    let len = section["len"].as_u64().context("no partition length")? as usize;
    let part = payload + offset;
    // The csource module: magic, version, a u32 header length, the header, the shared object.
    let header = u32::from_le_bytes(bytes[part + 12..part + 16].try_into()?) as usize;
    let start = part + 16 + header;
    ensure!(
        bytes[start..start + 4] == *b"\x7fELF",
        "no ELF object where expected"
    );
    Ok(Layout {
        manifest,
        payload,
        shared_object: start..part + len,
    })
}

/// Recomputes both SHA-256 checksums of an artifact whose payload was altered (what anyone
/// can do), keeping everything after the payload (the signature block) as it was.
fn recompute_checksums(bytes: &mut [u8], layout: &Layout, payload_end: usize) -> Result<()> {
    let mut manifest = layout.manifest.clone();
    manifest["checksum"] = hex(&Sha256::digest(&bytes[layout.payload..payload_end])).into();
    let manifest = serde_json::to_vec(&manifest)?;
    let old_len = layout.payload - HEADER_LEN;
    ensure!(manifest.len() == old_len, "the manifest changed length");
    bytes[HEADER_LEN..layout.payload].copy_from_slice(&manifest);
    let digest = Sha256::digest(&manifest);
    bytes[20..HEADER_LEN].copy_from_slice(&digest);
    Ok(())
}

#[test]
fn tampered_shared_objects_with_recomputed_checksums_are_refused_before_loading() -> Result<()> {
    let dir = scratch("tamper");
    let config = dir.join("config");
    let good = build(&config, &dir, "m.byoc")?;
    succeeded(run(&config, &good, &[], &[]))?;
    let bytes = std::fs::read(&good)?;
    let layout = layout(&bytes)?;
    let payload_end = bytes.len() - SIGNATURE_BLOCK_LEN;
    let mut rng = rand::rngs::StdRng::seed_from_u64(15);
    let bad = dir.join("bad.byoc");
    for case in 0..100 {
        let mut tampered = bytes.clone();
        for _ in 0..rng.gen_range(1..=8) {
            let at = rng.gen_range(layout.shared_object.clone());
            tampered[at] ^= rng.gen_range(1..=255u8);
        }
        recompute_checksums(&mut tampered, &layout, payload_end)?;
        // The checksums hold: only the signature tells this file from the one built.
        Artifact::from_bytes(&tampered).with_context(|| format!("case {case}: checksums"))?;
        std::fs::write(&bad, &tampered)?;
        let err = refused(run(&config, &bad, &[], &[])).with_context(|| format!("case {case}"))?;
        ensure!(
            err.contains("signature does not match its contents")
                && !err.contains("plugin 'csource'"),
            "case {case}: {err}"
        );
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

#[test]
fn only_artifacts_signed_by_trusted_keys_load() -> Result<()> {
    let dir = scratch("keys");
    let (alice, bob) = (dir.join("alice"), dir.join("bob"));
    let artifact = build(&alice, &dir, "alice.byoc")?;
    let alice_pub = path(&alice.join("signing.pub"));
    ensure!(
        alice.join("signing.key").is_file(),
        "no key made on first use"
    );

    // Bob has no key of his own yet, then one that is not Alice's.
    let err = refused(run(&bob, &artifact, &[], &[]))?;
    ensure!(
        err.contains("which is not trusted") && err.contains(&path(&artifact)),
        "{err}"
    );
    succeeded(byoc(&bob, &["keygen"], &[]))?;
    let err = refused(run(&bob, &artifact, &[], &[]))?;
    ensure!(err.contains("which is not trusted"), "{err}");
    succeeded(run(&bob, &artifact, &["--trusted-key", &alice_pub], &[]))?;
    let list = format!("{}:{alice_pub}", path(&bob.join("signing.pub")));
    succeeded(run(&bob, &artifact, &[], &[("BYOC_TRUSTED_KEYS", &list)]))?;
    succeeded(run(&bob, &artifact, &["--allow-unsigned"], &[]))?;

    // An unsigned artifact: the signature block cut off.
    let bytes = std::fs::read(&artifact)?;
    let unsigned = dir.join("unsigned.byoc");
    std::fs::write(&unsigned, &bytes[..bytes.len() - SIGNATURE_BLOCK_LEN])?;
    let err = refused(run(&alice, &unsigned, &[], &[]))?;
    ensure!(
        err.contains("the artifact is not signed") && err.contains("--allow-unsigned"),
        "{err}"
    );
    succeeded(run(&alice, &unsigned, &["--allow-unsigned"], &[]))?;

    // Re-signed by Bob: Alice does not trust Bob unless told to.
    let resigned = dir.join("resigned.byoc");
    let stdout = succeeded(byoc(
        &bob,
        &[
            "build",
            MODEL,
            "--target",
            "csource",
            "-o",
            &path(&resigned),
        ],
        &[],
    ))?;
    ensure!(stdout.contains("signed by key "), "{stdout}");
    refused(run(&alice, &resigned, &[], &[]))?;
    let bob_pub = path(&bob.join("signing.pub"));
    succeeded(run(&alice, &resigned, &["--trusted-key", &bob_pub], &[]))?;

    // A key file that is not one, and a missing one, name the file.
    let err = refused(run(&alice, &artifact, &["--trusted-key", MODEL], &[]))?;
    ensure!(
        err.contains(MODEL) && err.contains("not a byoc public key file"),
        "{err}"
    );
    let missing = path(&dir.join("missing.pub"));
    let err = refused(run(
        &alice,
        &artifact,
        &[],
        &[("BYOC_TRUSTED_KEYS", &missing)],
    ))?;
    ensure!(err.contains(&missing), "{err}");

    // keygen never overwrites a key.
    let err = refused(byoc(&bob, &["keygen"], &[]))?;
    ensure!(
        err.contains(&path(&bob.join("signing.key"))) && err.contains("already exists"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

#[test]
fn native_sections_are_checked_before_dlopen() -> Result<()> {
    let dir = scratch("elf");
    let config = dir.join("config");
    let good = build(&config, &dir, "m.byoc")?;
    let bytes = std::fs::read(&good)?;
    let layout = layout(&bytes)?;
    let payload_end = bytes.len() - SIGNATURE_BLOCK_LEN;
    let so = layout.shared_object.start;
    // (what to change in the ELF header, the message expected) - accepted with
    // --allow-unsigned, so only the native-code check stands between the bytes and dlopen.
    let cases: [(usize, &[u8], &str); 3] = [
        (0, b"\x7fELG", "not an ELF file"),
        (18, &40u16.to_le_bytes(), "not for this machine"),
        (16, &2u16.to_le_bytes(), "not a shared object"),
    ];
    let bad = dir.join("bad.byoc");
    for (at, patch, want) in cases {
        let mut tampered = bytes[..payload_end].to_vec();
        tampered[so + at..so + at + patch.len()].copy_from_slice(patch);
        recompute_checksums(&mut tampered, &layout, payload_end)?;
        std::fs::write(&bad, &tampered)?;
        let err = refused(run(&config, &bad, &["--allow-unsigned"], &[]))?;
        ensure!(
            err.contains("is not a loadable shared object") && err.contains(want),
            "{want}: {err}"
        );
    }
    // The entry symbol renamed in the dynamic string table.
    let symbol = layout.manifest["partitions"][0]["function"]
        .as_str()
        .ok_or_else(|| anyhow!("no function name"))?
        .to_string();
    let mut tampered = bytes[..payload_end].to_vec();
    let region = &mut tampered[layout.shared_object.clone()];
    let mut renamed = 0;
    for i in 0..region.len().saturating_sub(symbol.len()) {
        if region[i..].starts_with(symbol.as_bytes()) && region[i + symbol.len()] == 0 {
            region[i] = b'X';
            renamed += 1;
        }
    }
    ensure!(renamed > 0, "symbol {symbol} not found in the object");
    recompute_checksums(&mut tampered, &layout, payload_end)?;
    std::fs::write(&bad, &tampered)?;
    let err = refused(run(&config, &bad, &["--allow-unsigned"], &[]))?;
    ensure!(
        err.contains(&format!("does not export the symbol '{symbol}'")),
        "{err}"
    );
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

/// The signature is checked before anything in the artifact is acted on: an unsigned file that
/// names a custom datatype (which loads the datatype plugins, running their initializers) is
/// refused without a single plugin opened. glibc's `LD_DEBUG=files` lists every object the
/// process opens.
#[test]
fn no_plugin_loads_before_the_signature_is_checked() -> Result<()> {
    let dir = scratch("trust-order");
    let config = dir.join("config");
    let artifact = dir.join("custom.byoc");
    std::fs::write(
        &artifact,
        b"def @main(%x: Tensor[(2), custom[posites2]16]) { %x }",
    )?;
    for command in ["run", "bench"] {
        let mut args = vec![command, "--random-inputs", "1"];
        let file = path(&artifact);
        args.push(&file);
        let out = byoc(&config, &args, &[("LD_DEBUG", "files")]);
        let err = refused(out)?;
        ensure!(err.contains("the artifact is not signed"), "{err}");
        let opened: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("file=") && l.contains("byoc_plugin"))
            .collect();
        ensure!(
            opened.is_empty(),
            "{command} opened plugins first: {opened:?}"
        );
    }
    Ok(())
}
