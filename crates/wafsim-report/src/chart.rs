//! Charts drawn with `plotters`: line charts, grouped bar charts and zone maps, each written as
//! SVG (800x450 user units; zone maps 800x300) and as PNG (the same layout at 1.5x, so
//! 1200x675 pixels).
//!
//! A [`Chart`] is plain data (file name, title, axes, series); [`Chart::svg`] and
//! [`Chart::png`] draw it. Text is laid out with DejaVu Sans, embedded in the binary
//! (`fonts/`), so PNGs look the same on every machine and no system font or fontconfig is
//! needed; SVGs name `sans-serif` and leave the glyphs to the viewer. Colours come from the
//! Okabe & Ito colour-blind-safe palette; after eight series the palette repeats with dashed
//! lines. Non-finite points are skipped, a series of more than 2,000 points is downsampled
//! (first and last point kept, plus each bucket's minimum and maximum, so spikes survive),
//! series of at most 20 points get a marker on every point, and a chart without data says
//! "No data". Output is deterministic.
//!
//! ```
//! use wafsim_report::chart::{Chart, Series};
//!
//! let s = Series::new("WAF", vec![(0.0, 1.0), (1.0, 1.8), (2.0, 2.4)]);
//! let c = Chart::line("waf", "WAF over time", "host writes (GiB)", "WAF", vec![s], true);
//! let svg = c.svg().unwrap();
//! assert!(svg.starts_with("<svg") && svg.contains("WAF over time"));
//! assert!(c.png().unwrap().starts_with(b"\x89PNG\r\n\x1a\n"));
//! ```

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::io;
use std::path::{Path, PathBuf};

/// DejaVu Sans 2.37 (fonts/README.md, fonts/LICENSE-DejaVu.txt).
const FONT: &[u8] = include_bytes!("../fonts/DejaVuSans.ttf");
const FAMILY: &str = "sans-serif";

/// Size of a line or bar chart in SVG user units.
pub const SIZE: (u32, u32) = (800, 450);
/// Size of a zone map in SVG user units.
pub const ZONE_MAP_SIZE: (u32, u32) = (800, 300);
/// PNG pixels per SVG user unit.
pub const PNG_SCALE: f64 = 1.5;

/// Above this many points a series is downsampled before it is drawn.
const MAX_POINTS: usize = 2000;
/// Series with at most this many (finite) points get a marker on every point.
const MARKER_MAX_POINTS: usize = 20;
const LEGEND_NAME_CHARS: usize = 30;
const CATEGORY_CHARS: usize = 24;
/// Bar charts: x units per category.
const UNIT: i32 = 1000;

/// Okabe & Ito palette, the colours with the best contrast on white first (yellow last).
const PALETTE: [RGBColor; 8] = [
    RGBColor(0x00, 0x72, 0xB2),
    RGBColor(0xD5, 0x5E, 0x00),
    RGBColor(0x00, 0x9E, 0x73),
    RGBColor(0xCC, 0x79, 0xA7),
    RGBColor(0xE6, 0x9F, 0x00),
    RGBColor(0x56, 0xB4, 0xE9),
    RGBColor(0x00, 0x00, 0x00),
    RGBColor(0xF0, 0xE4, 0x42),
];
const GRID: RGBColor = RGBColor(0xE6, 0xE6, 0xE6);
const GRID_FINE: RGBColor = RGBColor(0xF4, 0xF4, 0xF4);
const TEXT: RGBColor = RGBColor(0x33, 0x33, 0x33);

/// One line of a line chart: `(x, y)` points drawn in order; pairs with a NaN or infinite
/// coordinate are skipped.
///
/// ```
/// use wafsim_report::chart::Series;
///
/// let s = Series::new("greedy", vec![(1.0, 2.0)]);
/// assert_eq!(s.name, "greedy");
/// assert_eq!(s.points, vec![(1.0, 2.0)]);
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Series {
    /// Name shown in the legend.
    pub name: String,
    /// The `(x, y)` points, in drawing order.
    pub points: Vec<(f64, f64)>,
}

impl Series {
    /// A series named `name` (the legend entry) with `points`.
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Series { name: name.into(), points }
    }
}

/// A zone's state as the zone map colours it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneClass {
    /// Full (or a zone without a write pointer).
    Full,
    /// Implicitly or explicitly opened.
    Open,
    /// Closed.
    Closed,
    /// Read Only.
    ReadOnly,
    /// Offline.
    Offline,
    /// Empty: nothing written; marked below the axis.
    Empty,
}

impl ZoneClass {
    const ALL: [ZoneClass; 6] =
        [ZoneClass::Full, ZoneClass::Open, ZoneClass::Closed, ZoneClass::ReadOnly, ZoneClass::Offline, ZoneClass::Empty];

    fn label(self) -> &'static str {
        match self {
            ZoneClass::Full => "full",
            ZoneClass::Open => "open",
            ZoneClass::Closed => "closed",
            ZoneClass::ReadOnly => "read-only",
            ZoneClass::Offline => "offline",
            ZoneClass::Empty => "empty (mark below 0)",
        }
    }

    fn colour(self) -> RGBColor {
        match self {
            ZoneClass::Full => PALETTE[0],
            ZoneClass::Open => PALETTE[1],
            ZoneClass::Closed => PALETTE[2],
            ZoneClass::ReadOnly => PALETTE[3],
            ZoneClass::Offline => PALETTE[6],
            ZoneClass::Empty => RGBColor(0xBB, 0xBB, 0xBB),
        }
    }
}

