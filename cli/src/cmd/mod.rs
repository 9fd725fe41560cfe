//! One file per subcommand.
pub mod attach;
pub mod bench;
pub mod diff;
pub mod docs;
pub mod export;
pub mod info;
pub mod report;
pub mod run;
pub mod snapshot;
pub mod top;
