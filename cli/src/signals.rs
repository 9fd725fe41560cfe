//! `memshim run`'s signals: SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to `memshim` are passed on to
//! the traced command, so that stopping `memshim run` stops the command and never leaves it running
//! without its parent. memshim itself waits for the command and leaves with its status.
//!
//! A signal the terminal sends (Ctrl-C, Ctrl-\, a hangup) goes to the whole foreground process
//! group, the command included, so it is not passed on again: a program that handles its first
//! SIGINT and exits on a second would otherwise see two. Only a signal sent to memshim by a process
//! (`kill`) is forwarded, to the command's pid. (A `kill` of the whole process group reaches the
//! command twice; send it to one pid.)
//!
//! # Safety
//! The blocks here call `pthread_sigmask`, `sigtimedwait`, `kill` and `waitid` with valid, fully
//! initialised arguments: signal sets made with `sigemptyset`/`sigaddset`, and a `siginfo_t` that
//! the kernel fills. The signals are blocked before any thread is started, so every thread of
//! memshim inherits the mask and only the forwarding thread takes them; the command's own mask is
//! restored in the child before `exec` (`unblock_in_child`).
#![allow(unsafe_code)]
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The signals forwarded.
pub const FORWARDED: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

fn forwarded_set() -> libc::sigset_t {
    // SAFETY: an all-zero sigset_t is a valid value to pass to sigemptyset, which initialises it;
    // sigaddset is given valid signal numbers.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in FORWARDED {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Blocks the forwarded signals in the calling thread (and every thread it starts later). Call
/// before spawning the command and before any other thread exists.
pub fn block() {
    let set = forwarded_set();
    // SAFETY: `set` is initialised; a null old-set pointer is allowed.
    unsafe {
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// Makes `cmd` start with the forwarded signals unblocked again (the mask is inherited across
/// `exec`): the command gets the signal mask memshim itself was started with.
pub fn unblock_in_child(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let set = forwarded_set();
    // SAFETY: the closure runs in the forked child before exec and calls only pthread_sigmask,
    // which is async-signal-safe, with an initialised set copied into the closure.
    unsafe {
        cmd.pre_exec(move || {
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            Ok(())
        });
    }
}

/// Discards the forwarded signals that arrived since the command ended (while memshim named its
/// frames: appending symbols is not cut short, so a trace never gets a torn frame from it), then
/// unblocks them.
pub fn drain_and_unblock() {
    let set = forwarded_set();
    let now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: as in `Forwarder::start`; a zero timeout only polls.
    while unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        libc::sigtimedwait(&set, &mut info, &now)
    } > 0
    {}
    unblock();
}

/// Waits at most `timeout` for one of the forwarded signals (which must be blocked, see [`block`]);
/// returns it, or `None` when the time ran out. Used by `memshim attach`, which takes them itself.
pub fn wait_one(timeout: Duration) -> Option<libc::c_int> {
    let set = forwarded_set();
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: as in `Forwarder::start`.
    let sig = unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        libc::sigtimedwait(&set, &mut info, &ts)
    };
    (sig > 0).then_some(sig)
}

/// Unblocks them again.
pub fn unblock() {
    let set = forwarded_set();
    // SAFETY: as in `block`.
    unsafe {
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
    }
}

/// Forwards the blocked signals to `pid` until stopped.
pub struct Forwarder {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Forwarder {
    /// Starts forwarding to `pid` (signals must be blocked already, see [`block`]).
    pub fn start(pid: u32) -> Forwarder {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let set = forwarded_set();
            let tick = libc::timespec {
                tv_sec: 0,
                tv_nsec: 50_000_000,
            };
            while !flag.load(Ordering::Acquire) {
                // SAFETY: a zeroed siginfo_t is valid for the kernel to fill; `set` and `tick` are
                // initialised.
                let (sig, info) = unsafe {
                    let mut info: libc::siginfo_t = std::mem::zeroed();
                    let sig = libc::sigtimedwait(&set, &mut info, &tick);
                    (sig, info)
                };
                if sig <= 0 || info.si_code == libc::SI_KERNEL {
                    continue;
                }
                // The command is still our unreaped child while this runs (see `wait_exited`), so
                // its pid cannot have been reused.
                // SAFETY: kill with a valid signal number has no memory effects.
                unsafe {
                    libc::kill(pid as libc::pid_t, sig);
                }
            }
        });
        Forwarder {
            stop,
            thread: Some(thread),
        }
    }

    /// Stops forwarding; returns once the forwarding thread is gone.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Waits until child `pid` has ended, without reaping it: its pid stays taken until the caller
/// reaps it, so nothing sent to it meanwhile can reach another process.
pub fn wait_exited(pid: u32) -> std::io::Result<()> {
    loop {
        // SAFETY: a zeroed siginfo_t is valid for waitid to fill.
        let r = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
