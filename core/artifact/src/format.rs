//! Writing and reading artifact files (see the module docs of [`super`]).

use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use thiserror::Error;

use super::host::{lift, restore};
use super::signature::{hex, unsigned_part, SecretKey, Trust, TrustError, TrustPolicy};
use byoc_exec::plugin::external_functions;
use byoc_exec::{ExternalModule, ExternalModules};
use byoc_ir::infer_types;
use byoc_ir::tensor::Tensor;
use byoc_ir::text::{parse_module, print_module};
use byoc_ir::{DType, Module, TensorType};
use byoc_sdk::{CompileOptions, Plugin, PluginError};

/// The first bytes of every artifact.
pub const ARTIFACT_MAGIC: &[u8; 8] = b"BYOCART\0";
/// The artifact format version this byoc writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// Bytes before the manifest: magic, version, manifest length, manifest SHA-256.
const HEADER_LEN: usize = 8 + 4 + 8 + 32;

/// Errors of writing, reading and loading artifacts; each says what is wrong and where.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum ArtifactError {
    /// The file could not be read or written.
    #[error("'{path}': {message}")]
    Io {
        /// The file.
        path: String,
        /// The system's reason.
        message: String,
    },
    /// The bytes do not start with the artifact magic.
    #[error("not a byoc artifact (the file does not start with the byoc artifact magic)")]
    NotAnArtifact,
    /// The file ends early.
    #[error("truncated artifact: {what} needs {needed} bytes but the file has {available}")]
    Truncated {
        /// The part that does not fit.
        what: String,
        /// Bytes needed.
        needed: u64,
        /// Bytes there.
        available: u64,
    },
    /// Another format version.
    #[error("artifact format version {found} is not supported (this byoc reads version {supported}); rebuild the artifact with this byoc")]
    FormatVersion {
        /// The file's version.
        found: u32,
        /// The version this byoc reads.
        supported: u32,
    },
    /// A checksum does not match: the file was modified or damaged.
    #[error("artifact {what} checksum mismatch: the file was modified or damaged")]
    Checksum {
        /// `manifest` or `payload`.
        what: &'static str,
    },
    /// The manifest is not the expected JSON.
    #[error("malformed artifact manifest: {0}")]
    Manifest(String),
    /// A section outside the payload.
    #[error("artifact section {what} (offset {offset}, {len} bytes) lies outside the payload of {payload} bytes")]
    Section {
        /// Which section.
        what: String,
        /// Its offset.
        offset: u64,
        /// Its length.
        len: u64,
        /// The payload's length.
        payload: u64,
    },
    /// The host program could not be written or read back.
    #[error("artifact host program: {0}")]
    Host(String),
    /// A plugin needed by a partition is not available.
    #[error("partition @{function} needs plugin '{plugin}' (target '{target}'), which is not available: {reason}")]
    MissingPlugin {
        /// The partition.
        function: String,
        /// The plugin's name.
        plugin: String,
        /// The target.
        target: String,
        /// Why it could not be found.
        reason: String,
    },
    /// The plugin found has another version than the one that built the artifact.
    #[error("plugin '{plugin}' version {loaded} cannot load partition @{function}, which was built with version {built_with}; rebuild the artifact or load plugin version {built_with}")]
    PluginVersion {
        /// The partition.
        function: String,
        /// The plugin.
        plugin: String,
        /// The version recorded in the artifact.
        built_with: String,
        /// The version loaded.
        loaded: String,
    },
    /// A plugin failed to serialize or deserialize a partition.
    #[error("plugin '{plugin}' failed to {operation} partition @{function}: {error}")]
    Plugin {
        /// `serialize` or `deserialize`.
        operation: &'static str,
        /// The partition.
        function: String,
        /// The plugin.
        plugin: String,
        /// The plugin's error.
        error: PluginError,
    },
    /// The artifact is not signed by a trusted key.
    #[error("refused: {0}")]
    Untrusted(TrustError),
    /// An external function without a compiled partition.
    #[error("external function @{function} has no compiled partition")]
    MissingPartition {
        /// The function.
        function: String,
    },
}

/// A target of the artifact and the plugin that compiled it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetEntry {
    /// The target name.
    pub target: String,
    /// The plugin name.
    pub plugin: String,
    /// The plugin version.
    pub plugin_version: String,
}

/// One compiled partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    /// The external function.
    pub function: String,
    /// Its target and plugin.
    pub target: TargetEntry,
    /// The plugin's serialized module.
    pub bytes: Vec<u8>,
}

