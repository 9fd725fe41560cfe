//! One file per subcommand.
pub mod bench;
pub mod info;
pub mod report;
pub mod run;
