//! Making a running process call functions of its own: one of its threads is stopped at a safe
//! point, made to call them one after the other on its own stack, and put back exactly as it was.
//!
//! The safe point. A call made from inside `malloc` or the dynamic loader would wait forever for a
//! lock its own thread holds (both are taken by `dlopen`). Only one thread is stopped at a time; the
//! others run on, so locks they hold are released as usual. A stopped thread is used when either
//! - it waits in a blocking system call (sleep, poll, select, epoll, read, wait, accept, recv,
//!   sigsuspend; never `futex`, which is how lock waits look) made from the C library's own wrapper:
//!   a thread waiting there holds neither lock, and the loader's own system calls are made from
//!   its own code, not the C library's; or
//! - it runs code outside the C library, the loader, the C++ runtime, the unwinder and the shim (the
//!   program's own code, an interpreter, a JIT): none of them runs with malloc's or the loader's
//!   lock held, except a signal handler of the program that interrupted malloc, which this rule
//!   cannot see.
//!
//! Otherwise the thread is let go and the next one tried, round after round, until a deadline.
//!
//! Putting it back: its general registers and its whole extended (FPU/vector) state are saved
//! first and written back last; `errno` is read before the calls and written back after; the bytes
//! the calls' arguments and return slot took on its stack are written back. The calls run below
//! the interrupted stack pointer and its 128-byte red zone, in stack the ABI leaves undefined there
//! (as a signal handler's frame would). An interrupted system call is restarted by the kernel when
//! the thread resumes, as after any signal without a handler.
//!
//! Never: leave a thread stopped or changed when anything fails after it was stopped.
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use super::ptrace::{self, Regs, Stop};
use super::target::{Mapping, Process};

/// System calls a thread may be waiting in at a safe point (x86-64 numbers).
const WAITING_CALLS: [u64; 20] = [
    0,   // read
    7,   // poll
    23,  // select
    34,  // pause
    35,  // nanosleep
    43,  // accept
    45,  // recvfrom
    47,  // recvmsg
    61,  // wait4
    128, // rt_sigtimedwait
    130, // rt_sigsuspend
    230, // clock_nanosleep
    232, // epoll_wait
    247, // waitid
    270, // pselect6
    271, // ppoll
    281, // epoll_pwait
    288, // accept4
    299, // recvmmsg
    441, // epoll_pwait2
];