/// One zone of a zone map: its state and the share of its capacity drawn as the bar (0..=1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ZoneBar {
    /// The zone's state, which sets the bar's colour.
    pub class: ZoneClass,
    /// Share of the zone's capacity the bar stands for (written or live data), 0..=1.
    pub share: f64,
}

/// What a chart shows.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// Lines over a numeric x axis; with `y_from_zero` the y axis includes 0.
    Line {
        /// Label of the x axis.
        x_label: String,
        /// Label of the y axis.
        y_label: String,
        /// The lines, in legend order.
        series: Vec<Series>,
        /// The y axis includes 0 (otherwise it fits the data).
        y_from_zero: bool,
    },
    /// Grouped bars: `groups[g].1[c]` is group g's value in `categories[c]` (a missing or
    /// non-finite value leaves a gap). The y axis includes 0; values are written above bars.
    Bars {
        /// Label of the y axis.
        y_label: String,
        /// Names along the x axis, one cluster of bars each.
        categories: Vec<String>,
        /// `(legend name, value per category)`, one bar of each cluster per group.
        groups: Vec<(String, Vec<f64>)>,
    },
    /// One bar per zone (in zone order), coloured by state, its height the zone's share in
    /// percent; empty zones are marked below the axis.
    ZoneMap {
        /// Label of the x axis.
        x_label: String,
        /// Label of the y axis.
        y_label: String,
        /// One bar per zone, in zone order.
        zones: Vec<ZoneBar>,
    },
}

/// A chart: the file name it is written under (without extension), its title and content.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// File name the chart is written under, without extension.
    pub name: String,
    /// Title drawn above the chart.
    pub title: String,
    /// What the chart shows.
    pub kind: Kind,
}

/// An image format charts are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// SVG (vector, 800x450 user units or 800x300 for a zone map).
    Svg,
    /// PNG (raster, 1.5 pixels per SVG unit).
    Png,
}

impl Format {
    /// The file extension, without the dot.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Svg => "svg",
            Format::Png => "png",
        }
    }

    /// "svg", "png" or "both" (in that order).
    ///
    /// ```
    /// use wafsim_report::chart::Format;
    /// assert_eq!(Format::parse_list("both").unwrap(), vec![Format::Svg, Format::Png]);
    /// assert!(Format::parse_list("jpeg").is_err());
    /// ```
    pub fn parse_list(s: &str) -> Result<Vec<Format>, String> {
        match s {
            "svg" => Ok(vec![Format::Svg]),
            "png" => Ok(vec![Format::Png]),
            "both" => Ok(vec![Format::Svg, Format::Png]),
            _ => Err(format!("{s:?}: expected svg, png or both")),
        }
    }
}

impl Chart {
    /// A line chart.
    pub fn line(name: &str, title: &str, x_label: &str, y_label: &str, series: Vec<Series>, y_from_zero: bool) -> Chart {
        Chart {
            name: name.to_string(),
            title: title.to_string(),
            kind: Kind::Line { x_label: x_label.to_string(), y_label: y_label.to_string(), series, y_from_zero },
        }
    }

    /// A grouped bar chart.
    pub fn bars(name: &str, title: &str, y_label: &str, categories: Vec<String>, groups: Vec<(String, Vec<f64>)>) -> Chart {
        Chart { name: name.to_string(), title: title.to_string(), kind: Kind::Bars { y_label: y_label.to_string(), categories, groups } }
    }

    /// `name.svg` or `name.png`.
    pub fn file_name(&self, f: Format) -> String {
        format!("{}.{}", self.name, f.extension())
    }

    /// Names of the legend entries (series, groups or zone states shown).
    pub fn legend(&self) -> Vec<String> {
        match &self.kind {
            Kind::Line { series, .. } => series.iter().map(|s| s.name.clone()).collect(),
            Kind::Bars { groups, .. } => groups.iter().map(|g| g.0.clone()).collect(),
            Kind::ZoneMap { zones, .. } => {
                ZoneClass::ALL.iter().filter(|c| zones.iter().any(|z| z.class == **c)).map(|c| c.label().to_string()).collect()
            }
        }
    }

    /// Size in SVG user units.
    pub fn size(&self) -> (u32, u32) {
        match self.kind {
            Kind::ZoneMap { .. } => ZONE_MAP_SIZE,
            _ => SIZE,
        }
    }

    /// Size of the PNG in pixels.
    pub fn png_size(&self) -> (u32, u32) {
        let (w, h) = self.size();
        ((w as f64 * PNG_SCALE).round() as u32, (h as f64 * PNG_SCALE).round() as u32)
    }

    /// The chart as a standalone SVG document.
    pub fn svg(&self) -> io::Result<String> {
        register_font();
        let mut out = String::new();
        {
            let root = SVGBackend::with_string(&mut out, self.size()).into_drawing_area();
            self.draw(&root, 1.0).map_err(io::Error::other)?;
            root.present().map_err(io::Error::other)?;
        }
        out.push('\n');
        Ok(out)
    }

    /// The chart as a PNG file (8-bit RGB, [`Chart::png_size`]).
    pub fn png(&self) -> io::Result<Vec<u8>> {
        register_font();
        let (w, h) = self.png_size();
        let mut rgb = vec![0u8; w as usize * h as usize * 3];
        {
            let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
            self.draw(&root, PNG_SCALE).map_err(io::Error::other)?;
            root.present().map_err(io::Error::other)?;
        }
        let mut out = Vec::new();
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc.write_header().map_err(io::Error::other)?;
        writer.write_image_data(&rgb).map_err(io::Error::other)?;
        writer.finish().map_err(io::Error::other)?;
        Ok(out)
    }

