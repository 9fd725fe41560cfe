//! Frees what a report no longer needs on a thread of its own: a PyTorch job's million stacks and
//! sites, or the memo of the frames of its two hundred thousand return addresses, take a second or
//! a fifth of one to free, which building and printing the report need not wait for (the process
//! may even end before it is done). Must never be handed anything the report still reads.

/// Drops `value` on a new thread, or here when no thread can start.
pub fn free_later<T: Send + 'static>(value: T) {
    // Should no thread start, the closure, and with it `value`, is dropped here.
    let _ = std::thread::Builder::new()
        .name("memshim-free".into())
        .spawn(move || drop(value));
}
