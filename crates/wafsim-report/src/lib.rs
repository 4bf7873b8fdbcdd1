//! wafsim-report: human tables and machine JSON for experiment results and device descriptions.

pub mod json;
pub mod table;