/// A compiled model: the host program and each partition's compiled bytes.
#[derive(Clone, Debug)]
pub struct Artifact {
    /// The partitioned module (after [`Artifact::from_bytes`]: external functions have
    /// zero-filled stub bodies; their code is in the partitions).
    pub module: Module,
    /// The byoc version that wrote it.
    pub byoc_version: String,
    /// The partitions, by function name.
    pub partitions: Vec<Partition>,
}

#[derive(Serialize, Deserialize)]
struct Section {
    offset: u64,
    len: u64,
}

#[derive(Serialize, Deserialize)]
struct ParamEntry {
    dtype: String,
    shape: Vec<usize>,
    section: Section,
}

#[derive(Serialize, Deserialize)]
struct PartitionEntry {
    function: String,
    target: String,
    plugin: String,
    section: Section,
}

#[derive(Serialize, Deserialize)]
struct Manifest {
    format_version: u32,
    byoc_version: String,
    targets: Vec<TargetEntry>,
    checksum: String,
    host: Section,
    params: Vec<ParamEntry>,
    partitions: Vec<PartitionEntry>,
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

fn append(payload: &mut Vec<u8>, bytes: &[u8]) -> Section {
    let s = Section {
        offset: payload.len() as u64,
        len: bytes.len() as u64,
    };
    payload.extend_from_slice(bytes);
    s
}

fn section<'a>(payload: &'a [u8], s: &Section, what: &str) -> Result<&'a [u8], ArtifactError> {
    let bad = || ArtifactError::Section {
        what: what.to_string(),
        offset: s.offset,
        len: s.len,
        payload: payload.len() as u64,
    };
    let start = usize::try_from(s.offset).map_err(|_| bad())?;
    let len = usize::try_from(s.len).map_err(|_| bad())?;
    let end = start.checked_add(len).ok_or_else(bad)?;
    payload.get(start..end).ok_or_else(bad)
}

fn take<'a>(bytes: &'a [u8], at: usize, n: usize, what: &str) -> Result<&'a [u8], ArtifactError> {
    bytes
        .get(at..at.saturating_add(n))
        .filter(|s| s.len() == n)
        .ok_or_else(|| ArtifactError::Truncated {
            what: what.to_string(),
            needed: (at as u64).saturating_add(n as u64),
            available: bytes.len() as u64,
        })
}

