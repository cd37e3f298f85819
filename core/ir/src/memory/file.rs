//! Whole files and byte ranges of files read within the memory budget: a file's length is
//! checked before anything is allocated, and a file that grows while it is read, or has no
//! length (a device such as `/dev/zero`, a pipe), is refused once it passes the budget,
//! instead of growing until the machine runs out of memory.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use super::{budget, Bytes};

/// The whole file at `path`, within the memory budget.
pub fn read_file(path: &Path) -> io::Result<Vec<u8>> {
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    read_bounded(&mut file, len, budget())
}

/// The whole file at `path` as UTF-8 text, within the memory budget.
pub fn read_file_to_string(path: &Path) -> io::Result<String> {
    String::from_utf8(read_file(path)?).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
        )
    })
}

/// `length` bytes of the file at `path` from byte `offset` (to its end when `length` is
/// `None`), within the memory budget; a range past the end of the file is an error giving the
/// file's length.
pub fn read_file_range(path: &Path, offset: u64, length: Option<u64>) -> io::Result<Vec<u8>> {
    let mut file = File::open(path)?;
    let metadata = file.metadata()?;
    let file_len = metadata.len();
    let beyond = || {
        io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!(
                "offset {offset} and length {} exceed the file's {file_len} bytes",
                length.map_or_else(|| "(to the end)".to_string(), |l| l.to_string())
            ),
        )
    };
    if metadata.is_file() && offset > file_len {
        return Err(beyond());
    }
    file.seek(SeekFrom::Start(offset))?;
    let budget = budget();
    let bytes = match length {
        Some(length) => {
            if length > budget {
                return Err(over_budget(length, budget, false));
            }
            read_bounded(&mut file.take(length), length, budget)?
        }
        None => read_bounded(&mut file, file_len.saturating_sub(offset), budget)?,
    };
    match length {
        Some(length) if (bytes.len() as u64) < length => Err(beyond()),
        _ => Ok(bytes),
    }
}

/// Everything `reader` gives, expected to be `expected` bytes (a regular file's length; 0 for
/// a stream). A regular file is read into a buffer of its size. A stream's buffer grows by
/// doubling, and the old and new buffers held together during a step count against `budget`:
/// a stream that would need more is refused, and the reading never holds more than the budget.
fn read_bounded(reader: &mut impl Read, expected: u64, budget: u64) -> io::Result<Vec<u8>> {
    if expected > budget {
        return Err(over_budget(expected, budget, false));
    }
    let mut bytes: Vec<u8> = Vec::new();
    // One byte more than expected, so that a file read whole is told by its end.
    grow(
        &mut bytes,
        usize::try_from(expected.saturating_add(1)).unwrap_or(usize::MAX),
    )?;
    loop {
        // Reading no more than the room there is, `read_to_end` never grows the buffer itself.
        let room = (bytes.capacity() - bytes.len()) as u64;
        let before = bytes.len();
        reader.take(room).read_to_end(&mut bytes)?;
        if ((bytes.len() - before) as u64) < room {
            return Ok(bytes);
        }
        let mut probe = [0u8; 1];
        if read_some(reader, &mut probe)? == 0 {
            return Ok(bytes);
        }
        let held = bytes.capacity() as u64;
        let want = held
            .saturating_mul(2)
            .max(READ_CHUNK)
            .min(budget.saturating_sub(held));
        if want <= held {
            return Err(over_budget(held, budget, true));
        }
        grow(&mut bytes, usize::try_from(want).unwrap_or(usize::MAX))?;
        bytes.push(probe[0]);
    }
}

/// One `read` into `buf`, retried when interrupted.
fn read_some(reader: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match reader.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            other => return other,
        }
    }
}

/// The first capacity of a stream's buffer and the least it grows by.
const READ_CHUNK: u64 = 64 << 10;

/// Reserves room for `capacity` bytes in all, failing with an error instead of aborting.
fn grow(bytes: &mut Vec<u8>, capacity: usize) -> io::Result<()> {
    let additional = capacity.saturating_sub(bytes.len());
    bytes.try_reserve_exact(additional).map_err(|_| {
        io::Error::new(
            io::ErrorKind::OutOfMemory,
            format!(
                "{} for the file cannot be allocated now",
                Bytes(capacity as u64)
            ),
        )
    })
}

/// The error of a file over the budget: `bytes` is its length, or with `at_least` what a stream
/// gave before its buffer could grow no further within the budget (and it had more).
fn over_budget(bytes: u64, budget: u64, at_least: bool) -> io::Error {
    let message = if at_least {
        format!(
            "the file gives more than {} and reading on would pass the memory budget of {} \
             (a file without a length is read into a buffer that grows by copying; see \
             --max-memory)",
            Bytes(bytes),
            Bytes(budget)
        )
    } else {
        format!(
            "the file holds {}, over the memory budget of {} (see --max-memory)",
            Bytes(bytes),
            Bytes(budget)
        )
    };
    io::Error::new(io::ErrorKind::OutOfMemory, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::with_budget;

    fn scratch(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let path = std::env::temp_dir().join(format!("byoc-file-{}-{name}", std::process::id()));
        std::fs::write(&path, bytes).expect("write the scratch file");
        path
    }

    #[test]
    fn files_over_the_budget_are_refused_by_their_length() {
        let path = scratch("long", &[7; 100]);
        assert_eq!(read_file(&path).expect("read"), vec![7; 100]);
        let err = with_budget(Some(64), || read_file(&path)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the file holds 100 bytes, over the memory budget of 64 bytes (see --max-memory)"
        );
        std::fs::remove_file(path).expect("clean up");
    }

    #[test]
    fn a_device_without_end_is_refused_at_the_budget() {
        let err = with_budget(Some(1 << 20), || read_file(Path::new("/dev/zero"))).unwrap_err();
        assert!(
            err.to_string().starts_with(
                "the file gives more than 524288 bytes (512.0 KiB) and reading on would pass the memory budget of 1048576 bytes"
            ),
            "{err}"
        );
    }

    #[test]
    fn ranges_are_read_from_their_offset_and_checked_against_the_file() {
        let path = scratch("range", b"0123456789");
        assert_eq!(read_file_range(&path, 3, Some(4)).expect("range"), b"3456");
        assert_eq!(read_file_range(&path, 7, None).expect("tail"), b"789");
        for (offset, length) in [(8, Some(3)), (11, None), (11, Some(0))] {
            let err = read_file_range(&path, offset, length).unwrap_err();
            assert!(
                err.to_string().contains("exceed the file's 10 bytes"),
                "{err}"
            );
        }
        let err = with_budget(Some(4), || read_file_range(&path, 0, Some(5))).unwrap_err();
        assert!(
            err.to_string()
                .contains("over the memory budget of 4 bytes"),
            "{err}"
        );
        assert!(read_file_to_string(&scratch("bad-utf8", &[0x66, 0xff]))
            .unwrap_err()
            .to_string()
            .contains("not UTF-8 text (byte 1)"));
        std::fs::remove_file(path).expect("clean up");
    }
}
