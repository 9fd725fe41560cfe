//! What `memshim attach` must know about the process before it touches it, all from `/proc`: that
//! it exists and can be traced (and if not, why, in words that say what to do), its threads, the
//! objects mapped into it, and the address of a function inside one of them (from the object's own
//! symbol table, read through the process's root so a container's files are the ones read).
//!
//! Never: stop or change the process (that is `inject`'s).
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use object::{Object, ObjectSegment, ObjectSymbol};

/// A mapping of a file in the process.
#[derive(Debug, Clone)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub offset: u64,
    pub exec: bool,
    pub path: String,
}

/// The mappings of `/proc/PID/maps` text that name a file.
pub fn parse_maps(text: &str) -> Vec<Mapping> {
    text.lines()
        .filter_map(|line| {
            let mut f = line.splitn(6, ' ');
            let (range, perms, offset) = (f.next()?, f.next()?, f.next()?);
            let (_dev, _inode) = (f.next()?, f.next()?);
            let path = f.next()?.trim_start().to_string();
            if !path.starts_with('/') {
                return None;
            }
            let (s, e) = range.split_once('-')?;
            Some(Mapping {
                start: u64::from_str_radix(s, 16).ok()?,
                end: u64::from_str_radix(e, 16).ok()?,
                offset: u64::from_str_radix(offset, 16).ok()?,
                exec: perms.as_bytes().get(2) == Some(&b'x'),
                path,
            })
        })
        .collect()
}

/// The process to attach to.
pub struct Process {
    pub pid: i32,
    pub exe: String,
}

impl Process {
    /// Checks that `pid` names a live, dynamically linked 64-bit process that this user may trace
    /// and that nothing traces already; the error says which it is not and what to do.
    pub fn check(pid: i32) -> Result<Process> {
        let dir = PathBuf::from(format!("/proc/{pid}"));
        let status = match std::fs::read_to_string(dir.join("status")) {
            Ok(s) => s,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
                "no process has PID {pid} (in this PID namespace: a PID seen inside a container differs from the host's; look it up with ps on this side)"
            ),
            Err(e) => return Err(e).with_context(|| format!("cannot read /proc/{pid}/status")),
        };
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.trim().to_string())
                .unwrap_or_default()
        };
        let state = field("State:");
        if state.starts_with('Z') || state.starts_with('X') {
            bail!("process {pid} has exited (it is a zombie waiting for its parent); there is nothing to attach to");
        }
        if state.starts_with('T') || state.starts_with('t') {
            bail!("process {pid} is stopped ({state}); continue it first (kill -CONT {pid}), then attach");
        }
        let tracer: i32 = field("TracerPid:").parse().unwrap_or(0);
        if tracer != 0 {
            let name = std::fs::read_to_string(format!("/proc/{tracer}/comm"))
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "?".into());
            bail!("process {pid} is already traced by PID {tracer} ({name}); only one tracer may attach at a time: detach that one (quit the debugger or strace) first");
        }
        let exe = std::fs::read_link(dir.join("exe"))
            .map(|p| p.to_string_lossy().into_owned())
            .map_err(|e| {
                anyhow::anyhow!(
                    "cannot read /proc/{pid}/exe ({e}): {}",
                    permission_advice(pid)
                )
            })?;
        if std::fs::read(dir.join("root").join(exe.trim_start_matches('/')))
            .ok()
            .and_then(|b| b.get(4).copied())
            == Some(1)
        {
            bail!("process {pid} ({exe}) is a 32-bit program; memshim attach handles 64-bit x86 programs only");
        }
        Ok(Process { pid, exe })
    }

    /// Its thread ids, the main thread first, without the shim's own threads (a call that waits
    /// for the shim's writer must not be made by the writer).
    pub fn threads(&self) -> Vec<i32> {
        let shims = |tid: &i32| {
            std::fs::read_to_string(format!("/proc/{}/task/{tid}/comm", self.pid))
                .is_ok_and(|c| c.starts_with("memshim-"))
        };
        let mut tids: Vec<i32> = std::fs::read_dir(format!("/proc/{}/task", self.pid))
            .map(|d| {
                d.flatten()
                    .filter_map(|e| e.file_name().to_str()?.parse().ok())
                    .filter(|t| !shims(t))
                    .collect()
            })
            .unwrap_or_default();
        tids.sort_by_key(|&t| (t != self.pid, t));
        tids
    }

    /// Its file mappings now.
    pub fn maps(&self) -> Result<Vec<Mapping>> {
        let text = std::fs::read_to_string(format!("/proc/{}/maps", self.pid))
            .with_context(|| format!("cannot read /proc/{}/maps", self.pid))?;
        Ok(parse_maps(&text))
    }

    /// A path of the process's file system as this process reaches it.
    pub fn file(&self, path: &str) -> PathBuf {
        PathBuf::from(format!("/proc/{}/root", self.pid)).join(path.trim_start_matches('/'))
    }

    /// Whether `ours` (a file or directory here) is the very one the process sees at that path:
    /// not so when the process lives in another mount namespace (a container) without it.
    pub fn sees_same(&self, ours: &Path) -> bool {
        let theirs = self.file(&ours.to_string_lossy());
        match (std::fs::metadata(ours), std::fs::metadata(theirs)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }

    /// Its effective user and group ids.
    pub fn owner(&self) -> Option<(u32, u32)> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).ok()?;
        let id = |name: &str| -> Option<u32> {
            let line = status.lines().find_map(|l| l.strip_prefix(name))?;
            line.split_whitespace().nth(1)?.parse().ok()
        };
        Some((id("Uid:")?, id("Gid:")?))
    }

    /// Whether it lives in another PID namespace than memshim, and the PID it has there.
    pub fn inner_pid(&self) -> Option<i32> {
        let ours = std::fs::read_link("/proc/self/ns/pid").ok()?;
        let theirs = std::fs::read_link(format!("/proc/{}/ns/pid", self.pid)).ok()?;
        if ours == theirs {
            return None;
        }
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).ok()?;
        let line = status.lines().find_map(|l| l.strip_prefix("NSpid:"))?;
        line.split_whitespace().last()?.parse().ok()
    }
}