    /// The file contents in format `f`.
    pub fn render(&self, f: Format) -> io::Result<Vec<u8>> {
        match f {
            Format::Svg => self.svg().map(String::into_bytes),
            Format::Png => self.png(),
        }
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>, s: f64) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE)?;
        let (w, _) = root.dim_in_pixel();
        let title = fit(root, &self.title, 18.0 * s, w as f64 - 20.0 * s)?;
        let area = root.titled(&self.title, title)?;
        // The legend sits right of the plot, so it never hides data.
        let legend = self.legend().iter().map(|n| ellipsize(n, LEGEND_NAME_CHARS)).collect::<Vec<_>>();
        let font = (FAMILY, 13.5 * s).into_font();
        let mut widest = 0.0f64;
        for n in &legend {
            widest = widest.max(area.estimate_text_size(n, &TextStyle::from(font.clone()))?.0 as f64);
        }
        let legend_w = if legend.is_empty() { 0.0 } else { (widest + 54.0 * s).min(w as f64 * 0.4) };
        let (plot, side) = area.split_horizontally(w as f64 - legend_w);
        let swatch = match self.kind {
            Kind::Line { .. } => Swatch::Line,
            _ => Swatch::Box,
        };
        let colours: Vec<(RGBColor, bool)> = match &self.kind {
            Kind::ZoneMap { zones, .. } => ZoneClass::ALL
                .iter()
                .filter(|c| zones.iter().any(|z| z.class == **c))
                .map(|c| (c.colour(), false))
                .collect(),
            _ => (0..legend.len()).map(style).collect(),
        };
        draw_legend(&side, &legend, &colours, swatch, s)?;
        match &self.kind {
            Kind::Line { x_label, y_label, series, y_from_zero } => line(&plot, x_label, y_label, series, *y_from_zero, s),
            Kind::Bars { y_label, categories, groups } => bars(&plot, y_label, categories, groups, s),
            Kind::ZoneMap { x_label, y_label, zones } => zone_map(&plot, x_label, y_label, zones, s),
        }
    }
}

type DrawResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// Write every chart in every format to `dir` (created if missing); the paths written.
pub fn write_all(dir: &Path, charts: &[Chart], formats: &[Format]) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut out = Vec::new();
    for c in charts {
        for &f in formats {
            let p = dir.join(c.file_name(f));
            std::fs::write(&p, c.render(f)?).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))?;
            out.push(p);
        }
    }
    Ok(out)
}

fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_err() {
            panic!("the embedded DejaVu Sans font does not parse");
        }
    });
}

/// The title font: `size`, or smaller until `text` fits in `width`.
fn fit<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, text: &str, size: f64, width: f64) -> Result<FontDesc<'static>, Box<dyn std::error::Error + Send + Sync>>
where
    DB::ErrorType: 'static,
{
    let mut size = size;
    loop {
        let font = (FAMILY, size).into_font();
        if size <= 9.0 || area.estimate_text_size(text, &TextStyle::from(font.clone()))?.0 as f64 <= width {
            return Ok(font);
        }
        size *= 0.92;
    }
}

/// Colour and dashing of series `i`.
fn style(i: usize) -> (RGBColor, bool) {
    (PALETTE[i % PALETTE.len()], i >= PALETTE.len())
}

#[derive(Clone, Copy, PartialEq)]
enum Swatch {
    Line,
    Box,
}

fn draw_legend<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, names: &[String], colours: &[(RGBColor, bool)], swatch: Swatch, s: f64) -> DrawResult
where
    DB::ErrorType: 'static,
{
    if names.is_empty() {
        return Ok(());
    }
    let (_, h) = area.dim_in_pixel();
    let row = 18.0 * s;
    let rows = (((h as f64 - 30.0 * s) / row).floor() as usize).max(1);
    let shown = if names.len() > rows { rows - 1 } else { names.len() };
    let font = (FAMILY, 13.5 * s).into_font().color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center));
    let x0 = (6.0 * s) as i32;
    for (i, name) in names.iter().take(shown).enumerate() {
        let y = (20.0 * s + row * i as f64) as i32;
        let (colour, dashed) = colours[i];
        match swatch {
            Swatch::Line if dashed => {
                for k in 0..3 {
                    let a = x0 + (k as f64 * 8.0 * s) as i32;
                    area.draw(&PathElement::new(vec![(a, y), (a + (5.0 * s) as i32, y)], colour.stroke_width(px(2.0, s))))?;
                }
            }
            Swatch::Line => area.draw(&PathElement::new(vec![(x0, y), (x0 + (22.0 * s) as i32, y)], colour.stroke_width(px(2.0, s))))?,
            Swatch::Box => {
                let d = (5.0 * s) as i32;
                area.draw(&Rectangle::new([(x0 + (6.0 * s) as i32, y - d), (x0 + (6.0 * s) as i32 + 2 * d, y + d)], colour.filled()))?
            }
        }
        area.draw(&Text::new(name.clone(), (x0 + (28.0 * s) as i32, y), font.clone()))?;
    }
    if shown < names.len() {
        let y = (20.0 * s + row * shown as f64) as i32;
        area.draw(&Text::new(format!("+ {} more", names.len() - shown), (x0 + (28.0 * s) as i32, y), font))?;
    }
    Ok(())
}

