//! The real functions behind every hook, one file per family, and how they are found (`symbols`).
#[macro_use]
mod symbols;

mod fds;
mod heap;
mod limits;
mod map;
mod numa;
mod process;
mod signals;

#[cfg_attr(test, allow(unused_imports))]
pub use fds::*;
pub use heap::*;
pub use map::*;
pub use signals::*;
// Only the hooks call these, and the hooks are not built for unit tests.
#[cfg_attr(test, allow(unused_imports))]
pub use limits::*;
#[cfg_attr(test, allow(unused_imports))]
pub use numa::*;
#[cfg_attr(test, allow(unused_imports))]
pub use process::*;
pub use symbols::{dlopen, dlsym, foreign_malloc, function, own_path, real_dlsym_addr};
// Only the attach entry points, which are not built for unit tests, call these.
#[cfg_attr(test, allow(unused_imports))]
pub use symbols::{forwarded_to, own_definition};
// The `dlsym` export of other architectures calls it (x86_64's is written in assembly).
#[cfg_attr(target_arch = "x86_64", allow(unused_imports))]
pub use symbols::real_dlsym_raw;
