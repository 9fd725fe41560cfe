//! rust_threads.rs - a Rust program: 8 threads build and drop strings, then one block is leaked.
//! Build: rustc -g -C opt-level=0 -o rust_threads rust_threads.rs
//! Each thread builds 10000 strings and sums their lengths; main leaks 777 B in `rust_leak`.
//! Prints "rust threads 8 total 391120".
use std::thread;

#[no_mangle]
#[inline(never)]
pub extern "C" fn rust_leak() -> usize {
    let v: &'static mut [u8] = Box::leak(vec![7u8; 777].into_boxed_slice());
    v.len()
}

fn main() {
    let handles: Vec<_> = (0..8)
        .map(|_| {
            thread::spawn(|| {
                (0..10000)
                    .map(|i: usize| format!("{i}").len() + 1)
                    .sum::<usize>()
            })
        })
        .collect();
    let total: usize = handles.into_iter().map(|h| h.join().expect("a thread")).sum();
    let leaked = rust_leak();
    assert_eq!(leaked, 777);
    println!("rust threads 8 total {total}");
}
