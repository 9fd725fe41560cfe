//! leaky.rs - a Rust program whose leaks are made by the standard library's allocation paths: a
//! Vec grown by push, and a String built by format!.
//! Build: rustc -g -C opt-level=0 -o leaky leaky.rs
//!
//! Expected: two host leak sites of the program, labelled past the standard library's frames,
//! and the Rust runtime's own set-up (by design, owner rust_runtime):
//!   leaky::load (leaky.rs:14): the Vec of 1000 u64 (its last buffer, 8192 B, 1 block)
//!   leaky::greet (leaky.rs:21): the String "hello, memshim" (14 B, 1 block)
//! Prints nothing and exits 0.

fn load(n: u64) -> Vec<u64> {
    let mut v = Vec::new();
    for i in 0..n {
        v.push(i);
    }
    v
}

#[inline(never)]
fn greet(name: &str) -> String {
    format!("hello, {name}")
}

fn main() {
    std::mem::forget(load(1000));
    std::mem::forget(greet("memshim"));
}
