//! What runs on the traced threads between a hook and the channel: the reentrancy guard, stack
//! capture with the table of stacks already sent, the unwinders, the sampling decision with the
//! totals of the thin mode, and the messages that leave for the writer.
//!
//! Never: symbolize, take a lock a traced thread may hold, allocate through the traced allocator or
//! let a panic out (see `recorder`).
pub(crate) mod guard;
pub(crate) mod mix;
pub(crate) mod msg;
pub(crate) mod recorder;
pub(crate) mod sampling;
pub(crate) mod stack_bounds;
pub(crate) mod stacks;
pub(crate) mod unwind;
