//! Sweep results as Parquet (`wafsim sweep --out F.parquet`): one row per (point, variant,
//! namespace), written and read with the `parquet` crate's low-level API (no Arrow).
//!
//! Columns, in order:
//!
//! | column            | type                          |
//! |-------------------|-------------------------------|
//! | `point`           | u32 (1-based)                 |
//! | each axis key     | string, the value's TOML text (strings unquoted); null where the point leaves it out |
//! | `variant`         | string                        |
//! | `namespace`       | string (null if the variant reports no namespace) |
//! | `waf`             | f64, the device's (null without host writes) |
//! | `hbmw` `mbmw` `mbe` `gc_bytes` | u64, the variant's (device-level) |
//! | `ns_host_bytes` `ns_media_bytes` | u64, the namespace's (null when not known) |
//! | `ns_waf`          | f64, the namespace's (null without host writes) |
//! | `hash`            | string, the point's identity for resuming |
//!
//! A file written here reads back with [`read_parquet`], so a Parquet sweep resumes as CSV
//! and JSON ones do.

use super::row::Row;
use anyhow::{anyhow, bail, Context, Result};
use parquet::basic::{LogicalType, Repetition, Type as Physical};
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int32Type, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use parquet::record::Field;
use parquet::schema::types::Type;
use std::path::Path;
use std::sync::Arc;

/// One output record: a row and one of its namespaces (None: the row has none).
struct Rec<'a> {
    row: &'a Row,
    ns: Option<&'a str>,
}

impl Rec<'_> {
    fn ns_waf(&self) -> Option<f64> {
        self.ns.and_then(|n| self.row.defined_ns_waf(n))
    }

    fn ns_bytes(&self) -> Option<(u64, u64)> {
        self.ns.and_then(|n| {
            self.row
                .ns_bytes
                .iter()
                .find(|(m, _, _)| m == n)
                .map(|(_, h, m)| (*h, *m))
        })
    }
}

fn column(
    name: &str,
    phys: Physical,
    logical: Option<LogicalType>,
    rep: Repetition,
) -> Result<Arc<Type>> {
    Ok(Arc::new(
        Type::primitive_type_builder(name, phys)
            .with_logical_type(logical)
            .with_repetition(rep)
            .build()?,
    ))
}

/// The Parquet file of `rows` (axes in the order of `axes`).
pub fn to_parquet(axes: &[String], rows: &[Row]) -> Result<Vec<u8>> {
    let string = || Some(LogicalType::String);
    let u64t = || Some(LogicalType::integer(64, false));
    let mut fields = vec![column(
        "point",
        Physical::INT32,
        Some(LogicalType::integer(32, false)),
        Repetition::REQUIRED,
    )?];
    for a in axes {
        fields.push(column(
            a,
            Physical::BYTE_ARRAY,
            string(),
            Repetition::OPTIONAL,
        )?);
    }
    fields.push(column(
        "variant",
        Physical::BYTE_ARRAY,
        string(),
        Repetition::REQUIRED,
    )?);
    fields.push(column(
        "namespace",
        Physical::BYTE_ARRAY,
        string(),
        Repetition::OPTIONAL,
    )?);
    fields.push(column("waf", Physical::DOUBLE, None, Repetition::OPTIONAL)?);
    for c in ["hbmw", "mbmw", "mbe", "gc_bytes"] {
        fields.push(column(c, Physical::INT64, u64t(), Repetition::REQUIRED)?);
    }
    fields.push(column(
        "ns_host_bytes",
        Physical::INT64,
        u64t(),
        Repetition::OPTIONAL,
    )?);
    fields.push(column(
        "ns_media_bytes",
        Physical::INT64,
        u64t(),
        Repetition::OPTIONAL,
    )?);
    fields.push(column(
        "ns_waf",
        Physical::DOUBLE,
        None,
        Repetition::OPTIONAL,
    )?);
    fields.push(column(
        "hash",
        Physical::BYTE_ARRAY,
        string(),
        Repetition::REQUIRED,
    )?);
    let schema = Arc::new(
        Type::group_type_builder("sweep")
            .with_fields(fields)
            .build()?,
    );

    let recs: Vec<Rec> = rows
        .iter()
        .flat_map(|r| {
            let ns: Vec<Option<&str>> = if r.ns_waf.is_empty() {
                vec![None]
            } else {
                r.ns_waf.iter().map(|(n, _)| Some(n.as_str())).collect()
            };
            ns.into_iter().map(move |ns| Rec { row: r, ns })
        })
        .collect();

    let mut buf = Vec::new();
    let mut w = SerializedFileWriter::new(
        &mut buf,
        schema,
        Arc::new(WriterProperties::builder().build()),
    )?;
    let mut rg = w.next_row_group()?;
    // Column writers in schema order; `opt` gives (values of the non-null entries, def levels).
    fn strings<'a>(it: impl Iterator<Item = Option<String>>) -> (Vec<ByteArray>, Vec<i16>) {
        let mut v = Vec::new();
        let mut d = Vec::new();
        for s in it {
            d.push(s.is_some() as i16);
            if let Some(s) = s {
                v.push(ByteArray::from(s.into_bytes()));
            }
        }
        (v, d)
    }
    fn opt<T>(it: impl Iterator<Item = Option<T>>) -> (Vec<T>, Vec<i16>) {
        let mut v = Vec::new();
        let mut d = Vec::new();
        for x in it {
            d.push(x.is_some() as i16);
            v.extend(x);
        }
        (v, d)
    }
    macro_rules! col {
        ($ty:ty, $vals:expr, $defs:expr) => {{
            let mut c = rg
                .next_column()?
                .ok_or_else(|| anyhow!("parquet: fewer columns than the schema"))?;
            c.typed::<$ty>().write_batch(&$vals, $defs, None)?;
            c.close()?;
        }};
    }
    let points: Vec<i32> = recs.iter().map(|r| r.row.point as i32).collect();
    col!(Int32Type, points, None);
    for a in axes {
        let (v, d) = strings(recs.iter().map(|r| {
            r.row
                .axes
                .iter()
                .find(|(k, _)| k == a)
                .and_then(|(_, v)| v.as_ref())
                .map(|_| r.row.axis_text(a))
        }));
        col!(ByteArrayType, v, Some(&d));
    }
    let (v, _) = strings(recs.iter().map(|r| Some(r.row.variant.clone())));
    col!(ByteArrayType, v, None);
    let (v, d) = strings(recs.iter().map(|r| r.ns.map(str::to_string)));
    col!(ByteArrayType, v, Some(&d));
    let (v, d) = opt(recs.iter().map(|r| r.row.defined_waf()));
    col!(DoubleType, v, Some(&d));
    for f in [
        |r: &Row| r.hbmw,
        |r: &Row| r.mbmw,
        |r: &Row| r.mbe,
        |r: &Row| r.gc_bytes,
    ] {
        let v: Vec<i64> = recs.iter().map(|r| f(r.row) as i64).collect();
        col!(Int64Type, v, None);
    }
    let (v, d) = opt(recs.iter().map(|r| r.ns_bytes().map(|(h, _)| h as i64)));
    col!(Int64Type, v, Some(&d));
    let (v, d) = opt(recs.iter().map(|r| r.ns_bytes().map(|(_, m)| m as i64)));
    col!(Int64Type, v, Some(&d));
    let (v, d) = opt(recs.iter().map(|r| r.ns_waf()));
    col!(DoubleType, v, Some(&d));
    let (v, _) = strings(recs.iter().map(|r| Some(r.row.hash.clone())));
    col!(ByteArrayType, v, None);
    rg.close()?;
    w.close()?;
    Ok(buf)
}