fn px(v: f64, s: f64) -> u32 {
    (v * s).round().max(1.0) as u32
}

fn line<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, x_label: &str, y_label: &str, series: &[Series], y_from_zero: bool, s: f64) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let clean: Vec<Vec<(f64, f64)>> = series
        .iter()
        .map(|s| downsample(&s.points.iter().copied().filter(|(x, y)| x.is_finite() && y.is_finite()).collect::<Vec<_>>(), MAX_POINTS))
        .collect();
    let has_data = clean.iter().any(|c| !c.is_empty());
    let (mut xlo, mut xhi, mut ylo, mut yhi) = (f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY, f64::NEG_INFINITY);
    for &(x, y) in clean.iter().flatten() {
        xlo = xlo.min(x);
        xhi = xhi.max(x);
        ylo = ylo.min(y);
        yhi = yhi.max(y);
    }
    if !has_data {
        (xlo, xhi, ylo, yhi) = (0.0, 1.0, 0.0, 1.0);
    }
    if y_from_zero {
        ylo = ylo.min(0.0);
        yhi = yhi.max(0.0);
    }
    let (xlo, xhi) = widen(xlo, xhi, 0.0);
    let (ylo, yhi) = widen(ylo, yhi, 0.05);
    let mut chart = frame(area, px(42.0, s), s)
        .build_cartesian_2d(xlo..xhi, ylo..yhi)?;
    mesh(&mut chart, x_label, y_label, s)?;
    if !has_data {
        no_data(&chart, ((xlo + xhi) / 2.0, (ylo + yhi) / 2.0), s)?;
    }
    for (i, pts) in clean.iter().enumerate() {
        let (colour, dashed) = style(i);
        let st = colour.stroke_width(px(1.8, s));
        if pts.len() >= 2 {
            if dashed {
                chart.draw_series(DashedLineSeries::new(pts.iter().copied(), (7.0 * s) as i32, (4.0 * s) as i32, st))?;
            } else {
                chart.draw_series(LineSeries::new(pts.iter().copied(), st))?;
            }
        }
    }
    // Markers after all lines, so a single point is not hidden under another series' line.
    for (i, pts) in clean.iter().enumerate() {
        let (colour, _) = style(i);
        if pts.len() <= MARKER_MAX_POINTS {
            let r = if pts.len() == 1 { 4.5 * s } else { 3.0 * s };
            chart.draw_series(pts.iter().map(|&p| Circle::new(p, r as i32, colour.filled())))?;
        }
    }
    Ok(())
}

