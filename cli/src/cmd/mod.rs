//! One file per subcommand.
pub mod info;
pub mod report;
pub mod run;
