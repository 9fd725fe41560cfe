//! Nothing here: the end-to-end tests live in `e2e/` and need `cargo build --release --workspace` first.