/// The C library mapped in the process, or why there is none.
pub fn libc_of(proc: &Process, maps: &[Mapping]) -> Result<String> {
    let found = maps.iter().map(|m| &m.path).find(|p| {
        let name = p.rsplit('/').next().unwrap_or("");
        name.starts_with("libc.so") || (name.starts_with("libc-") && name.ends_with(".so"))
    });
    if let Some(p) = found {
        return Ok(p.clone());
    }
    let exe = proc.file(&proc.exe);
    if crate::elf_kind::linking(&exe) == crate::elf_kind::Linking::Static {
        bail!(
            "process {} ({}) is a static executable: it has no dynamic loader, so no library can be loaded into it and memshim cannot attach",
            proc.pid,
            proc.exe
        );
    }
    bail!(
        "process {} ({}) has no GNU C library (libc.so.6) loaded; memshim attach needs glibc's dlopen",
        proc.pid,
        proc.exe
    )
}

/// The address of `symbol` (a dynamic symbol defined by the object at `path`) in the process, from
/// where the object is mapped; `None` when the object is not mapped or does not define it.
pub fn address_of(
    proc: &Process,
    maps: &[Mapping],
    path: &str,
    symbol: &str,
) -> Result<Option<u64>> {
    let Some(first) = maps.iter().find(|m| m.path == path && m.offset == 0) else {
        return Ok(None);
    };
    let file = proc.file(path);
    let bytes = std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
    let elf = object::File::parse(&*bytes)
        .with_context(|| format!("{} is not an ELF file memshim can read", file.display()))?;
    // The segment the file's first page belongs to starts the mapping at offset 0.
    let first_vaddr = elf
        .segments()
        .find(|s| s.file_range().0 == 0)
        .map_or(0, |s| s.address())
        & !0xfff;
    let Some(sym) = elf
        .dynamic_symbols()
        .find(|s| s.is_definition() && s.name() == Ok(symbol))
    else {
        return Ok(None);
    };
    Ok(Some(first.start - first_vaddr + sym.address()))
}

