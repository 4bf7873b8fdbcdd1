//! wafsim-experiment: device and experiment descriptions (TOML), variants, precondition, runs.

pub mod bench;