fn bars<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, y_label: &str, categories: &[String], groups: &[(String, Vec<f64>)], s: f64) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let ncat = categories.len().max(1);
    let ng = groups.len().max(1);
    let value = |g: usize, c: usize| groups[g].1.get(c).copied().filter(|v| v.is_finite());
    let (mut lo, mut hi) = (0.0f64, 0.0f64);
    let mut has_data = false;
    for g in 0..groups.len() {
        for c in 0..categories.len() {
            if let Some(v) = value(g, c) {
                has_data = true;
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
    }
    // Headroom for the value labels.
    let (lo, hi) = widen(lo, hi, 0.12);
    let (lo, hi) = (if lo < 0.0 { lo } else { 0.0 }, if hi > 0.0 { hi } else { 0.0 });
    let labels: Vec<String> = categories.iter().map(|c| ellipsize(c, CATEGORY_CHARS)).collect();
    let tick = (FAMILY, 12.5 * s).into_font();
    let (w, _) = area.dim_in_pixel();
    let band_px = (w as f64 - 90.0 * s) / ncat as f64;
    let mut widest = 0.0f64;
    for l in &labels {
        widest = widest.max(area.estimate_text_size(l, &TextStyle::from(tick.clone()))?.0 as f64);
    }
    let rotate = widest + 6.0 * s > band_px;
    let label_area = if rotate { (widest + 40.0 * s).min(170.0 * s) } else { 42.0 * s };
    // x in thousandths of a category (plotters formats custom key points of integer axes only).
    let centres: Vec<i32> = (0..ncat as i32).map(|c| c * UNIT + UNIT / 2).collect();
    let mut chart = frame(area, label_area as u32, s)
        .build_cartesian_2d((0..ncat as i32 * UNIT).with_key_points(centres), lo..hi)?;
    // plotters centres x labels on their tick even when rotated: rotated ones are drawn below.
    let name = |v: &i32| if rotate { String::new() } else { labels.get((*v).max(0) as usize / UNIT as usize).cloned().unwrap_or_default() };
    let mut m = chart.configure_mesh();
    m.disable_x_mesh()
        .y_desc(y_label)
        .axis_desc_style((FAMILY, 15.0 * s))
        .label_style((FAMILY, 12.5 * s).into_font().color(&TEXT))
        .x_label_formatter(&name)
        .y_label_formatter(&|v| fmt_tick(*v))
        .bold_line_style(GRID)
        .light_line_style(GRID_FINE)
        .max_light_lines(2)
        .y_labels(7);
    m.draw()?;
    if rotate {
        // Read upwards, ending just below the axis under the category's centre.
        let font = TextStyle::from((FAMILY, 12.5 * s).into_font()).color(&TEXT).transform(FontTransform::Rotate270).pos(Pos::new(HPos::Right, VPos::Center));
        let (bx, by) = area.get_base_pixel();
        for (c, l) in labels.iter().enumerate() {
            let (x, y) = chart.backend_coord(&(c as i32 * UNIT + UNIT / 2, lo));
            area.draw(&Text::new(l.clone(), (x - bx, y - by + (8.0 * s) as i32), font.clone()))?;
        }
    }
    if !has_data {
        no_data(&chart, (ncat as i32 * UNIT / 2, (lo + hi) / 2.0), s)?;
    }
    let bar_w = (0.8 * UNIT as f64 / ng as f64) as i32;
    let bar_px = band_px * 0.8 / ng as f64;
    let vfont = TextStyle::from((FAMILY, 12.0 * s).into_font()).color(&TEXT);
    for (g, (_, _)) in groups.iter().enumerate() {
        let (colour, _) = style(g);
        for c in 0..categories.len() {
            let Some(v) = value(g, c) else { continue };
            let x0 = c as i32 * UNIT + UNIT / 10 + bar_w * g as i32;
            chart.draw_series(std::iter::once(Rectangle::new([(x0, 0.0), (x0 + bar_w, v)], colour.filled())))?;
            let label = fmt_value(v);
            if area.estimate_text_size(&label, &vfont)?.0 as f64 <= bar_px + 2.0 * s {
                let anchor = if v >= 0.0 { VPos::Bottom } else { VPos::Top };
                let y = if v >= 0.0 { v + (hi - lo) * 0.01 } else { v - (hi - lo) * 0.01 };
                chart.draw_series(std::iter::once(Text::new(label, (x0 + bar_w / 2, y), vfont.clone().pos(Pos::new(HPos::Center, anchor)))))?;
            }
        }
    }
    Ok(())
}

/// A chart builder with the margins and y-label room every chart shares (x-label room varies:
/// rotated category names need more), scaled by `s`.
fn frame<'a, 'b, DB: DrawingBackend>(area: &'a DrawingArea<DB, Shift>, x_label_area: u32, s: f64) -> ChartBuilder<'a, 'b, DB> {
    let mut b = ChartBuilder::on(area);
    b.margin_top(px(8.0, s)).margin_right(px(12.0, s)).margin_left(px(8.0, s)).margin_bottom(px(6.0, s)).x_label_area_size(x_label_area).y_label_area_size(px(62.0, s));
    b
}

fn zone_map<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, x_label: &str, y_label: &str, zones: &[ZoneBar], s: f64) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let n = zones.len().max(1) as f64;
    let mut chart = frame(area, px(42.0, s), s)
        .build_cartesian_2d(0.0..n, -8.0..105.0)?;
    let mut m = chart.configure_mesh();
    m.disable_x_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .axis_desc_style((FAMILY, 15.0 * s))
        .label_style((FAMILY, 12.5 * s).into_font().color(&TEXT))
        .x_label_formatter(&|v| if v.fract() == 0.0 { format!("{v}") } else { String::new() })
        .y_label_formatter(&|v| if *v < 0.0 { String::new() } else { format!("{v}%") })
        .bold_line_style(GRID)
        .light_line_style(GRID_FINE)
        .max_light_lines(2)
        .y_labels(6)
        .x_labels(8);
    m.draw()?;
    if zones.is_empty() {
        return no_data(&chart, (n / 2.0, 50.0), s);
    }
    // One rectangle per run of neighbouring zones that look the same (a drive has thousands of
    // zones, most of them full or empty), so the SVG stays small.
    let mut runs: Vec<(usize, usize, ZoneBar)> = Vec::new();
    for (i, z) in zones.iter().enumerate() {
        match runs.last_mut() {
            Some((_, end, last)) if *last == *z => *end = i + 1,
            _ => runs.push((i, i + 1, *z)),
        }
    }
    chart.draw_series(runs.iter().map(|&(a, b, z)| {
        let (y0, y1) = if z.class == ZoneClass::Empty { (-6.0, -2.0) } else { (0.0, 100.0 * z.share.clamp(0.0, 1.0)) };
        Rectangle::new([(a as f64, y0), (b as f64, y1)], z.class.colour().filled())
    }))?;
    chart.draw_series(std::iter::once(PathElement::new(vec![(0.0, 0.0), (n, 0.0)], BLACK.stroke_width(1))))?;
    Ok(())
}

/// Axes, grid, tick labels and axis titles of a numeric chart.
fn mesh<DB: DrawingBackend>(chart: &mut ChartContext<'_, DB, Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>>, x_label: &str, y_label: &str, s: f64) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let mut m = chart.configure_mesh();
    m.x_desc(x_label)
        .y_desc(y_label)
        .axis_desc_style((FAMILY, 15.0 * s))
        .label_style((FAMILY, 12.5 * s).into_font().color(&TEXT))
        .x_label_formatter(&|v| fmt_tick(*v))
        .y_label_formatter(&|v| fmt_tick(*v))
        .bold_line_style(GRID)
        .light_line_style(GRID_FINE)
        .max_light_lines(2)
        .x_labels(8)
        .y_labels(7)
        .draw()?;
    Ok(())
}

fn no_data<DB: DrawingBackend, XT, X: Ranged<ValueType = XT>, Y: Ranged<ValueType = f64>>(chart: &ChartContext<'_, DB, Cartesian2d<X, Y>>, at: (XT, f64), s: f64) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let font = (FAMILY, 16.0 * s).into_font().color(&RGBColor(0x88, 0x88, 0x88)).pos(Pos::new(HPos::Center, VPos::Center));
    chart.plotting_area().draw(&Text::new("No data", at, font))?;
    Ok(())
}

