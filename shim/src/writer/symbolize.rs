//! In-process symbolization at exit, within a time budget. What it leaves undone, the CLI does offline
//! from the module map. Runs on the writer thread only after the channel is closed, so no producer
//! can be waiting on it while it takes the loader's lock.
use std::ffi::c_void;
use std::time::{Duration, Instant};

use memshim_trace::{SymFrame, Symbol};

/// What symbolization produced.
pub struct Outcome {
    /// Addresses resolved.
    pub symbols: Vec<Symbol>,
    /// A note for the trace when the budget ran out.
    pub note: Option<String>,
}

/// Resolves return addresses (each looked up at `addr - 1`, inside the call) until `budget` is spent.
pub fn resolve(addrs: &[u64], budget: Duration) -> Outcome {
    let start = Instant::now();
    let mut symbols = Vec::with_capacity(addrs.len());
    for (i, &addr) in addrs.iter().enumerate() {
        // Checked at every address: one new module's debug information can take a while.
        if start.elapsed() > budget {
            return Outcome {
                note: Some(format!(
                    "in-process symbolization stopped after {:.1} s with {} of {} addresses done; the rest are symbolized by the CLI from the module map",
                    budget.as_secs_f64(),
                    i,
                    addrs.len()
                )),
                symbols,
            };
        }
        let mut frames = Vec::new();
        backtrace::resolve(addr.saturating_sub(1) as usize as *mut c_void, |sym| {
            frames.push(SymFrame {
                function: sym.name().map(|n| n.to_string()),
                file: sym.filename().map(|p| p.to_string_lossy().into_owned()),
                line: sym.lineno().unwrap_or(0),
            });
        });
        if frames.iter().any(|f| f.function.is_some()) {
            symbols.push(Symbol { addr, frames });
        }
    }
    Outcome {
        symbols,
        note: None,
    }
}
