//! `.npz` archives: a zip file of `.npy` entries; entry `x.npy` holds the array keyed `x`.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::Path;

use npyz::npz::{array_name_from_file_name, file_name_from_array_name};
use zip::result::ZipError;
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

/// Writes `tensors` to `path` as a `.npz` archive, one `<name>.npy` entry each. On failure
/// the error names the entry being written and the operating system's reason, and a partly
/// written regular file is removed.
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
    let regular = file.metadata().is_ok_and(|m| m.is_file());
    let mut sink = FirstError::new(BufWriter::new(file));
    let written = write_entries(&mut sink, path, tensors);
    let result = match (sink.error.take(), written) {
        // The zip writer only saw a placeholder of the operating system's error.
        (Some(os), Err(e)) => Err(IoError {
            kind: IoErrorKind::Io(os),
            ..e
        }),
        (Some(os), Ok(())) => Err(located(path, None, IoErrorKind::Io(os))),
        (None, written) => written,
    };
    drop(sink);
    if result.is_err() && regular {
        // Best effort: the error being returned is the one that matters.
        let _ = std::fs::remove_file(path);
    }
    result
}

/// The archive's entries and its central directory, written to `sink`.
fn write_entries(
    sink: &mut FirstError<BufWriter<File>>,
    path: &Path,
    tensors: &BTreeMap<String, Tensor>,
) -> Result<(), IoError> {
    let mut zip = ZipWriter::new(sink);
    let options = FileOptions::default().compression_method(CompressionMethod::Deflated);
    for (name, t) in tensors {
        zip.start_file(file_name_from_array_name(name), options)
            .map_err(|e| located(path, Some(name), zip_write_error(e)))?;
        write_array(&mut zip, t).map_err(|kind| located(path, Some(name), kind))?;
    }
    zip.finish()
        .map_err(|e| located(path, None, zip_write_error(e)))?
        .flush()
        .map_err(|e| located(path, None, e.into()))
}

/// A zip writer's error while writing: the I/O error it carries, or its own reason.
fn zip_write_error(e: ZipError) -> IoErrorKind {
    match e {
        ZipError::Io(e) => IoErrorKind::Io(e),
        other => IoErrorKind::Io(std::io::Error::other(other)),
    }
}

/// A writer that keeps its first error and then discards whatever it is given. After a failed
/// write the zip writer still finalizes the archive when dropped, and reports a failure there on
/// standard error in its own debug format; with the rest discarded it has none to report, and
/// the kept error is the one [`write_npz`] returns.
struct FirstError<W> {
    inner: W,
    error: Option<std::io::Error>,
}

impl<W> FirstError<W> {
    fn new(inner: W) -> Self {
        FirstError { inner, error: None }
    }

    /// Keeps `e` (unless it only asks for a retry) and gives the caller an error of its kind.
    fn keep(&mut self, e: std::io::Error) -> std::io::Error {
        if e.kind() == ErrorKind::Interrupted {
            return e;
        }
        let placeholder = std::io::Error::from(e.kind());
        self.error = Some(e);
        placeholder
    }
}

impl<W: Write> Write for FirstError<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.error.is_some() {
            return Ok(buf.len());
        }
        self.inner.write(buf).map_err(|e| self.keep(e))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.error.is_some() {
            return Ok(());
        }
        self.inner.flush().map_err(|e| self.keep(e))
    }
}

impl<W: Seek> Seek for FirstError<W> {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        if self.error.is_some() {
            return Ok(0);
        }
        self.inner.seek(pos).map_err(|e| self.keep(e))
    }
}