/// `[lo, hi]` with `pad` of the span added on each side that is not at 0; a degenerate
/// range becomes a unit-wide one around its value.
fn widen(lo: f64, hi: f64, pad: f64) -> (f64, f64) {
    if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
        let d = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        return if lo == 0.0 { (0.0, 1.0) } else { (lo - d, hi + d) };
    }
    let span = hi - lo;
    (if lo == 0.0 { 0.0 } else { lo - span * pad }, if hi == 0.0 { 0.0 } else { hi + span * pad })
}

/// `s` cut to `max` characters with an ellipsis.
fn ellipsize(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('…');
        t
    }
}

/// Tick label: at most three decimals (trailing zeros dropped), SI suffixes from 10,000 up.
fn fmt_tick(v: f64) -> String {
    if !v.is_finite() || v.abs() < 1e-12 {
        return "0".to_string();
    }
    let a = v.abs();
    let (div, suffix) = match a {
        a if a >= 1e13 => (1e12, "T"),
        a if a >= 1e10 => (1e9, "G"),
        a if a >= 1e7 => (1e6, "M"),
        a if a >= 1e4 => (1e3, "k"),
        _ => (1.0, ""),
    };
    let decimals = if a < 0.01 { 5 } else { 3 };
    format!("{}{suffix}", trim_zeros(format!("{:.decimals$}", v / div)))
}

/// Value label with three significant digits: `1.23`, `45.6`, `789`, `12.3k`, `4.56M`.
fn fmt_value(v: f64) -> String {
    if v == 0.0 {
        return "0".to_string();
    }
    let a = v.abs();
    let (div, suffix) = match a {
        a if a >= 1e9 => (1e9, "G"),
        a if a >= 1e6 => (1e6, "M"),
        a if a >= 1e3 => (1e3, "k"),
        _ => (1.0, ""),
    };
    let x = v / div;
    let decimals = if x.abs() >= 100.0 { 0 } else if x.abs() >= 10.0 { 1 } else { 2 };
    format!("{}{suffix}", trim_zeros(format!("{x:.decimals$}")))
}

fn trim_zeros(s: String) -> String {
    if s.contains('.') {
        let t = s.trim_end_matches('0').trim_end_matches('.');
        if t == "-0" { "0".to_string() } else { t.to_string() }
    } else {
        s
    }
}

