//! The memory available to this process, the default budget: the least of the machine's
//! available memory (`MemAvailable`), its control group's memory limit (a container's), and
//! its address-space limit (`RLIMIT_AS`, `ulimit -v`). Each is read from `/proc` and
//! `/sys/fs/cgroup` once; one that cannot be read does not limit.

use std::path::Path;
use std::sync::OnceLock;

/// The bytes this process can expect to allocate, read once; `None` when nothing limits it
/// (or nothing could be read).
pub fn available_memory() -> Option<u64> {
    static AVAILABLE: OnceLock<Option<u64>> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        [meminfo_available(), cgroup_limit(), address_space()]
            .into_iter()
            .flatten()
            .min()
    })
}

/// The address-space limit, read once: no allocation past it can succeed, so it also caps a
/// budget the caller sets (unlike the memory figures, which the system may overcommit).
pub fn address_space() -> Option<u64> {
    static LIMIT: OnceLock<Option<u64>> = OnceLock::new();
    *LIMIT.get_or_init(address_space_limit)
}

/// `MemAvailable` of `/proc/meminfo`.
fn meminfo_available() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    kib_field(&info, "MemAvailable:")
}

/// The value in KiB after `key` at the start of a line of `text`, in bytes.
fn kib_field(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kib: u64 = line[key.len()..].split_whitespace().next()?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The memory limit of the process's control group: cgroup v2's `memory.max`, or v1's
/// `memory.limit_in_bytes`. Inside a container `/proc/self/cgroup` names the host's path, so
/// the mount's root (the container's own group) is read where that path is absent.
fn cgroup_limit() -> Option<u64> {
    let groups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    groups
        .lines()
        .filter_map(|line| {
            let mut fields = line.splitn(3, ':');
            let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
            let (mount, file) = if controllers.is_empty() {
                ("/sys/fs/cgroup", "memory.max")
            } else if controllers.split(',').any(|c| c == "memory") {
                ("/sys/fs/cgroup/memory", "memory.limit_in_bytes")
            } else {
                return None;
            };
            let own = Path::new(mount)
                .join(path.trim_start_matches('/'))
                .join(file);
            let text = std::fs::read_to_string(own)
                .or_else(|_| std::fs::read_to_string(Path::new(mount).join(file)))
                .ok()?;
            // "max" (v2) or a number near 2^63 (v1) when there is no limit.
            text.trim().parse::<u64>().ok()
        })
        .min()
}

/// The soft `RLIMIT_AS` (`Max address space` in `/proc/self/limits`). What the process
/// already maps is not subtracted: much of it is reserved ahead (the allocator's arenas,
/// thread stacks) and later allocations are served from it.
fn address_space_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?;
    line["Max address space".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::kib_field;

    #[test]
    fn kib_fields_are_read_in_bytes() {
        let text = "MemTotal:       32000 kB\nMemAvailable:   2048 kB\n";
        assert_eq!(kib_field(text, "MemAvailable:"), Some(2048 * 1024));
        assert_eq!(kib_field(text, "VmSize:"), None);
        assert_eq!(kib_field("VmSize: lots kB", "VmSize:"), None);
    }
}
