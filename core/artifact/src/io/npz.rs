//! `.npz` archives: a zip file of `.npy` entries; entry `x.npy` holds the array keyed `x`.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, Write};
use std::path::Path;

use npyz::npz::{array_name_from_file_name, file_name_from_array_name};
use zip::write::FileOptions;
use zip::{CompressionMethod, ZipArchive, ZipWriter};

use super::npy::{check_numpy_dtype, read_array, write_array};
use super::{IoError, IoErrorKind};
use byoc_ir::tensor::Tensor;
use byoc_ir::DType;

fn located(path: &Path, entry: Option<&str>, kind: IoErrorKind) -> IoError {
    IoError {
        path: path.to_path_buf(),
        entry: entry.map(str::to_string),
        kind,
    }
}

/// Reads every array of the `.npz` archive at `path`, keyed by name. Entries whose names do
/// not end in `.npy` are not arrays and are skipped, as numpy does.
pub fn read_npz(path: impl AsRef<Path>) -> Result<BTreeMap<String, Tensor>, IoError> {
    read_npz_as(path, &BTreeMap::new())
}

/// Reads the `.npz` archive at `path` as [`read_npz`] does; an unsigned array named in
/// `custom` (`uint8`, `uint16`, `uint32` or `uint64` of the dtype's width) holds the bit
/// patterns of that custom dtype and is read as a tensor of it.
pub fn read_npz_as(
    path: impl AsRef<Path>,
    custom: &BTreeMap<String, DType>,
) -> Result<BTreeMap<String, Tensor>, IoError> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|e| located(path, None, e.into()))?;
    read_npz_from(BufReader::new(file), path, custom)
}

/// Reads every array of a `.npz` archive from `reader` as [`read_npz_as`] does; `path` names
/// it in errors.
pub fn read_npz_from(
    reader: impl Read + Seek,
    path: &Path,
    custom: &BTreeMap<String, DType>,
) -> Result<BTreeMap<String, Tensor>, IoError> {
    let mut zip = ZipArchive::new(reader)
        .map_err(|e| located(path, None, IoErrorKind::Archive(e.to_string())))?;
    let mut tensors = BTreeMap::new();
    for i in 0..zip.len() {
        let mut entry = zip
            .by_index(i)
            .map_err(|e| located(path, None, IoErrorKind::Archive(e.to_string())))?;
        let Some(name) = array_name_from_file_name(entry.name()).map(str::to_string) else {
            continue;
        };
        let tensor = read_array(&mut entry, custom.get(&name).copied()).map_err(|kind| {
            // A damaged entry shows up as an I/O error of the zip reader (bad CRC, ...).
            let kind = match kind {
                IoErrorKind::Io(e) => IoErrorKind::Archive(e.to_string()),
                other => other,
            };
            located(path, Some(&name), kind)
        })?;
        tensors.insert(name, tensor);
    }
    Ok(tensors)
}

/// Writes `tensors` to `path` as a `.npz` archive, one `<name>.npy` entry each.
pub fn write_npz(
    path: impl AsRef<Path>,
    tensors: &BTreeMap<String, Tensor>,
) -> Result<(), IoError> {
    let path = path.as_ref();
    // Check every dtype before creating (and truncating) the file.
    for (name, t) in tensors {
        check_numpy_dtype(t.dtype()).map_err(|kind| located(path, Some(name), kind))?;
    }
    let file = File::create(path).map_err(|e| located(path, None, e.into()))?;
    let mut zip = ZipWriter::new(BufWriter::new(file));
    let options = FileOptions::default().compression_method(CompressionMethod::Deflated);
    for (name, t) in tensors {
        zip.start_file(file_name_from_array_name(name), options)
            .map_err(|e| located(path, Some(name), IoErrorKind::Archive(e.to_string())))?;
        write_array(&mut zip, t).map_err(|kind| located(path, Some(name), kind))?;
    }
    let mut w = zip
        .finish()
        .map_err(|e| located(path, None, IoErrorKind::Archive(e.to_string())))?;
    w.flush().map_err(|e| located(path, None, e.into()))
}
