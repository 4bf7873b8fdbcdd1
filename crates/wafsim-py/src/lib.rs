//! `wafsim._native`: the Rust side of the `wafsim` Python package. It speaks JSON text to the
//! Python side (python/wafsim/__init__.py), which turns it into dicts and pandas tables, so this
//! file stays a thin shim over wafsim-experiment and wafsim-report: whatever `wafsim run --json`
//! prints, `wafsim.run` returns.
//!
//! Every simulation runs with the GIL released, so Python threads (and Ray's worker threads)
//! keep running while a run takes seconds or hours. Errors become `wafsim.WafsimError` carrying
//! the message the CLI prints (with file:line where the CLI has one).

#![warn(missing_docs)]

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::path::{Path, PathBuf};
use wafsim_experiment::studies::sweep::{rows_from_wire, rows_to_wire, to_json, SweepOptions, SweepPlan, SweepResult, SweepSpec};
use wafsim_experiment::{RunOptions, Variant};

create_exception!(wafsim, WafsimError, PyValueError, "An experiment or sweep wafsim cannot run: a bad file, key or value (the message names it, with file:line where it can), or a failed run.");

/// The CLI's rendering of an error chain ("context: cause: ..."), as a Python exception.
fn err(e: anyhow::Error) -> PyErr {
    WafsimError::new_err(format!("{e:#}"))
}

/// An experiment's variants from a file (`is_path`) or TOML text; `origin` names text in
/// messages ("<string>", "<dict>"), and relative paths in text resolve against `base_dir`.
fn load(source: &str, is_path: bool, origin: &str, base_dir: Option<&str>) -> anyhow::Result<(Vec<Variant>, String)> {
    if is_path {
        let p = Path::new(source);
        return Ok((wafsim_experiment::load_experiment(p)?, p.display().to_string()));
    }
    let mut vs = wafsim_experiment::parse_experiment(source, origin)?;
    if let Some(dir) = base_dir {
        for v in &mut vs {
            v.spec.base_dir = PathBuf::from(dir);
        }
    }
    Ok((vs, origin.to_string()))
}

/// Run an experiment; returns `wafsim run --json`'s document as JSON text, plus a
/// "timeseries" array when `sample_every` (bytes) is given.
#[pyfunction]
#[pyo3(signature = (source, is_path, origin, base_dir=None, variants=Vec::new(), scale=None, full_scale=false, sample_every=None, serial=false))]
#[allow(clippy::too_many_arguments)]
fn run(py: Python<'_>, source: &str, is_path: bool, origin: &str, base_dir: Option<&str>, variants: Vec<String>, scale: Option<f64>, full_scale: bool, sample_every: Option<u64>, serial: bool) -> PyResult<String> {
    let (all, origin) = load(source, is_path, origin, base_dir).map_err(err)?;
    py.detach(move || -> anyhow::Result<String> {
        let all = wafsim_experiment::plan::scale::select_and_scale(all, &variants, scale, full_scale, &origin)?;
        let opts = RunOptions { sample_every_bytes: sample_every.map(|b| b.max(1)), ..RunOptions::default() };
        let results = if serial {
            all.iter().map(|v| wafsim_experiment::run_variant(v, opts, &|_| {})).collect()
        } else {
            wafsim_experiment::run_variants(&all, opts, &|_, _| {})
        };
        let results: Vec<_> = results.into_iter().collect::<anyhow::Result<_>>()?;
        let mut doc = wafsim_report::json::fio_like(&results);
        if sample_every.is_some() {
            doc["timeseries"] = wafsim_report::json::timeseries(&results);
        }
        doc["warnings"] = results.iter().flat_map(|r| r.warnings.iter().cloned()).collect::<Vec<_>>().into();
        Ok(doc.to_string())
    })
    .map_err(err)
}

/// A JSON document (a Python dict's `json.dumps`) as TOML text, for `wafsim.run(dict)`:
/// Python has no TOML writer, and going through text gives dicts the same checks as files.
#[pyfunction]
fn json_to_toml(json: &str) -> PyResult<String> {
    let v: serde_json::Value = serde_json::from_str(json).map_err(|e| WafsimError::new_err(format!("not JSON: {e}")))?;
    if !v.is_object() {
        return Err(WafsimError::new_err("an experiment is a dict (a TOML document's top-level table)"));
    }
    let t: toml::Value = toml::Value::try_from(v).map_err(|e| WafsimError::new_err(format!("the dict has no TOML form: {e} (None values and mixed-type lists have none)")))?;
    toml::to_string(&t).map_err(|e| WafsimError::new_err(format!("the dict has no TOML form: {e}")))
}

/// A sweep being run from Python: the plan of `wafsim sweep` (points resolved, rows of `out`
/// kept), whose points Python runs (locally, or as Ray tasks with `point_rows`) and records.
#[pyclass(module = "wafsim._native")]
struct Sweep {
    plan: Option<SweepPlan>,
    result: Option<SweepResult>,
    axes: Vec<String>,
    /// The sweep as [`SweepSpec::bundle`] writes it: what a worker needs to run a point.
    bundle: String,
}

