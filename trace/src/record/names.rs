//! What names the addresses of events: stacks, loaded modules and symbols, and the trace's end.
use serde::{Deserialize, Serialize};

/// The frames of one stack: return addresses, innermost first, the shim's own frames removed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackDef {
    /// The id events use.
    pub id: u32,
    /// Return addresses, innermost first.
    pub frames: Vec<u64>,
}

/// A stack given as a branch of the trace's stack tree (since version 12): stacks share their
/// callers, so each new stack adds only the frames no earlier stack had at its place in the tree.
/// Node 0 is the root and holds no frame; the writer numbers the other nodes from 1 in the order it
/// makes them. `frames`, outermost first, become nodes `first`, `first + 1`, ..., each the child
/// of the one before, the first of them the child of node `parent`. Stack `id` is the innermost
/// of them, or node `parent` itself when `frames` is empty.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackBranch {
    /// The id events use.
    pub id: u32,
    /// The node the new frames hang below (0: the root).
    pub parent: u32,
    /// The number of the first new node.
    pub first: u32,
    /// The new frames, outermost first: return addresses and Python frames as in [`StackDef`].
    pub frames: Vec<u64>,
}

/// A loaded segment of a module, in the process's addresses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    /// First address.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
    /// True for executable segments.
    pub exec: bool,
}

/// A loaded object: enough to symbolize its addresses offline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Module {
    /// The path it was loaded from.
    pub path: String,
    /// The load bias: process address minus the address in the file.
    pub base: u64,
    /// The GNU build id, empty when the object has none.
    pub build_id: Vec<u8>,
    /// Its loaded segments.
    pub segments: Vec<Segment>,
}

/// A module that was unloaded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleUnload {
    /// The path it was loaded from.
    pub path: String,
    /// Its load bias.
    pub base: u64,
}

/// One source-level frame of a symbolized address (inlined calls give several).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SymFrame {
    /// Demangled function name.
    pub function: Option<String>,
    /// Source file.
    pub file: Option<String>,
    /// Source line, 0 when unknown.
    pub line: u32,
}

/// What a return address resolved to, innermost inlined frame first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Symbol {
    /// The return address as it appears in stacks.
    pub addr: u64,
    /// Its frames, innermost first; empty when nothing was found.
    pub frames: Vec<SymFrame>,
}

/// A note from the shim.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Note {
    /// The note, a whole sentence.
    pub text: String,
}

/// How the trace ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EndReason {
    /// The process exited normally (`exit` or return from `main`).
    Exit,
    /// The process called `_exit` or `_Exit`.
    QuickExit,
    /// The process replaced itself with `exec`.
    Exec,
    /// The shim stopped tracing because of an internal failure (see the notes).
    Failure,
    /// A signal whose default action ends the process (a crash such as `SIGSEGV` or `SIGABRT`, or
    /// `SIGTERM`, `SIGINT`, `SIGHUP`, `SIGQUIT`) arrived with no handler of the program's: the
    /// shim's handler wrote what was recorded, then let the signal take its default action. The
    /// number is the signal's. Since format version 7.
    Signal(i32),
    /// `memshim attach` detached the shim (its `--duration` ran out, or Ctrl-C): the program goes
    /// on untraced. Since format version 9.
    Detached,
}

/// The orderly end of a trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct End {
    /// Why the trace ended.
    pub reason: EndReason,
    /// Events the shim could not record.
    pub dropped_events: u64,
}

/// The shim was loaded into a process that was already running (`memshim attach`): the trace
/// begins at this moment, so blocks allocated before it are unknown (their frees are counted
/// apart, never subtracted). Since format version 9.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attached {
    /// How long the process had been running when the shim was attached, in nanoseconds.
    pub process_age_ns: u64,
    /// Import-table entries (GOT slots) redirected to the shim's hooks.
    pub slots: u32,
    /// Loaded objects whose import tables had at least one such entry.
    pub modules: u32,
    /// What attaching could not redirect, in plain words (empty when nothing).
    pub unseen: String,
}
