//! wafsim-report: human tables, machine JSON, CSV time series and charts (SVG and PNG, drawn
//! with plotters) for experiment results and device descriptions.

#![warn(missing_docs)]

pub mod chart;
pub mod csv;
pub mod json;
pub mod nvme;
pub mod plots;
pub mod table;
pub mod zonemap;
pub mod zones;