fn read_file(path: &Path) -> Result<Vec<u8>, ArtifactError> {
    byoc_ir::memory::read_file(path).map_err(|e| ArtifactError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

impl Artifact {
    /// An artifact of a partitioned, typed module and the compiled modules of its external
    /// functions.
    pub fn build(module: &Module, externals: &ExternalModules) -> Result<Artifact, ArtifactError> {
        let mut partitions = Vec::new();
        for (function, _) in external_functions(module) {
            let ext = externals
                .get(&function)
                .ok_or_else(|| ArtifactError::MissingPartition {
                    function: function.clone(),
                })?;
            let bytes = ext
                .module
                .serialize()
                .map_err(|error| ArtifactError::Plugin {
                    operation: "serialize",
                    function: function.clone(),
                    plugin: ext.plugin.clone(),
                    error,
                })?;
            partitions.push(Partition {
                function,
                target: TargetEntry {
                    target: ext.target.clone(),
                    plugin: ext.plugin.clone(),
                    plugin_version: ext.plugin_version.clone(),
                },
                bytes,
            });
        }
        Ok(Artifact {
            module: module.clone(),
            byoc_version: byoc_sdk::abi::SDK_VERSION.to_string(),
            partitions,
        })
    }

    /// The distinct targets, in partition order.
    pub fn targets(&self) -> Vec<TargetEntry> {
        let mut out: Vec<TargetEntry> = Vec::new();
        for p in &self.partitions {
            if !out.contains(&p.target) {
                out.push(p.target.clone());
            }
        }
        out
    }

    /// The file's bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>, ArtifactError> {
        let mut typed = self.module.clone();
        infer_types(&mut typed).map_err(|e| ArtifactError::Host(e.to_string()))?;
        let (host, params) = lift(&typed).map_err(ArtifactError::Host)?;
        let mut payload = Vec::new();
        let host = append(&mut payload, print_module(&host).as_bytes());
        let params = params
            .iter()
            .map(|t| ParamEntry {
                dtype: t.dtype().to_string(),
                shape: t.shape().to_vec(),
                section: append(&mut payload, t.as_bytes()),
            })
            .collect();
        let partitions = self
            .partitions
            .iter()
            .map(|p| PartitionEntry {
                function: p.function.clone(),
                target: p.target.target.clone(),
                plugin: p.target.plugin.clone(),
                section: append(&mut payload, &p.bytes),
            })
            .collect();
        let manifest = Manifest {
            format_version: FORMAT_VERSION,
            byoc_version: self.byoc_version.clone(),
            targets: self.targets(),
            checksum: hex(&sha256(&payload)),
            host,
            params,
            partitions,
        };
        let manifest =
            serde_json::to_vec(&manifest).map_err(|e| ArtifactError::Manifest(e.to_string()))?;
        let mut out = Vec::with_capacity(HEADER_LEN + manifest.len() + payload.len());
        out.extend_from_slice(ARTIFACT_MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&(manifest.len() as u64).to_le_bytes());
        out.extend_from_slice(&sha256(&manifest));
        out.extend_from_slice(&manifest);
        out.extend_from_slice(&payload);
        Ok(out)
    }

    /// The file's bytes signed with `key` (see [`super::signature`]).
    pub fn to_signed_bytes(&self, key: &SecretKey) -> Result<Vec<u8>, ArtifactError> {
        Ok(key.sign(&self.to_bytes()?))
    }

    /// Reads an artifact, checking magic, version, checksums and sections first. A signature
    /// block is skipped, not verified: use [`Artifact::read_trusted`] before loading the
    /// partitions of an artifact from elsewhere.
    pub fn from_bytes(bytes: &[u8]) -> Result<Artifact, ArtifactError> {
        let bytes = unsigned_part(bytes);
        if bytes.len() < ARTIFACT_MAGIC.len() || &bytes[..8] != ARTIFACT_MAGIC {
            return Err(ArtifactError::NotAnArtifact);
        }
        let header = take(bytes, 0, HEADER_LEN, "the header")?;
        let mut version = [0u8; 4];
        version.copy_from_slice(&header[8..12]);
        let found = u32::from_le_bytes(version);
        if found != FORMAT_VERSION {
            return Err(ArtifactError::FormatVersion {
                found,
                supported: FORMAT_VERSION,
            });
        }
        let mut len = [0u8; 8];
        len.copy_from_slice(&header[12..20]);
        let manifest_len = usize::try_from(u64::from_le_bytes(len)).unwrap_or(usize::MAX);
        let manifest_bytes = take(bytes, HEADER_LEN, manifest_len, "the manifest")?;
        if sha256(manifest_bytes)[..] != header[20..52] {
            return Err(ArtifactError::Checksum { what: "manifest" });
        }
        let manifest: Manifest = serde_json::from_slice(manifest_bytes)
            .map_err(|e| ArtifactError::Manifest(e.to_string()))?;
        let payload = &bytes[HEADER_LEN + manifest_len..];
        if hex(&sha256(payload)) != manifest.checksum {
            return Err(ArtifactError::Checksum { what: "payload" });
        }
        let text = std::str::from_utf8(section(payload, &manifest.host, "host")?)
            .map_err(|e| ArtifactError::Host(e.to_string()))?;
        let host = parse_module(text).map_err(|e| ArtifactError::Host(e.to_string()))?;
        let params = manifest
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let what = format!("params[{i}]");
                let dtype: DType = p
                    .dtype
                    .parse()
                    .map_err(|e| ArtifactError::Manifest(format!("{what}: {e}")))?;
                let bytes = section(payload, &p.section, &what)?;
                Tensor::from_bytes(TensorType::new(p.shape.clone(), dtype), bytes)
                    .map(Arc::new)
                    .map_err(|e| ArtifactError::Manifest(format!("{what}: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut module = restore(&host, &params).map_err(ArtifactError::Host)?;
        infer_types(&mut module).map_err(|e| ArtifactError::Host(e.to_string()))?;
        let partitions = manifest
            .partitions
            .iter()
            .map(|p| {
                let target = manifest
                    .targets
                    .iter()
                    .find(|t| t.target == p.target && t.plugin == p.plugin)
                    .cloned()
                    .ok_or_else(|| {
                        ArtifactError::Manifest(format!(
                            "partition @{} names target '{}' that the manifest does not list",
                            p.function, p.target
                        ))
                    })?;
                Ok(Partition {
                    function: p.function.clone(),
                    target,
                    bytes: section(payload, &p.section, &format!("@{}", p.function))?.to_vec(),
                })
            })
            .collect::<Result<Vec<_>, ArtifactError>>()?;
        Ok(Artifact {
            module,
            byoc_version: manifest.byoc_version,
            partitions,
        })
    }

    /// Writes the artifact to `path`.
    pub fn write(&self, path: &Path) -> Result<(), ArtifactError> {
        std::fs::write(path, self.to_bytes()?).map_err(|e| ArtifactError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })
    }

    /// Reads the artifact at `path`.
    pub fn read(path: &Path) -> Result<Artifact, ArtifactError> {
        Artifact::from_bytes(&read_file(path)?)
    }

    /// Reads the artifact at `path` after checking its signature against `policy`: an
    /// artifact not signed by a trusted key is refused before anything in it is parsed.
    pub fn read_trusted(
        path: &Path,
        policy: &TrustPolicy,
    ) -> Result<(Artifact, Trust), ArtifactError> {
        let (body, trust) = Artifact::read_checked(path, policy)?;
        Ok((Artifact::from_bytes(&body)?, trust))
    }

    /// The bytes of the artifact at `path` without its signature block, once the signature
    /// is checked against `policy`, for callers that prepare something before parsing them
    /// (loading the plugins of the datatypes it names): nothing of an untrusted artifact is
    /// acted on.
    pub fn read_checked(
        path: &Path,
        policy: &TrustPolicy,
    ) -> Result<(Vec<u8>, Trust), ArtifactError> {
        let bytes = read_file(path)?;
        let (body, trust) = policy.check(&bytes).map_err(ArtifactError::Untrusted)?;
        Ok((body.to_vec(), trust))
    }

    /// Rebuilds the compiled partitions without recompiling: each partition's plugin is
    /// found by name with `resolve`, its version checked against the artifact's, and its
    /// bytes deserialized with this process's `options` ([`Plugin::deserialize`]: the
    /// executor's thread count, the user's plugin options).
    pub fn load_externals<E: std::fmt::Display>(
        &self,
        resolve: impl Fn(&str) -> Result<Arc<dyn Plugin>, E>,
        options: &CompileOptions,
    ) -> Result<ExternalModules, ArtifactError> {
        let mut out = ExternalModules::new();
        for p in &self.partitions {
            let t = &p.target;
            let plugin = resolve(&t.plugin).map_err(|reason| ArtifactError::MissingPlugin {
                function: p.function.clone(),
                plugin: t.plugin.clone(),
                target: t.target.clone(),
                reason: reason.to_string(),
            })?;
            if plugin.version() != t.plugin_version {
                return Err(ArtifactError::PluginVersion {
                    function: p.function.clone(),
                    plugin: t.plugin.clone(),
                    built_with: t.plugin_version.clone(),
                    loaded: plugin.version().to_string(),
                });
            }
            let module =
                plugin
                    .deserialize(&p.bytes, options)
                    .map_err(|error| ArtifactError::Plugin {
                        operation: "deserialize",
                        function: p.function.clone(),
                        plugin: t.plugin.clone(),
                        error,
                    })?;
            out.insert(
                p.function.clone(),
                ExternalModule {
                    target: t.target.clone(),
                    plugin: t.plugin.clone(),
                    plugin_version: t.plugin_version.clone(),
                    module: Arc::from(module),
                },
            );
        }
        for (function, _) in external_functions(&self.module) {
            if out.get(&function).is_none() {
                return Err(ArtifactError::MissingPartition { function });
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use byoc_exec::plugin::{compile_externals, Runtimes};
    use byoc_exec::{ExecOptions, Executor};

    const MODEL: &str = r#"
def @acc_0(%a: Tensor[(2, 2), float32], Compiler="acc", global_symbol="acc_0", Primitive=1) {
  %0 = add(%a, const((2, 2), float32, [1f, 2f, 3f, 4f]));
  nn.relu(%0)
}
def @main(%x: Tensor[(2, 2), float32]) {
  %0 = multiply(%x, const((2, 2), float32, [0.5f, -1f, 2f, 3f]));
  %1 = @acc_0(%0);
  subtract(%1, 1f)
}
"#;

    fn build() -> (Module, Vec<u8>) {
        let mut m = parse_module(MODEL).unwrap();
        infer_types(&mut m).unwrap();
        let ext =
            compile_externals(&m, &Runtimes::reference_for(&m), &CompileOptions::new()).unwrap();
        let bytes = Artifact::build(&m, &ext).unwrap().to_bytes().unwrap();
        (m, bytes)
    }

    #[test]
    fn artifacts_round_trip_and_run_like_the_module() {
        let (m, bytes) = build();
        let x = Tensor::from_vec(vec![2, 2], vec![1.0f32, -2.0, 3.0, 0.5]).unwrap();
        let run = |m: &Module, ext: &ExternalModules| {
            Executor::with_externals(m, ExecOptions::default(), ext)
                .unwrap()
                .run(std::slice::from_ref(&x))
                .unwrap()
        };
        let want = run(
            &m,
            &compile_externals(&m, &Runtimes::reference_for(&m), &CompileOptions::new()).unwrap(),
        );
        let a = Artifact::from_bytes(&bytes).unwrap();
        assert_eq!(a.partitions.len(), 1);
        assert_eq!(a.targets()[0].plugin, "reference");
        let ext = a
            .load_externals(
                |_| Ok::<_, String>(Arc::new(byoc_exec::plugin::ReferenceRuntime)),
                &CompileOptions::new(),
            )
            .unwrap();
        assert_eq!(run(&a.module, &ext), want);
        // Hand-computed: relu(x * c + [1, 2, 3, 4]) - 1.
        assert_eq!(want[0].as_slice::<f32>().unwrap(), &[0.5, 3.0, 8.0, 4.5]);
    }

    /// `bytes` with its manifest edited by `edit` and both checksums recomputed (what anyone
    /// can do; the signature, not checked here, is what catches it).
    fn with_manifest(bytes: &[u8], edit: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
        let len = usize::try_from(u64::from_le_bytes(bytes[12..20].try_into().unwrap())).unwrap();
        let mut manifest: serde_json::Value =
            serde_json::from_slice(&bytes[HEADER_LEN..HEADER_LEN + len]).unwrap();
        edit(&mut manifest);
        let manifest = serde_json::to_vec(&manifest).unwrap();
        let payload = &bytes[HEADER_LEN + len..];
        let mut out = bytes[..12].to_vec();
        out.extend_from_slice(&(manifest.len() as u64).to_le_bytes());
        out.extend_from_slice(&sha256(&manifest));
        out.extend_from_slice(&manifest);
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn sizes_in_the_manifest_are_checked_not_wrapped() {
        let (_, bytes) = build();
        // The first parameter is a (2, 2) float32 constant of 16 bytes: a shape whose element
        // count wraps to 4 would match its section if sizes were not checked.
        let wrapping = with_manifest(&bytes, |m| {
            m["params"][0]["shape"] = serde_json::json!([(1u64 << 62) + 1, 4]);
        });
        let err = Artifact::from_bytes(&wrapping).unwrap_err().to_string();
        assert!(err.contains("params[0]"), "{err}");
        assert!(err.contains("overflows 64 bits"), "{err}");
        let huge_section = with_manifest(&bytes, |m| {
            m["params"][0]["section"]["len"] = serde_json::json!(u64::MAX);
        });
        let err = Artifact::from_bytes(&huge_section).unwrap_err().to_string();
        assert!(err.contains("params[0]"), "{err}");
    }

    #[test]
    fn damaged_artifacts_are_refused() {
        let (_, bytes) = build();
        assert_eq!(
            Artifact::from_bytes(b"hello").unwrap_err(),
            ArtifactError::NotAnArtifact
        );
        assert!(matches!(
            Artifact::from_bytes(&bytes[..bytes.len() - 10]).unwrap_err(),
            ArtifactError::Checksum { what: "payload" }
        ));
        assert!(matches!(
            Artifact::from_bytes(&bytes[..30]).unwrap_err(),
            ArtifactError::Truncated { .. }
        ));
        let mut tampered = bytes.clone();
        let last = tampered.len() - 1;
        tampered[last] ^= 1;
        assert!(matches!(
            Artifact::from_bytes(&tampered).unwrap_err(),
            ArtifactError::Checksum { .. }
        ));
        let mut version = bytes.clone();
        version[8] = 7;
        assert_eq!(
            Artifact::from_bytes(&version).unwrap_err(),
            ArtifactError::FormatVersion {
                found: 7,
                supported: FORMAT_VERSION
            }
        );
        let mut huge_manifest = bytes.clone();
        huge_manifest[12..20].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            Artifact::from_bytes(&huge_manifest).unwrap_err(),
            ArtifactError::Truncated { .. }
        ));
        let a = Artifact::from_bytes(&bytes).unwrap();
        let err = a
            .load_externals(|_| Err("not found"), &CompileOptions::new())
            .unwrap_err();
        assert!(
            err.to_string().contains("needs plugin 'reference'"),
            "{err}"
        );
    }
}