/// Reduce `points` to at most `max` points (`max >= 4`): keep the first and the last, split
/// the rest into `(max - 2) / 2` buckets and keep each bucket's minimum and maximum y (in
/// their original order), so spikes and dips survive.
fn downsample(points: &[(f64, f64)], max: usize) -> Vec<(f64, f64)> {
    let max = max.max(4);
    if points.len() <= max {
        return points.to_vec();
    }
    let inner = &points[1..points.len() - 1];
    let buckets = (max - 2) / 2;
    let mut out = Vec::with_capacity(max);
    out.push(points[0]);
    for b in 0..buckets {
        let (s, e) = (b * inner.len() / buckets, (b + 1) * inner.len() / buckets);
        if s == e {
            continue;
        }
        let (mut imin, mut imax) = (s, s);
        for i in s..e {
            if inner[i].1 < inner[imin].1 {
                imin = i;
            }
            if inner[i].1 > inner[imax].1 {
                imax = i;
            }
        }
        let (i0, i1) = (imin.min(imax), imin.max(imax));
        out.push(inner[i0]);
        if i1 != i0 {
            out.push(inner[i1]);
        }
    }
    out.push(points[points.len() - 1]);
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A rough well-formedness check of an SVG document: one `<svg` root that closes at the
    /// end, balanced tags (self-closing and `<?...?>` handled), `&` only in the five predefined
    /// entities, no non-finite number.
    pub(crate) fn check_svg(s: &str) {
        assert!(s.starts_with("<svg") || s.starts_with("<?xml"), "starts like an SVG");
        assert_eq!(s.matches("<svg").count(), 1, "exactly one <svg");
        assert!(s.trim_end().ends_with("</svg>"), "ends with </svg>");
        let mut depth = 0i64;
        let mut rest = s;
        while let Some(i) = rest.find('<') {
            let end = rest[i..].find('>').expect("tag closes") + i;
            let tag = &rest[i..=end];
            assert_eq!(tag.matches('"').count() % 2, 0, "unpaired quote in {tag}");
            if tag.starts_with("<?") || tag.starts_with("<!") || tag.ends_with("/>") {
            } else if tag.starts_with("</") {
                depth -= 1;
                assert!(depth >= 0, "close without open at {tag}");
            } else {
                depth += 1;
            }
            rest = &rest[end + 1..];
        }
        assert_eq!(depth, 0, "unbalanced tags");
        for (i, _) in s.match_indices('&') {
            assert!(["&amp;", "&lt;", "&gt;", "&quot;", "&apos;", "&#"].iter().any(|e| s[i..].starts_with(e)), "bare & at {i}");
        }
        assert!(!s.contains("NaN") && !s.contains("inf\""), "non-finite number leaked");
    }

    /// The trimmed contents of every `<text>` element.
    pub(crate) fn texts(svg: &str) -> Vec<String> {
        let mut out = Vec::new();
        for (i, _) in svg.match_indices("<text") {
            let open = svg[i..].find('>').unwrap() + i + 1;
            let close = svg[open..].find("</text>").unwrap() + open;
            out.push(svg[open..close].trim().to_string());
        }
        out
    }

    fn has_texts(svg: &str, want: &[&str]) {
        let t = texts(svg);
        for w in want {
            assert!(t.iter().any(|x| x == w), "{w:?} not among {t:?}");
        }
    }

    /// (width, height) from the IHDR chunk, after checking the PNG signature.
    pub(crate) fn png_dims(p: &[u8]) -> (u32, u32) {
        assert!(p.starts_with(b"\x89PNG\r\n\x1a\n"), "PNG signature");
        assert_eq!(&p[12..16], b"IHDR", "IHDR first");
        (u32::from_be_bytes(p[16..20].try_into().unwrap()), u32::from_be_bytes(p[20..24].try_into().unwrap()))
    }

    /// Number of distinct RGB colours of a PNG (decoded).
    pub(crate) fn png_colours(p: &[u8]) -> usize {
        let mut r = png::Decoder::new(std::io::Cursor::new(p)).read_info().unwrap();
        let mut buf = vec![0; r.output_buffer_size().unwrap()];
        let info = r.next_frame(&mut buf).unwrap();
        assert_eq!(info.color_type, png::ColorType::Rgb);
        let mut seen = std::collections::HashSet::new();
        for px in buf[..info.buffer_size()].chunks(3) {
            seen.insert((px[0], px[1], px[2]));
        }
        seen.len()
    }

    /// Pixels of exactly colour `c`.
    fn png_count(p: &[u8], c: RGBColor) -> usize {
        let mut r = png::Decoder::new(std::io::Cursor::new(p)).read_info().unwrap();
        let mut buf = vec![0; r.output_buffer_size().unwrap()];
        let info = r.next_frame(&mut buf).unwrap();
        buf[..info.buffer_size()].chunks(3).filter(|px| (px[0], px[1], px[2]) == (c.0, c.1, c.2)).count()
    }

    fn ramp(name: &str, n: usize, f: impl Fn(f64) -> f64) -> Series {
        Series::new(name, (0..n).map(|i| (i as f64, f(i as f64))).collect())
    }

    #[test]
    fn line_chart_svg_and_png() {
        let c = Chart::line(
            "waf",
            "WAF vs. writes",
            "writes (GiB)",
            "WAF",
            vec![ramp("greedy", 100, |x| 1.0 + x / 50.0), ramp("cost-benefit", 100, |x| 1.0 + x / 80.0)],
            true,
        );
        let svg = c.svg().unwrap();
        check_svg(&svg);
        has_texts(&svg, &["WAF vs. writes", "writes (GiB)", "WAF", "greedy", "cost-benefit"]);
        assert!(svg.contains(r#"width="800" height="450""#), "SVG size");
        let png = c.png().unwrap();
        assert_eq!(png_dims(&png), (1200, 675));
        assert_eq!(c.png_size(), (1200, 675));
        assert!(png_colours(&png) > 10, "antialiased text and two series");
        // Both series' colours are drawn (lines 1.8 x 1.5 px wide, plus the legend swatches).
        assert!(png_count(&png, PALETTE[0]) > 500 && png_count(&png, PALETTE[1]) > 500);
        assert_eq!(c.file_name(Format::Png), "waf.png");
    }

    #[test]
    fn bar_chart_labels_and_values() {
        let tenants = vec!["tenant A".to_string(), "tenant B".to_string()];
        let groups = vec![("shared".to_string(), vec![2.4, 1.3]), ("isolated".to_string(), vec![1.6, f64::NAN])];
        let c = Chart::bars("tenant_waf", "WAF per tenant", "WAF", tenants, groups);
        let svg = c.svg().unwrap();
        check_svg(&svg);
        has_texts(&svg, &["WAF per tenant", "WAF", "tenant A", "tenant B", "shared", "isolated", "2.4", "1.3", "1.6"]);
        let png = c.png().unwrap();
        assert_eq!(png_dims(&png), (1200, 675));
        assert!(png_count(&png, PALETTE[0]) > 1000 && png_count(&png, PALETTE[1]) > 1000, "bars of both groups");
        // Long category names rotate and are shortened, and still render.
        let long: Vec<String> = (0..12).map(|i| format!("a rather long namespace name number {i}")).collect();
        let c = Chart::bars("b", "long", "WAF", long, vec![("v".into(), (0..12).map(|i| i as f64).collect())]);
        let svg = c.svg().unwrap();
        check_svg(&svg);
        assert!(texts(&svg).iter().any(|t| t.starts_with("a rather long namespace") && t.ends_with('…')), "ellipsized category");
    }

    #[test]
    fn zone_map_colours_states() {
        let zones = vec![
            ZoneBar { class: ZoneClass::Full, share: 1.0 },
            ZoneBar { class: ZoneClass::Open, share: 0.25 },
            ZoneBar { class: ZoneClass::Empty, share: 0.0 },
            ZoneBar { class: ZoneClass::Closed, share: 0.5 },
        ];
        let c = Chart {
            name: "zone_map_v_ns".into(),
            title: "zns: 56.2% written".into(),
            kind: Kind::ZoneMap { x_label: "zone index".into(), y_label: "written (%)".into(), zones },
        };
        assert_eq!(c.size(), ZONE_MAP_SIZE);
        let svg = c.svg().unwrap();
        check_svg(&svg);
        has_texts(&svg, &["zns: 56.2% written", "zone index", "written (%)", "full", "open", "closed", "empty (mark below 0)"]);
        assert!(!texts(&svg).iter().any(|t| t == "read-only"), "only states present are in the legend");
        let png = c.png().unwrap();
        assert_eq!(png_dims(&png), (1200, 450));
        for cl in [ZoneClass::Full, ZoneClass::Open, ZoneClass::Closed, ZoneClass::Empty] {
            assert!(png_count(&png, cl.colour()) > 300, "{:?} drawn", cl);
        }
        // 1,000 zones in three runs: three rectangles (plus background and legend swatches).
        let mut zones = vec![ZoneBar { class: ZoneClass::Full, share: 1.0 }; 400];
        zones.extend(vec![ZoneBar { class: ZoneClass::Empty, share: 0.0 }; 500]);
        zones.extend(vec![ZoneBar { class: ZoneClass::Full, share: 1.0 }; 100]);
        let big = Chart { name: "z".into(), title: "z".into(), kind: Kind::ZoneMap { x_label: "x".into(), y_label: "y".into(), zones } };
        let svg = big.svg().unwrap();
        check_svg(&svg);
        assert_eq!(svg.matches("<rect").count(), 1 + 2 + 3, "background, two legend swatches, three runs");
        // A full zone's bar is taller than a half-written one's: more pixels.
        assert!(png_count(&png, ZoneClass::Full.colour()) > png_count(&png, ZoneClass::Closed.colour()));
    }

    #[test]
    fn escaping_empty_and_non_finite() {
        let s = Series::new("a<b & \"c\"", vec![(0.0, 1.0), (f64::NAN, 2.0), (1.0, f64::INFINITY), (2.0, 3.0)]);
        let c = Chart::line("e", "x < y & z", "x", "y", vec![s], false);
        let svg = c.svg().unwrap();
        check_svg(&svg);
        assert!(svg.contains("a&lt;b &amp; &quot;c&quot;") || svg.contains("a&lt;b &amp; \"c\""), "{svg}");
        assert!(svg.contains("x &lt; y &amp; z"));
        let empty = Chart::line("e", "nothing", "x", "y", vec![], true);
        let svg = empty.svg().unwrap();
        check_svg(&svg);
        has_texts(&svg, &["No data"]);
        assert!(png_colours(&empty.png().unwrap()) > 2);
        let no_bars = Chart::bars("b", "no bars", "WAF", vec![], vec![]);
        has_texts(&no_bars.svg().unwrap(), &["No data"]);
        let lone = Chart::line("l", "one point", "x", "y", vec![Series::new("p", vec![(3.0, 3.0)])], false);
        let png = lone.png().unwrap();
        assert!(png_count(&png, PALETTE[0]) > 30, "a single point gets a visible marker");
    }

    #[test]
    fn many_series_dash_and_overflow_the_legend() {
        let series: Vec<Series> = (0..40).map(|i| ramp(&format!("series {i} with a rather long name indeed"), 50, move |x| x * i as f64)).collect();
        let c = Chart::line("m", "many", "x", "y", series, true);
        let svg = c.svg().unwrap();
        check_svg(&svg);
        has_texts(&svg, &["series 0 with a rather long n…"]);
        assert!(texts(&svg).iter().any(|t| t.starts_with("+ ") && t.ends_with(" more")), "legend says how many it left out");
        assert!(svg.contains("stroke-dasharray") || svg.matches("<path").count() + svg.matches("<polyline").count() > 40, "dashed series 9+");
    }

    #[test]
    fn deterministic() {
        let c = Chart::line("d", "same", "x", "y", vec![ramp("a", 3000, |x| (x / 10.0).sin())], true);
        assert_eq!(c.svg().unwrap(), c.svg().unwrap());
        assert_eq!(c.png().unwrap(), c.png().unwrap());
    }

    #[test]
    fn downsampling_keeps_spikes() {
        let mut pts: Vec<(f64, f64)> = (0..10_000).map(|i| (i as f64, 1.0)).collect();
        pts[4321].1 = 50.0;
        pts[7777].1 = -5.0;
        let d = downsample(&pts, 2000);
        assert!(d.len() <= 2000);
        assert_eq!(d[0], pts[0]);
        assert_eq!(*d.last().unwrap(), pts[9999]);
        assert!(d.contains(&(4321.0, 50.0)) && d.contains(&(7777.0, -5.0)));
        assert!(d.windows(2).all(|w| w[0].0 < w[1].0), "order kept");
    }

    #[test]
    fn tick_and_value_labels() {
        assert_eq!(fmt_tick(0.0), "0");
        assert_eq!(fmt_tick(0.30000000000000004), "0.3");
        assert_eq!(fmt_tick(1.5), "1.5");
        assert_eq!(fmt_tick(2500.0), "2500");
        assert_eq!(fmt_tick(12_500.0), "12.5k");
        assert_eq!(fmt_tick(4e6), "4000k");
        assert_eq!(fmt_tick(4e7), "40M");
        assert_eq!(fmt_tick(-0.5), "-0.5");
        assert_eq!(fmt_value(2.4), "2.4");
        assert_eq!(fmt_value(1.2345), "1.23");
        assert_eq!(fmt_value(45.67), "45.7");
        assert_eq!(fmt_value(789.4), "789");
        assert_eq!(fmt_value(12_345.0), "12.3k");
        assert_eq!(fmt_value(4.56e6), "4.56M");
        assert_eq!(ellipsize("abcdef", 4), "abc…");
        assert_eq!(Format::parse_list("svg").unwrap(), [Format::Svg]);
        assert_eq!(Format::parse_list("png").unwrap(), [Format::Png]);
    }
}