/// Objects whose code may hold malloc's or the loader's lock (or is the shim's own).
fn holds_runtime_locks(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    [
        "libc.so",
        "libc-",
        "ld-linux",
        "ld-",
        "libpthread",
        "libdl",
        "libstdc++",
        "libgcc_s",
        "libmemshim",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

/// Whether a thread stopped with registers `r` is at a safe point (see the module overview), or
/// why not.
pub fn safe_point(r: &Regs, maps: &[Mapping], libc: &str) -> Result<(), String> {
    let module = maps
        .iter()
        .find(|m| m.exec && (m.start..m.end).contains(&r.rip))
        .map(|m| m.path.as_str());
    if r.orig_rax as i64 >= 0 {
        let nr = r.orig_rax;
        return match module {
            Some(m) if m == libc && WAITING_CALLS.contains(&nr) => Ok(()),
            _ if WAITING_CALLS.contains(&nr) => {
                Err(format!("waiting in system call {nr} outside the C library"))
            }
            _ => Err(format!("in system call {nr}")),
        };
    }
    match module {
        Some(m) if holds_runtime_locks(m) => Err(format!("running inside {m}")),
        _ => Ok(()),
    }
}

/// Where a stopped thread is, in words: its system call, and the object its code is in.
fn stopped_at(r: &Regs, maps: &[Mapping]) -> String {
    let module = maps
        .iter()
        .find(|m| m.exec && (m.start..m.end).contains(&r.rip))
        .map_or("code outside any mapped file", |m| m.path.as_str());
    if r.orig_rax as i64 >= 0 {
        format!("waiting in system call {} in {module}", r.orig_rax)
    } else {
        format!("running in {module}")
    }
}

/// A thread stopped at a safe point, with what it must be given back.
pub struct Held<'a> {
    tid: i32,
    /// Where it was stopped, for what went wrong later.
    stopped_at: String,
    regs: Regs,
    xstate: Vec<u8>,
    /// Stack words written, with what they held.
    saved: Vec<(u64, u64)>,
    /// Where the next call's data goes (grows down).
    scratch: u64,
    proc: &'a Process,
    released: bool,
}

/// Stops one thread of `proc` at a safe point, trying each in turn until `deadline` has passed.
/// `on_denied` turns a refused seize into the error the user sees.
pub fn hold<'a>(
    proc: &'a Process,
    libc: &str,
    deadline: Duration,
    on_denied: impl Fn(std::io::Error) -> anyhow::Error,
) -> Result<Held<'a>> {
    let start = Instant::now();
    let mut last_why = String::new();
    loop {
        let maps = proc.maps()?;
        let threads = proc.threads();
        if threads.is_empty() {
            bail!("process {} has exited", proc.pid);
        }
        for tid in threads {
            match ptrace::seize(tid) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => continue,
                Err(e) => return Err(on_denied(e)),
            }
            match stop_thread(tid) {
                Ok(Some(regs)) => match safe_point(&regs, &maps, libc) {
                    Ok(()) => return Held::new(proc, tid, regs, stopped_at(&regs, &maps)),
                    Err(why) => last_why = format!("thread {tid} was {why}"),
                },
                Ok(None) => continue,
                Err(e) => {
                    let _ = ptrace::detach(tid);
                    return Err(e);
                }
            }
            let _ = ptrace::detach(tid);
        }
        if start.elapsed() > deadline {
            bail!(
                "no thread of process {} reached a safe point (waiting in a system call, or outside the C library and the loader) within {} s; the last one tried {last_why}. Try again when it is less busy",
                proc.pid,
                deadline.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Interrupts the seized thread and waits for it to stop; `None` when it exited meanwhile. A
/// signal that arrives first is delivered as it would have been.
fn stop_thread(tid: i32) -> Result<Option<Regs>> {
    ptrace::interrupt(tid).with_context(|| format!("cannot stop thread {tid}"))?;
    loop {
        match ptrace::wait(tid).with_context(|| format!("cannot wait for thread {tid}"))? {
            Stop::Gone => return Ok(None),
            Stop::Event(_) => return Ok(Some(ptrace::regs(tid)?)),
            Stop::Signal(sig) => ptrace::cont(tid, sig)?,
        }
    }
}

impl<'a> Held<'a> {
    fn new(proc: &'a Process, tid: i32, regs: Regs, stopped_at: String) -> Result<Held<'a>> {
        let xstate = match ptrace::xstate(tid) {
            Ok(x) => x,
            Err(e) => {
                let _ = ptrace::detach(tid);
                return Err(e).context("cannot read the thread's FPU and vector registers");
            }
        };
        Ok(Held {
            tid,
            stopped_at,
            regs,
            xstate,
            saved: Vec::new(),
            // Below the red zone, and a little more.
            scratch: (regs.rsp - 128 - 256) & !15,
            proc,
            released: false,
        })
    }

    /// The thread used.
    pub fn tid(&self) -> i32 {
        self.tid
    }

    /// Copies `bytes` and a NUL onto the thread's stack below what was put there before; returns
    /// their address.
    pub fn push_str(&mut self, bytes: &[u8]) -> Result<u64> {
        let mut data = bytes.to_vec();
        data.push(0);
        while !data.len().is_multiple_of(8) {
            data.push(0);
        }
        let at = (self.scratch - data.len() as u64) & !15;
        for (i, chunk) in data.chunks(8).enumerate() {
            let word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
            self.write_word(at + 8 * i as u64, word)?;
        }
        self.scratch = at;
        Ok(at)
    }

    fn write_word(&mut self, addr: u64, value: u64) -> Result<()> {
        if !self.saved.iter().any(|&(a, _)| a == addr) {
            let old = ptrace::peek(self.tid, addr)
                .with_context(|| format!("cannot read the thread's stack at {addr:#x}"))?;
            self.saved.push((addr, old));
        }
        ptrace::poke(self.tid, addr, value)
            .with_context(|| format!("cannot write the thread's stack at {addr:#x}"))
    }

    /// Reads the 32-bit value at `addr`.
    pub fn read_u32(&self, addr: u64) -> Result<u32> {
        Ok(ptrace::peek(self.tid, addr)? as u32)
    }

    /// Writes the 32-bit value at `addr`, keeping the rest of its word.
    pub fn write_u32(&mut self, addr: u64, value: u32) -> Result<()> {
        let word = ptrace::peek(self.tid, addr)?;
        ptrace::poke(self.tid, addr, (word & !0xffff_ffff) | u64::from(value))?;
        Ok(())
    }

    /// Reads a NUL-terminated string of at most `max` bytes at `addr`.
    pub fn read_str(&self, addr: u64, max: usize) -> Result<String> {
        let mut out = Vec::new();
        let mut at = addr;
        while out.len() < max {
            let bytes = ptrace::peek(self.tid, at)?.to_le_bytes();
            if let Some(end) = bytes.iter().position(|&b| b == 0) {
                out.extend_from_slice(&bytes[..end]);
                break;
            }
            out.extend_from_slice(&bytes);
            at += 8;
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// Makes the thread call `func(args...)` and returns what it returned (`rax`).
    pub fn call(&mut self, func: u64, args: &[u64]) -> Result<u64> {
        // At a function's first instruction the stack pointer is 8 past a 16-byte boundary: the
        // return address, 0, makes the function's return fault where the call is seen to end.
        let sp = (self.scratch & !15) - 8;
        self.write_word(sp, 0)?;
        let mut r = self.regs;
        r.rip = func;
        r.rsp = sp;
        r.rax = 0;
        // Not in a system call: the kernel must not restart the interrupted one at `func`.
        r.orig_rax = u64::MAX;
        let regs = [
            &mut r.rdi, &mut r.rsi, &mut r.rdx, &mut r.rcx, &mut r.r8, &mut r.r9,
        ];
        for (slot, value) in regs.into_iter().zip(args) {
            *slot = *value;
        }
        ptrace::set_regs(self.tid, &r)?;
        ptrace::cont(self.tid, 0)?;
        loop {
            match ptrace::wait(self.tid)? {
                Stop::Gone => bail!(
                    "process {} ended during the call at {func:#x}, made on its thread {} (stopped {})",
                    self.proc.pid,
                    self.tid,
                    self.stopped_at
                ),
                Stop::Signal(libc::SIGSEGV) => {
                    let now = ptrace::regs(self.tid)?;
                    if now.rip == 0 {
                        return Ok(now.rax);
                    }
                    bail!(
                        "the call at {func:#x} faulted at {:#x} inside process {}",
                        now.rip,
                        self.proc.pid
                    );
                }
                // Another signal for the thread: its handler runs on top of the call, as on top
                // of any code, and the call goes on.
                Stop::Signal(sig) => ptrace::cont(self.tid, sig)?,
                Stop::Event(_) => ptrace::cont(self.tid, 0)?,
            }
        }
    }

    /// Puts the thread back as it was and lets it run on.
    pub fn release(mut self) -> Result<()> {
        self.released = true;
        self.restore()
    }

    fn restore(&mut self) -> Result<()> {
        let mut first_err = None;
        for &(addr, old) in self.saved.iter().rev() {
            if let Err(e) = ptrace::poke(self.tid, addr, old) {
                first_err
                    .get_or_insert(anyhow!("cannot put back the stack word at {addr:#x}: {e}"));
            }
        }
        if let Err(e) = ptrace::set_xstate(self.tid, &self.xstate) {
            first_err.get_or_insert(anyhow!("cannot put back the vector registers: {e}"));
        }
        if let Err(e) = ptrace::set_regs(self.tid, &self.regs) {
            first_err.get_or_insert(anyhow!("cannot put back the registers: {e}"));
        }
        if let Err(e) = ptrace::detach(self.tid) {
            first_err.get_or_insert(anyhow!("cannot let thread {} go: {e}", self.tid));
        }
        first_err.map_or(Ok(()), Err)
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if !self.released {
            let _ = self.restore();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regs(rip: u64, orig_rax: u64) -> Regs {
        Regs {
            r15: 0,
            r14: 0,
            r13: 0,
            r12: 0,
            rbp: 0,
            rbx: 0,
            r11: 0,
            r10: 0,
            r9: 0,
            r8: 0,
            rax: 0,
            rcx: 0,
            rdx: 0,
            rsi: 0,
            rdi: 0,
            orig_rax,
            rip,
            cs: 0,
            eflags: 0,
            rsp: 0,
            ss: 0,
            fs_base: 0,
            gs_base: 0,
            ds: 0,
            es: 0,
            fs: 0,
            gs: 0,
        }
    }

    fn maps() -> Vec<Mapping> {
        let m = |start, path: &str| Mapping {
            start,
            end: start + 0x1000,
            offset: 0,
            exec: true,
            path: path.into(),
        };
        vec![
            m(0x1000, "/usr/bin/prog"),
            m(0x3000, "/lib/libc.so.6"),
            m(0x5000, "/lib64/ld-linux-x86-64.so.2"),
        ]
    }

    #[test]
    fn a_sleep_in_the_c_library_is_safe_a_lock_wait_or_the_loader_is_not() {
        let libc = "/lib/libc.so.6";
        let none = u64::MAX;
        assert_eq!(safe_point(&regs(0x3010, 230), &maps(), libc), Ok(()));
        assert!(
            safe_point(&regs(0x3010, 202), &maps(), libc).is_err(),
            "futex"
        );
        assert!(
            safe_point(&regs(0x5010, 0), &maps(), libc).is_err(),
            "the loader's read"
        );
        assert_eq!(safe_point(&regs(0x1010, none), &maps(), libc), Ok(()));
        assert!(
            safe_point(&regs(0x3010, none), &maps(), libc).is_err(),
            "inside libc"
        );
        assert!(
            safe_point(&regs(0x5010, none), &maps(), libc).is_err(),
            "inside ld.so"
        );
    }
}