impl Sweep {
    fn plan(&self) -> PyResult<&SweepPlan> {
        self.plan.as_ref().ok_or_else(|| WafsimError::new_err("the sweep is finished"))
    }
}

#[pymethods]
impl Sweep {
    /// Plan the sweep file `path`, or the sweep of `bundle` (`SweepSpec::bundle`'s JSON, as
    /// `wafsim sweep --ray` and `wafsim advise --ray` send it); scale: None for the default;
    /// out: a .csv/.json/.parquet results file to keep rows from and write to.
    #[new]
    #[pyo3(signature = (path=None, scale=None, out=None, bundle=None))]
    fn new(py: Python<'_>, path: Option<&str>, scale: Option<f64>, out: Option<&str>, bundle: Option<&str>) -> PyResult<Sweep> {
        let spec = match (path, bundle) {
            (Some(path), None) => SweepSpec::load(Path::new(path)).map_err(err)?,
            (None, Some(b)) => SweepSpec::from_bundle(b).map_err(err)?,
            _ => return Err(WafsimError::new_err("Sweep: give a path or a bundle")),
        };
        let bundle = spec.bundle();
        let opts = SweepOptions { jobs: None, scale, out: out.map(PathBuf::from) };
        let plan = py.detach(|| SweepPlan::new(spec, &opts)).map_err(err)?;
        let axes = plan.spec().axes.clone();
        Ok(Sweep { plan: Some(plan), result: None, axes, bundle })
    }

    /// The sweep as one JSON text, for `point_rows` on a worker.
    fn bundle(&self) -> String {
        self.bundle.clone()
    }

    /// The scale every run uses.
    fn scale(&self) -> PyResult<f64> {
        Ok(self.plan()?.scale())
    }

    /// Axis names (the result columns after "point").
    fn axes(&self) -> Vec<String> {
        self.axes.clone()
    }

    /// Number of points, and of variants run at each.
    fn shape(&self) -> PyResult<(usize, usize)> {
        let p = self.plan()?;
        Ok((p.spec().points().len(), p.variants_per_point()))
    }

    /// 1-based indices of the points still to run.
    fn todo(&self) -> PyResult<Vec<usize>> {
        Ok(self.plan()?.todo())
    }

    /// Peak memory (bytes) a run of point `index` needs: a Ray task's memory requirement.
    fn memory_estimate(&self, index: usize) -> PyResult<u64> {
        self.plan()?.memory_estimate(index).map_err(err)
    }

    /// Record point `index`'s rows (`point_rows`' JSON); returns the points done so far.
    fn record(&mut self, index: usize, rows: &str) -> PyResult<usize> {
        let rows = rows_from_wire(rows).map_err(err)?;
        self.plan.as_mut().ok_or_else(|| WafsimError::new_err("the sweep is finished"))?.record(index, rows).map_err(err)
    }

    /// Run every point still to run on this machine's cores (`jobs` threads; None: all).
    #[pyo3(signature = (jobs=None))]
    fn run_local(&mut self, py: Python<'_>, jobs: Option<usize>) -> PyResult<()> {
        let plan = self.plan.take().ok_or_else(|| WafsimError::new_err("the sweep is finished"))?;
        self.result = Some(py.detach(|| plan.run_local(jobs, &|_| {})).map_err(err)?);
        Ok(())
    }

    /// End the sweep (every point recorded, or run by `run_local`): its rows as the JSON of
    /// `wafsim sweep --out F.json`, and (points run, points kept from `out`).
    fn finish(&mut self) -> PyResult<(String, usize, usize)> {
        if let Some(plan) = self.plan.take() {
            self.result = Some(plan.finish().map_err(err)?);
        }
        let r = self.result.as_ref().ok_or_else(|| WafsimError::new_err("the sweep is finished"))?;
        Ok((to_json(&self.axes, &r.rows), r.executed_points, r.kept_points))
    }

    /// After `finish`: every row in the exchange format (`point_rows`' JSON, every field but
    /// the axes, per-namespace bytes included), for `wafsim sweep --ray` to read back.
    fn rows_wire(&self) -> PyResult<String> {
        let r = self.result.as_ref().ok_or_else(|| WafsimError::new_err("the sweep is not finished"))?;
        Ok(rows_to_wire(&r.rows))
    }
}

/// Run point `index` of a sweep (`Sweep.bundle`) at `scale`; returns its rows as JSON for
/// `Sweep.record`. What a Ray task runs.
#[pyfunction]
fn point_rows(py: Python<'_>, bundle: &str, index: usize, scale: f64) -> PyResult<String> {
    let spec = SweepSpec::from_bundle(bundle).map_err(err)?;
    py.detach(|| spec.point_rows(index, scale)).map(|r| rows_to_wire(&r)).map_err(err)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("WafsimError", m.py().get_type::<WafsimError>())?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(json_to_toml, m)?)?;
    m.add_function(wrap_pyfunction!(point_rows, m)?)?;
    m.add_class::<Sweep>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