/// Rows of a Parquet file written by [`to_parquet`]: consecutive records of the same point,
/// variant and hash make one row (axes are left empty, as [`crate::studies::sweep::read_rows`] does).
pub fn read_parquet(path: &Path) -> Result<Vec<Row>> {
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let reader = SerializedFileReader::new(file)
        .with_context(|| format!("{}: not a Parquet file", path.display()))?;
    let mut rows: Vec<Row> = Vec::new();
    for (n, rec) in reader.get_row_iter(None)?.enumerate() {
        let rec = rec.with_context(|| format!("{}: record {}", path.display(), n + 1))?;
        let get = |k: &str| {
            rec.get_column_iter()
                .find(|(c, _)| c.as_str() == k)
                .map(|(_, f)| f)
        };
        let bad = |k: &str| {
            anyhow!(
                "{}: record {}: not a sweep's results (column {k:?})",
                path.display(),
                n + 1
            )
        };
        let text = |k: &str| match get(k) {
            Some(Field::Str(s)) => Ok(Some(s.clone())),
            Some(Field::Null) => Ok(None),
            _ => Err(bad(k)),
        };
        let int = |k: &str| match get(k) {
            Some(Field::ULong(v)) => Ok(Some(*v)),
            Some(Field::UInt(v)) => Ok(Some(*v as u64)),
            Some(Field::Null) => Ok(None),
            _ => Err(bad(k)),
        };
        let float = |k: &str| match get(k) {
            Some(Field::Double(v)) => Ok(Some(*v)),
            Some(Field::Null) => Ok(None),
            _ => Err(bad(k)),
        };
        let need = |v: Option<u64>, k: &str| v.ok_or_else(|| bad(k));
        let point = need(int("point")?, "point")? as usize;
        let variant = text("variant")?.ok_or_else(|| bad("variant"))?;
        let hash = text("hash")?.ok_or_else(|| bad("hash"))?;
        let same = rows
            .last()
            .is_some_and(|r| r.point == point && r.variant == variant && r.hash == hash);
        if !same {
            rows.push(Row {
                point,
                axes: Vec::new(),
                variant,
                waf: float("waf")?.unwrap_or(f64::NAN),
                hbmw: need(int("hbmw")?, "hbmw")?,
                mbmw: need(int("mbmw")?, "mbmw")?,
                mbe: need(int("mbe")?, "mbe")?,
                gc_bytes: need(int("gc_bytes")?, "gc_bytes")?,
                ns_waf: Vec::new(),
                ns_bytes: Vec::new(),
                hash,
            });
        }
        let row = rows.last_mut().expect("a row was pushed");
        if let Some(ns) = text("namespace")? {
            if let Some(w) = float("ns_waf")? {
                row.ns_waf.push((ns.clone(), w));
            }
            if let (Some(h), Some(m)) = (int("ns_host_bytes")?, int("ns_media_bytes")?) {
                row.ns_bytes.push((ns, h, m));
            }
        }
    }
    if rows.is_empty()
        && reader
            .metadata()
            .file_metadata()
            .schema_descr()
            .columns()
            .iter()
            .all(|c| c.name() != "hash")
    {
        bail!("{}: not a sweep's results (no hash column)", path.display());
    }
    Ok(rows)
}