/// Why this user may not be allowed to trace `pid`, with what to do about it.
pub fn permission_advice(pid: i32) -> String {
    let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok());
    let capable = has_cap_sys_ptrace();
    match scope {
        Some(3) => "tracing is switched off on this machine (kernel.yama.ptrace_scope = 3, which only a reboot undoes); memshim attach cannot work here: start the program under `memshim run` instead".into(),
        Some(2) if !capable => "only a process with CAP_SYS_PTRACE may trace others here (kernel.yama.ptrace_scope = 2): run memshim attach as root (sudo)".into(),
        Some(1) if !capable => format!(
            "only a parent may trace its own children here (kernel.yama.ptrace_scope = 1): run memshim attach with CAP_SYS_PTRACE (sudo), or allow tracing with `sudo sysctl kernel.yama.ptrace_scope=0`; process {pid} is not memshim's child"
        ),
        _ if !same_user(pid) && !capable => format!(
            "process {pid} belongs to another user, and tracing another user's process needs CAP_SYS_PTRACE: run memshim attach as that user or as root"
        ),
        _ => "the kernel refused to let memshim trace it: in a container, the container needs CAP_SYS_PTRACE (docker run --cap-add SYS_PTRACE) and a seccomp profile that allows ptrace; a process that made itself undumpable (prctl PR_SET_DUMPABLE 0, or a setuid program) cannot be traced except by root".into(),
    }
}

/// Whether memshim's effective capabilities hold CAP_SYS_PTRACE (bit 19).
fn has_cap_sys_ptrace() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let hex = s
                .lines()
                .find_map(|l| l.strip_prefix("CapEff:"))?
                .trim()
                .to_string();
            u64::from_str_radix(&hex, 16).ok()
        })
        .is_some_and(|caps| caps & (1 << 19) != 0)
}

fn same_user(pid: i32) -> bool {
    let uid = |path: String| {
        std::fs::read_to_string(path).ok().and_then(|s| {
            let line = s.lines().find_map(|l| l.strip_prefix("Uid:"))?.to_string();
            // Real, effective, saved, file-system: the effective one decides.
            line.split_whitespace().nth(1).map(str::to_string)
        })
    };
    uid("/proc/self/status".into()) == uid(format!("/proc/{pid}/status"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_with_files_are_kept_with_their_numbers() {
        let text = "\
55d0c0000000-55d0c0001000 r--p 00000000 08:01 123 /usr/bin/prog with space
7f0000000000-7f0000020000 r-xp 00028000 08:01 456                        /usr/lib/x86_64-linux-gnu/libc.so.6
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
7f1000000000-7f1000001000 rw-p 00000000 00:00 0
";
        let m = parse_maps(text);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].path, "/usr/bin/prog with space");
        assert!(!m[0].exec);
        assert_eq!(
            (m[1].start, m[1].end, m[1].offset, m[1].exec),
            (0x7f00_0000_0000, 0x7f00_0002_0000, 0x28000, true)
        );
        assert_eq!(m[1].path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
    }

    #[test]
    fn a_missing_process_is_named_with_its_pid() {
        // PIDs are below pid_max (at most 2^22), so this one never exists.
        let e = Process::check(99_999_999).err().expect("no such process");
        assert!(e.to_string().contains("no process has PID 99999999"), "{e}");
    }

    #[test]
    fn dlopen_is_found_in_this_process_s_own_libc_where_the_loader_put_it() {
        let me = Process::check(std::process::id() as i32).expect("this process");
        let maps = me.maps().unwrap();
        let libc = libc_of(&me, &maps).unwrap();
        let found = address_of(&me, &maps, &libc, "getpid").unwrap().unwrap();
        assert_eq!(found, libc::getpid as *const () as u64);
    }
}
