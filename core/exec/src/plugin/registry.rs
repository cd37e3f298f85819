//! Finding plugins: directories and files to search, and the loaded plugins by name.
//!
//! Search order: `--plugin-path` entries (a directory or a plugin file; each must exist), the
//! directories in `BYOC_PLUGIN_PATH` (`:`-separated; missing ones are skipped), and the
//! directory of the running executable (where the build puts the plugins next to `byoc`).
//! In a directory, files named `libbyoc_plugin_*.so` (the platform's library prefix and
//! suffix) are plugins; a file given by path is loaded whatever its name. One file found
//! twice is loaded once. A file in a directory that fails to load is kept in
//! [`PluginRegistry::refused`] with its reason, and the rest still load; two files claiming
//! one name make that name unusable ([`RegistryError::Duplicate`]) but leave the others.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::error::{LoadError, RegistryError};
use super::loaded::LoadedPlugin;
use super::loader::load_plugin;

/// The environment variable listing plugin directories.
pub const PLUGIN_PATH_ENV: &str = "BYOC_PLUGIN_PATH";

/// The file name prefix of plugin libraries in a directory (after the platform's `lib`).
pub const PLUGIN_FILE_PREFIX: &str = "byoc_plugin_";

/// Where to look for plugins.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PluginSearch {
    /// Directories or files given explicitly; each must exist.
    pub paths: Vec<PathBuf>,
    /// Directories searched if they exist.
    pub optional_dirs: Vec<PathBuf>,
}

impl PluginSearch {
    /// The standard search: `paths`, then `BYOC_PLUGIN_PATH`, then the executable's directory.
    pub fn standard(paths: &[PathBuf]) -> Self {
        let mut optional_dirs: Vec<PathBuf> = std::env::var_os(PLUGIN_PATH_ENV)
            .map(|v| std::env::split_paths(&v).collect())
            .unwrap_or_default();
        if let Some(dir) = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(Path::to_path_buf))
        {
            optional_dirs.push(dir);
        }
        PluginSearch {
            paths: paths.to_vec(),
            optional_dirs,
        }
    }

    /// Only these paths (no environment, no executable directory).
    pub fn only(paths: &[PathBuf]) -> Self {
        PluginSearch {
            paths: paths.to_vec(),
            optional_dirs: Vec::new(),
        }
    }
}

/// True when `name` is a plugin library's file name.
pub fn is_plugin_file_name(name: &str) -> bool {
    let prefix = format!("{}{PLUGIN_FILE_PREFIX}", std::env::consts::DLL_PREFIX);
    name.starts_with(&prefix) && name.ends_with(std::env::consts::DLL_SUFFIX)
}

/// The loaded plugins by name.
#[derive(Debug, Default)]
pub struct PluginRegistry {
    plugins: BTreeMap<String, Arc<LoadedPlugin>>,
    conflicts: BTreeMap<String, (PathBuf, PathBuf)>,
    refused: Vec<LoadError>,
}

impl PluginRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        PluginRegistry::default()
    }

    /// Loads every plugin the search finds. A missing explicit path, an unreadable
    /// directory or an explicit file that fails to load is an error.
    pub fn discover(search: &PluginSearch) -> Result<Self, RegistryError> {
        let mut files: Vec<(PathBuf, bool)> = Vec::new();
        for p in &search.paths {
            if !p.exists() {
                return Err(RegistryError::PathNotFound { path: p.clone() });
            }
            if p.is_dir() {
                files.extend(plugin_files(p)?.into_iter().map(|f| (f, false)));
            } else {
                files.push((p.clone(), true));
            }
        }
        for d in search.optional_dirs.iter().filter(|d| d.is_dir()) {
            files.extend(plugin_files(d)?.into_iter().map(|f| (f, false)));
        }
        let mut registry = PluginRegistry::new();
        let mut seen: Vec<PathBuf> = Vec::new();
        for (file, explicit) in files {
            let canonical = file.canonicalize().unwrap_or_else(|_| file.clone());
            if seen.contains(&canonical) {
                continue;
            }
            seen.push(canonical);
            match load_plugin(&file) {
                Ok(p) => registry.add(p),
                Err(e) if explicit => return Err(e.into()),
                Err(e) => registry.refused.push(e),
            }
        }
        Ok(registry)
    }

    /// Adds a loaded plugin; a second plugin with a taken name records a conflict.
    pub fn add(&mut self, plugin: LoadedPlugin) {
        let name = plugin.name.clone();
        if let Some(first) = self.plugins.get(&name) {
            self.conflicts
                .entry(name)
                .or_insert_with(|| (first.path.clone(), plugin.path.clone()));
            return;
        }
        self.plugins.insert(name, Arc::new(plugin));
    }

    /// The plugin named `name`.
    pub fn get(&self, name: &str) -> Result<Arc<LoadedPlugin>, RegistryError> {
        if let Some((first, second)) = self.conflicts.get(name) {
            return Err(RegistryError::Duplicate {
                name: name.to_string(),
                first: first.clone(),
                second: second.clone(),
            });
        }
        self.plugins
            .get(name)
            .cloned()
            .ok_or_else(|| RegistryError::Unknown {
                name: name.to_string(),
                loaded: if self.plugins.is_empty() {
                    "none".to_string()
                } else {
                    self.plugins.keys().cloned().collect::<Vec<_>>().join(", ")
                },
                refused: self
                    .refused
                    .iter()
                    .map(|e| format!("\n  refused: {e}"))
                    .collect(),
            })
    }

    /// The loaded plugins, by name.
    pub fn plugins(&self) -> impl Iterator<Item = &Arc<LoadedPlugin>> {
        self.plugins.values()
    }

    /// Names claimed by two files, with both files.
    pub fn conflicts(&self) -> impl Iterator<Item = (&str, &Path, &Path)> {
        self.conflicts
            .iter()
            .map(|(n, (a, b))| (n.as_str(), a.as_path(), b.as_path()))
    }

    /// Files found in directories that failed to load, with the reasons.
    pub fn refused(&self) -> &[LoadError] {
        &self.refused
    }
}

/// The plugin libraries in `dir`, sorted by name.
fn plugin_files(dir: &Path) -> Result<Vec<PathBuf>, RegistryError> {
    let read_err = |e: std::io::Error| RegistryError::ReadDir {
        path: dir.to_path_buf(),
        message: e.to_string(),
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read_err)? {
        let entry = entry.map_err(read_err)?;
        let path = entry.path();
        let name = entry.file_name();
        if path.is_file() && name.to_str().is_some_and(is_plugin_file_name) {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_file_names() {
        let so = |s: &str| {
            format!(
                "{}{s}{}",
                std::env::consts::DLL_PREFIX,
                std::env::consts::DLL_SUFFIX
            )
        };
        assert!(is_plugin_file_name(&so("byoc_plugin_vendor")));
        assert!(!is_plugin_file_name(&so("byoc_core")));
        assert!(!is_plugin_file_name("byoc_plugin_vendor.d"));
    }

    #[test]
    fn missing_paths_and_unknown_names_are_errors() {
        let missing = PathBuf::from("/definitely/not/here");
        let err = PluginRegistry::discover(&PluginSearch::only(&[missing])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "plugin path '/definitely/not/here' does not exist"
        );
        let err = PluginRegistry::new().get("x").unwrap_err();
        assert_eq!(err.to_string(), "no plugin named 'x' (loaded: none)");
    }
}
