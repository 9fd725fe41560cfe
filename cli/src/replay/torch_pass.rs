//! Reads a trace a second time for PyTorch's allocator events alone, once the report knows what
//! the first replay could not (each stack's role needs its symbols, written at the process's end):
//! see `analysis::torch_steps`. A damaged frame ends the pass with what came before it, as the
//! first replay does.
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use memshim_trace::{Record, TraceReader};

use crate::analysis::torch_steps::StepPass;

/// Feeds every allocator event of the trace at `path` to `pass`; an error only when the file
/// cannot be opened or its header read (the first replay read it a moment ago).
pub fn torch_pass(path: &Path, pass: &mut StepPass) -> anyhow::Result<()> {
    let file = File::open(path)?;
    let mut reader = TraceReader::new(BufReader::with_capacity(1 << 20, file))?;
    while let Ok(Some(ev)) = reader.next_event() {
        match &ev.record {
            Record::Torch(e) => pass.event(ev.t, e),
            Record::TorchOom(o) => pass.oom(ev.t, o),
            _ => {}
        }
    }
    Ok(())
}
