//! wafsim-report: human tables, machine JSON, CSV time series and SVG charts for experiment
//! results and device descriptions.

pub mod csv;
pub mod json;
pub mod nvme;
pub mod plots;
pub mod svg;
pub mod table;
pub mod zonemap;
pub mod zones;
