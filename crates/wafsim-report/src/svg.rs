//! Small, dependency-free SVG chart writer (line charts and grouped bar charts).
//!
//! The output is a standalone SVG 1.1 document of 800x450 user units with a white background,
//! "nice" axis ticks (steps of 1, 2 or 5 times a power of ten), compact tick labels
//! (`0.5`, `1.5k`, `4M`, ...), a legend, and a fixed colour-blind-safe palette
//! (Okabe & Ito). All text is XML-escaped, non-finite data points are skipped, and the
//! output is deterministic: the same input always gives a byte-identical string.
//!
//! ```
//! use wafsim_report::svg::{line_chart, Series};
//!
//! let s = Series::new("WAF", vec![(0.0, 1.0), (1.0, 1.8), (2.0, 2.4)]);
//! let svg = line_chart("WAF over time", "host writes (GiB)", "WAF", &[s], true);
//! assert!(svg.starts_with("<?xml"));
//! assert!(svg.ends_with("</svg>\n"));
//! ```

use std::fmt::Write as _;

/// Canvas width in SVG user units.
const WIDTH: f64 = 800.0;
/// Canvas height in SVG user units.
const HEIGHT: f64 = 450.0;
/// Above this many points a series is downsampled before it is drawn.
const MAX_POLYLINE_POINTS: usize = 2000;
/// Series with at most this many (finite) points also get a marker on every point.
const MARKER_MAX_POINTS: usize = 20;
/// Aimed-for number of tick intervals per axis.
const TICK_TARGET: usize = 5;

/// Okabe & Ito colour-blind-safe palette, reordered so the colours with the best contrast on
/// white come first (yellow last).
/// The first colour of the palette (single-series charts).
pub(crate) const PALETTE_FIRST: &str = PALETTE[0];
const PALETTE: [&str; 8] = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"];
/// Dash patterns used once the palette wraps around (series 9-16, 17-24, ...).
const DASHES: [&str; 3] = ["", "7 4", "2 3"];

const TITLE_FONT: f64 = 16.0;
const LABEL_FONT: f64 = 13.0;
const TICK_FONT: f64 = 11.0;
const LEGEND_FONT: f64 = 12.0;
const LEGEND_ROW: f64 = 18.0;
const LEGEND_NAME_CHARS: usize = 30;
const CATEGORY_CHARS: usize = 24;
const TITLE_CHARS: usize = 90;
const PLOT_TOP: f64 = 44.0;
const RIGHT_PAD: f64 = 15.0;

/// One line of a line chart.
///
/// `points` are `(x, y)` pairs drawn in the given order; pairs where either coordinate is NaN
/// or infinite are skipped.
///
/// ```
/// use wafsim_report::svg::Series;
///
/// let s = Series { name: "tenant A".to_string(), points: vec![(0.0, 1.0), (10.0, 1.4)] };
/// assert_eq!(s.points.len(), 2);
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Series {
    /// Name shown in the legend (and as a tooltip on the line).
    pub name: String,
    /// Data points as `(x, y)`.
    pub points: Vec<(f64, f64)>,
}

impl Series {
    /// Convenience constructor.
    ///
    /// ```
    /// use wafsim_report::svg::Series;
    ///
    /// let s = Series::new("greedy", vec![(1.0, 2.0)]);
    /// assert_eq!(s.name, "greedy");
    /// assert_eq!(s.points, vec![(1.0, 2.0)]);
    /// ```
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Series { name: name.into(), points }
    }
}

/// A line chart: x and y axes with "nice" tick values (1/2/5 x 10^k steps), axis labels, title,
/// legend, one colour per series (a fixed colour-blind-safe palette), optional y from 0.
///
/// * Non-finite points are skipped; a series with a single point is drawn as a marker, series
///   with up to 20 points get markers on every point.
/// * A series with more than 2,000 points is downsampled (first and last point kept, plus the
///   minimum and maximum of each bucket, so spikes survive).
/// * With `y_from_zero` the y axis always includes 0.
/// * Empty input gives a chart with empty axes and a "No data" note.
/// * After eight series the palette repeats with dashed lines.
///
/// ```
/// use wafsim_report::svg::{line_chart, Series};
///
/// let greedy = Series::new("greedy", (0..100).map(|i| (i as f64, 1.0 + i as f64 / 50.0)).collect());
/// let cb = Series::new("cost-benefit", (0..100).map(|i| (i as f64, 1.0 + i as f64 / 80.0)).collect());
/// let svg = line_chart("WAF vs. writes", "writes (GiB)", "WAF", &[greedy, cb], true);
/// assert_eq!(svg.matches("<polyline").count(), 2);
/// assert!(svg.contains("cost-benefit"));
/// ```
pub fn line_chart(title: &str, x_label: &str, y_label: &str, series: &[Series], y_from_zero: bool) -> String {
    let clean: Vec<Vec<(f64, f64)>> = series
        .iter()
        .map(|s| s.points.iter().copied().filter(|(x, y)| x.is_finite() && y.is_finite()).collect())
        .collect();
    let all = || clean.iter().flatten();
    let has_data = all().next().is_some();

    let (mut xlo, mut xhi, mut ylo, mut yhi) = (f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY, f64::NEG_INFINITY);
    for &(x, y) in all() {
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
        if ylo == 0.0 && yhi == 0.0 {
            yhi = 1.0;
        }
    }
    let xt = nice_ticks(xlo, xhi, TICK_TARGET);
    let yt = nice_ticks(ylo, yhi, TICK_TARGET);
    let ylabels: Vec<String> = yt.values.iter().map(|&v| fmt_tick(v, yt.exp)).collect();
    let xlabels: Vec<String> = xt.values.iter().map(|&v| fmt_tick(v, xt.exp)).collect();

    let names: Vec<String> = series.iter().map(|s| ellipsize(&s.name, LEGEND_NAME_CHARS)).collect();
    let legend_w = legend_width(&names);
    let left = y_axis_left(&ylabels);
    let plot = Plot {
        left,
        top: PLOT_TOP,
        right: WIDTH - RIGHT_PAD - legend_w,
        bottom: HEIGHT - 52.0,
        x0: first(&xt.values),
        x1: last(&xt.values),
        y0: first(&yt.values),
        y1: last(&yt.values),
    };

    let mut out = String::new();
    header(&mut out, title);
    y_grid_and_labels(&mut out, &plot, &yt.values, &ylabels);

    // Vertical grid lines, tick marks and (thinned if crowded) labels on the x axis.
    let n = xt.values.len();
    let spacing = if n > 1 { (plot.right - plot.left) / (n - 1) as f64 } else { f64::INFINITY };
    let widest = xlabels.iter().map(|l| text_w(l, TICK_FONT)).fold(0.0, f64::max);
    let stride = ((widest + 10.0) / spacing).ceil().max(1.0) as usize;
    for (i, (&v, label)) in xt.values.iter().zip(&xlabels).enumerate() {
        let x = c(plot.sx(v));
        if i > 0 && i + 1 < n {
            let _ = writeln!(
                out,
                r##"<line x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="#e6e6e6" stroke-width="1"/>"##,
                c(plot.top),
                c(plot.bottom)
            );
        }
        let _ = writeln!(
            out,
            r##"<line x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="#333333" stroke-width="1"/>"##,
            c(plot.bottom),
            c(plot.bottom + 5.0)
        );
        if i % stride == 0 {
            let _ = writeln!(
                out,
                r##"<text x="{x}" y="{}" font-size="{TICK_FONT}" text-anchor="middle" fill="#333333">{}</text>"##,
                c(plot.bottom + 18.0),
                esc(label)
            );
        }
    }
    axes(&mut out, &plot);
    let _ = writeln!(
        out,
        r##"<text x="{}" y="{}" font-size="{LABEL_FONT}" text-anchor="middle" fill="#000000">{}</text>"##,
        c((plot.left + plot.right) / 2.0),
        c(plot.bottom + 40.0),
        esc(&ellipsize(x_label, TITLE_CHARS))
    );
    y_axis_label(&mut out, &plot, y_label, &ylabels);

    if !has_data {
        no_data(&mut out, &plot);
    }
    for (i, (s, pts)) in series.iter().zip(&clean).enumerate() {
        let (colour, dash) = style(i);
        let dash_attr = if dash.is_empty() { String::new() } else { format!(r#" stroke-dasharray="{dash}""#) };
        if pts.len() >= 2 {
            let drawn = downsample(pts, MAX_POLYLINE_POINTS);
            let mut p = String::with_capacity(drawn.len() * 14);
            for (j, &(x, y)) in drawn.iter().enumerate() {
                if j > 0 {
                    p.push(' ');
                }
                let _ = write!(p, "{},{}", c(plot.sx(x)), c(plot.sy(y)));
            }
            let _ = writeln!(
                out,
                r##"<polyline points="{p}" fill="none" stroke="{colour}" stroke-width="1.8" stroke-linejoin="round" stroke-linecap="round"{dash_attr}><title>{}</title></polyline>"##,
                esc(&s.name)
            );
        }
    }
    // Markers after all lines, so single points are not hidden under another series' line.
    for (i, pts) in clean.iter().enumerate() {
        let (colour, _) = style(i);
        // A lone point gets a bigger, outlined marker: it has no line to make it visible.
        let r = if pts.len() == 1 { r##"4.5" stroke="#ffffff" stroke-width="1"## } else { "3" };
        if pts.len() <= MARKER_MAX_POINTS {
            for &(x, y) in pts {
                let _ = writeln!(
                    out,
                    r##"<circle cx="{}" cy="{}" r="{r}" fill="{colour}"/>"##,
                    c(plot.sx(x)),
                    c(plot.sy(y))
                );
            }
        }
    }
    legend(&mut out, &plot, &names, LegendKind::Line);
    out.push_str("</svg>\n");
    out
}

/// Grouped bar chart: categories on x (e.g. tenants), one bar per group (e.g. variant) in each category,
/// value labels above bars, legend.
///
/// `groups[g].1[c]` is the value of group `g` in category `categories[c]`. Missing values
/// (a shorter vector) and non-finite values leave a gap; extra values are ignored. The y axis
/// always includes 0; negative values are drawn downwards with their label below the bar.
/// Value labels are rotated when they are wider than a bar and left out when the bars are too
/// thin to hold even rotated text. Long category names are rotated and, past 24 characters,
/// shortened with an ellipsis.
///
/// ```
/// use wafsim_report::svg::bar_chart;
///
/// let tenants = vec!["tenant A".to_string(), "tenant B".to_string()];
/// let groups = vec![
///     ("shared".to_string(), vec![2.4, 1.3]),
///     ("isolated".to_string(), vec![1.6, 1.2]),
/// ];
/// let svg = bar_chart("WAF per tenant", "WAF", &tenants, &groups);
/// assert!(svg.contains(">2.4<"));
/// assert!(svg.contains("isolated"));
/// ```
pub fn bar_chart(title: &str, y_label: &str, categories: &[String], groups: &[(String, Vec<f64>)]) -> String {
    let ncat = categories.len();
    let ng = groups.len();
    let value = |g: usize, ci: usize| groups[g].1.get(ci).copied().filter(|v| v.is_finite());

    let (mut lo, mut hi) = (0.0f64, 0.0f64);
    let mut has_data = false;
    for g in 0..ng {
        for ci in 0..ncat {
            if let Some(v) = value(g, ci) {
                has_data = true;
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
    }
    if lo == 0.0 && hi == 0.0 {
        hi = 1.0;
    }

    let names: Vec<String> = groups.iter().map(|(n, _)| ellipsize(n, LEGEND_NAME_CHARS)).collect();
    let legend_w = legend_width(&names);
    let right = WIDTH - RIGHT_PAD - legend_w;
    let cat_labels: Vec<String> = categories.iter().map(|s| ellipsize(s, CATEGORY_CHARS)).collect();
    let cat_w = cat_labels.iter().map(|l| text_w(l, TICK_FONT)).fold(0.0, f64::max);
    let val_labels: Vec<Vec<String>> =
        (0..ng).map(|g| (0..ncat).map(|ci| value(g, ci).map(fmt_value).unwrap_or_default()).collect()).collect();
    let val_w = val_labels.iter().flatten().map(|l| text_w(l, TICK_FONT)).fold(0.0, f64::max);
    let (sin, cos) = (40f64.to_radians().sin(), 40f64.to_radians().cos());

    // The layout depends on itself (margin <- tick labels <- headroom <- bar width <- margin);
    // two passes starting from a typical margin are plenty.
    let mut left = 70.0;
    let mut layout = None;
    for _ in 0..2 {
        let band = (right - left) / ncat.max(1) as f64;
        let bar_w = band * 0.8 / ng.max(1) as f64;
        let rotate_cats = cat_w > band - 6.0;
        let bottom_margin = if rotate_cats { (24.0 + cat_w * sin + TICK_FONT * cos).min(170.0) } else { 42.0 };
        let bottom = HEIGHT - bottom_margin;
        let rotate_vals = val_w + 2.0 > bar_w;
        let show_vals = has_data && (!rotate_vals || bar_w >= 9.0);
        let head_px = match (show_vals, rotate_vals) {
            (false, _) => 0.0,
            (true, false) => 16.0,
            (true, true) => val_w + 6.0,
        };
        let plot_h = bottom - PLOT_TOP;
        let head = |span: f64| if head_px > 0.0 { span * head_px / (plot_h - head_px).max(1.0) } else { 0.0 };
        let span = hi - lo;
        let (l2, h2) =
            (if lo < 0.0 { lo - head(span) } else { lo }, if hi > 0.0 && has_data { hi + head(span) } else { hi });
        let yt = nice_ticks(l2, h2, TICK_TARGET);
        let ylabels: Vec<String> = yt.values.iter().map(|&v| fmt_tick(v, yt.exp)).collect();
        let mut new_left = y_axis_left(&ylabels);
        if rotate_cats {
            // The first rotated category label hangs to the left of its band centre.
            new_left = new_left.max(cat_w * cos - band / 2.0 + 8.0);
        }
        left = new_left.min(right - 100.0);
        layout = Some((bottom, rotate_cats, rotate_vals, show_vals, yt, ylabels));
    }
    let (bottom, rotate_cats, rotate_vals, show_vals, yt, ylabels) = layout.expect("two passes ran");
    let plot =
        Plot { left, top: PLOT_TOP, right, bottom, x0: 0.0, x1: 1.0, y0: first(&yt.values), y1: last(&yt.values) };
    let band = (plot.right - plot.left) / ncat.max(1) as f64;
    let bar_w = band * 0.8 / ng.max(1) as f64;

    let mut out = String::new();
    header(&mut out, title);
    y_grid_and_labels(&mut out, &plot, &yt.values, &ylabels);
    let zero = plot.sy(0.0);

    for (ci, label) in cat_labels.iter().enumerate() {
        let cx = plot.left + band * (ci as f64 + 0.5);
        if ci > 0 {
            let x = c(plot.left + band * ci as f64);
            let _ = writeln!(
                out,
                r##"<line x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="#333333" stroke-width="1"/>"##,
                c(plot.bottom),
                c(plot.bottom + 5.0)
            );
        }
        if rotate_cats {
            let (x, y) = (c(cx), c(plot.bottom + 14.0));
            let _ = writeln!(
                out,
                r##"<text x="{x}" y="{y}" font-size="{TICK_FONT}" text-anchor="end" transform="rotate(-40 {x} {y})" fill="#333333">{}</text>"##,
                esc(label)
            );
        } else {
            let _ = writeln!(
                out,
                r##"<text x="{}" y="{}" font-size="{TICK_FONT}" text-anchor="middle" fill="#333333">{}</text>"##,
                c(cx),
                c(plot.bottom + 18.0),
                esc(label)
            );
        }
        for g in 0..ng {
            let Some(v) = value(g, ci) else { continue };
            let x = plot.left + band * ci as f64 + band * 0.1 + bar_w * g as f64;
            let y = plot.sy(v);
            let (top, h) = if y < zero { (y, zero - y) } else { (zero, y - zero) };
            let (colour, _) = style(g);
            let _ = writeln!(
                out,
                r##"<rect x="{}" y="{}" width="{}" height="{}" fill="{colour}"><title>{}: {}</title></rect>"##,
                c(x + bar_w * 0.04),
                c(top),
                c(bar_w * 0.92),
                c(h),
                esc(&format!("{} / {}", groups[g].0, categories[ci])),
                esc(&val_labels[g][ci])
            );
            if !show_vals {
                continue;
            }
            let mid = x + bar_w / 2.0;
            let label = esc(&val_labels[g][ci]);
            if rotate_vals {
                let (lx, ly) = (c(mid + TICK_FONT * 0.35), c(if v < 0.0 { y + 4.0 } else { y - 4.0 }));
                let anchor = if v < 0.0 { "end" } else { "start" };
                let _ = writeln!(
                    out,
                    r##"<text x="{lx}" y="{ly}" font-size="{TICK_FONT}" text-anchor="{anchor}" transform="rotate(-90 {lx} {ly})" fill="#222222">{label}</text>"##
                );
            } else {
                let ly = if v < 0.0 { y + 13.0 } else { y - 4.0 };
                let _ = writeln!(
                    out,
                    r##"<text x="{}" y="{}" font-size="{TICK_FONT}" text-anchor="middle" fill="#222222">{label}</text>"##,
                    c(mid),
                    c(ly)
                );
            }
        }
    }
    axes(&mut out, &plot);
    if lo < 0.0 {
        let _ = writeln!(
            out,
            r##"<line x1="{}" y1="{z}" x2="{}" y2="{z}" stroke="#333333" stroke-width="1"/>"##,
            c(plot.left),
            c(plot.right),
            z = c(zero)
        );
    }
    y_axis_label(&mut out, &plot, y_label, &ylabels);
    if !has_data {
        no_data(&mut out, &plot);
    }
    legend(&mut out, &plot, &names, LegendKind::Box);
    out.push_str("</svg>\n");
    out
}

// ---------------------------------------------------------------------------------------------
// Layout and drawing helpers.

/// Plot area in pixels and the data domain it shows.
struct Plot {
    left: f64,
    top: f64,
    right: f64,
    bottom: f64,
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
}

impl Plot {
    fn sx(&self, x: f64) -> f64 {
        self.left + (x - self.x0) / (self.x1 - self.x0) * (self.right - self.left)
    }
    fn sy(&self, y: f64) -> f64 {
        self.bottom - (y - self.y0) / (self.y1 - self.y0) * (self.bottom - self.top)
    }
}

#[derive(Clone, Copy, PartialEq)]
enum LegendKind {
    Line,
    Box,
}

fn header(out: &mut String, title: &str) {
    let _ = writeln!(out, r#"<?xml version="1.0" encoding="UTF-8" standalone="no"?>"#);
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="DejaVu Sans, Arial, Helvetica, sans-serif">"#,
        w = WIDTH,
        h = HEIGHT
    );
    let _ = writeln!(out, "<title>{}</title>", esc(title));
    let _ = writeln!(out, r##"<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>"##);
    let _ = writeln!(
        out,
        r##"<text x="{}" y="26" font-size="{TITLE_FONT}" font-weight="bold" text-anchor="middle" fill="#000000">{}</text>"##,
        WIDTH / 2.0,
        esc(&ellipsize(title, TITLE_CHARS))
    );
}

/// Left edge of the plot so the y tick labels and the rotated y axis label fit.
fn y_axis_left(ylabels: &[String]) -> f64 {
    let widest = ylabels.iter().map(|l| text_w(l, TICK_FONT)).fold(0.0, f64::max);
    (36.0 + widest).max(52.0)
}

fn y_grid_and_labels(out: &mut String, plot: &Plot, values: &[f64], labels: &[String]) {
    for (&v, label) in values.iter().zip(labels) {
        let y = c(plot.sy(v));
        if v != plot.y0 && v != plot.y1 {
            let _ = writeln!(
                out,
                r##"<line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="#e6e6e6" stroke-width="1"/>"##,
                c(plot.left),
                c(plot.right)
            );
        }
        let _ = writeln!(
            out,
            r##"<line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="#333333" stroke-width="1"/>"##,
            c(plot.left - 5.0),
            c(plot.left)
        );
        let _ = writeln!(
            out,
            r##"<text x="{}" y="{}" font-size="{TICK_FONT}" text-anchor="end" fill="#333333">{}</text>"##,
            c(plot.left - 8.0),
            c(plot.sy(v) + TICK_FONT * 0.35),
            esc(label)
        );
    }
}

fn axes(out: &mut String, plot: &Plot) {
    let _ = writeln!(
        out,
        r##"<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#333333" stroke-width="1"/>"##,
        c(plot.left),
        c(plot.top),
        c(plot.right - plot.left),
        c(plot.bottom - plot.top)
    );
}

/// Rotated y axis title, just left of the widest tick label (the margin may be wider than the
/// tick labels need, e.g. for rotated category labels).
fn y_axis_label(out: &mut String, plot: &Plot, y_label: &str, ylabels: &[String]) {
    let widest = ylabels.iter().map(|l| text_w(l, TICK_FONT)).fold(0.0, f64::max);
    let x = c((plot.left - 8.0 - widest - 8.0).max(18.0));
    let y = c((plot.top + plot.bottom) / 2.0);
    let _ = writeln!(
        out,
        r##"<text x="{x}" y="{y}" font-size="{LABEL_FONT}" text-anchor="middle" transform="rotate(-90 {x} {y})" fill="#000000">{}</text>"##,
        esc(&ellipsize(y_label, 60))
    );
}

fn no_data(out: &mut String, plot: &Plot) {
    let _ = writeln!(
        out,
        r##"<text x="{}" y="{}" font-size="{LABEL_FONT}" text-anchor="middle" fill="#888888">No data</text>"##,
        c((plot.left + plot.right) / 2.0),
        c((plot.top + plot.bottom) / 2.0)
    );
}

/// Width reserved to the right of the plot for the legend (0 without entries).
fn legend_width(names: &[String]) -> f64 {
    if names.is_empty() {
        return 0.0;
    }
    let widest = names.iter().map(|n| text_w(n, LEGEND_FONT)).fold(0.0, f64::max);
    12.0 + 8.0 + 22.0 + 6.0 + widest + 8.0
}

fn legend(out: &mut String, plot: &Plot, names: &[String], kind: LegendKind) {
    if names.is_empty() {
        return;
    }
    let max_rows = (((plot.bottom - plot.top) - 8.0) / LEGEND_ROW).floor().max(1.0) as usize;
    let (shown, more) =
        if names.len() > max_rows { (max_rows - 1, names.len() - (max_rows - 1)) } else { (names.len(), 0) };
    let rows = shown + usize::from(more > 0);
    let x = plot.right + 12.0;
    let w = WIDTH - RIGHT_PAD - x;
    let _ = writeln!(
        out,
        r##"<rect x="{}" y="{}" width="{}" height="{}" fill="#ffffff" stroke="#cccccc" stroke-width="1"/>"##,
        c(x),
        c(plot.top),
        c(w),
        c(rows as f64 * LEGEND_ROW + 8.0)
    );
    for (i, name) in names.iter().take(shown).enumerate() {
        let cy = plot.top + 4.0 + LEGEND_ROW * (i as f64 + 0.5);
        let (colour, dash) = style(i);
        match kind {
            LegendKind::Line => {
                let dash_attr = if dash.is_empty() { String::new() } else { format!(r#" stroke-dasharray="{dash}""#) };
                let _ = writeln!(
                    out,
                    r##"<line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="{colour}" stroke-width="2.5"{dash_attr}/>"##,
                    c(x + 8.0),
                    c(x + 30.0),
                    y = c(cy)
                );
            }
            LegendKind::Box => {
                let _ = writeln!(
                    out,
                    r##"<rect x="{}" y="{}" width="16" height="11" fill="{colour}"/>"##,
                    c(x + 11.0),
                    c(cy - 5.5)
                );
            }
        }
        let _ = writeln!(
            out,
            r##"<text x="{}" y="{}" font-size="{LEGEND_FONT}" fill="#000000">{}</text>"##,
            c(x + 36.0),
            c(cy + LEGEND_FONT * 0.35),
            esc(name)
        );
    }
    if more > 0 {
        let cy = plot.top + 4.0 + LEGEND_ROW * (shown as f64 + 0.5);
        let _ = writeln!(
            out,
            r##"<text x="{}" y="{}" font-size="{LEGEND_FONT}" fill="#555555">+{more} more</text>"##,
            c(x + 36.0),
            c(cy + LEGEND_FONT * 0.35)
        );
    }
}

/// Colour and dash pattern of the `i`-th series or group.
fn style(i: usize) -> (&'static str, &'static str) {
    (PALETTE[i % PALETTE.len()], DASHES[(i / PALETTE.len()) % DASHES.len()])
}

/// Rough rendered width of `s` at `font` size (average sans-serif glyph ~0.6 em).
fn text_w(s: &str, font: f64) -> f64 {
    s.chars().count() as f64 * font * 0.6
}

fn first(v: &[f64]) -> f64 {
    v.first().copied().unwrap_or(0.0)
}

fn last(v: &[f64]) -> f64 {
    v.last().copied().unwrap_or(1.0)
}

// ---------------------------------------------------------------------------------------------
// Text and numbers.

/// Escape text for XML content and attribute values. Line breaks and tabs become spaces;
/// other control characters, which XML 1.0 forbids, become U+FFFD.
/// `s` with the five XML special characters escaped.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(' '),
            ch if (ch as u32) < 0x20 || ch == '\u{FFFE}' || ch == '\u{FFFF}' => out.push('\u{FFFD}'),
            ch => out.push(ch),
        }
    }
    out
}

/// Shorten to at most `max` characters, ending in an ellipsis when cut.
fn ellipsize(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('\u{2026}');
        t
    }
}

/// Pixel coordinate with at most two decimals, trailing zeros trimmed.
fn c(v: f64) -> String {
    if !v.is_finite() {
        return "0".to_string();
    }
    let s = trim_zeros(format!("{v:.2}"));
    if s == "-0" {
        "0".to_string()
    } else {
        s
    }
}

/// Drop trailing zeros after a decimal point (and the point itself), keeping any exponent.
fn trim_zeros(s: String) -> String {
    let (mant, exp) = match s.find('e') {
        Some(i) => (&s[..i], &s[i..]),
        None => (&s[..], ""),
    };
    let mant = if mant.contains('.') { mant.trim_end_matches('0').trim_end_matches('.') } else { mant };
    format!("{mant}{exp}")
}

fn pow10(e: i32) -> f64 {
    // Parsing gives the correctly rounded value, unlike repeated multiplication.
    format!("1e{e}").parse().unwrap_or(1.0)
}

/// SI scale (exponent and suffix) for a magnitude below 1e15.
fn si(a: f64) -> (i32, &'static str) {
    if a >= 1e12 {
        (12, "T")
    } else if a >= 1e9 {
        (9, "G")
    } else if a >= 1e6 {
        (6, "M")
    } else if a >= 1e3 {
        (3, "k")
    } else {
        (0, "")
    }
}

/// Tick label for `v` on an axis whose step is `m * 10^exp`: as few decimals as the step
/// needs, SI suffixes from 1000 up, scientific notation for huge or tiny values.
fn fmt_tick(v: f64, exp: i32) -> String {
    if v == 0.0 || !v.is_finite() {
        return "0".to_string();
    }
    let a = v.abs();
    if a >= 1e15 || exp < -6 {
        let digits = ((a.log10().floor() as i32) - exp).clamp(0, 15) as usize;
        return trim_zeros(format!("{v:.digits$e}"));
    }
    let (se, suffix) = si(a);
    let decimals = (se - exp).max(0) as usize;
    let s = trim_zeros(format!("{:.decimals$}", v / pow10(se)));
    if s == "-0" {
        "0".to_string()
    } else {
        format!("{s}{suffix}")
    }
}

/// Value label with three significant digits: `1.23`, `45.6`, `789`, `12.3k`, `4.5M`.
fn fmt_value(v: f64) -> String {
    if !v.is_finite() {
        return String::new();
    }
    if v == 0.0 {
        return "0".to_string();
    }
    let a = v.abs();
    if a < 1e-3 {
        return trim_zeros(format!("{v:.2e}"));
    }
    let (mut se, _) = si(a);
    loop {
        let scaled = a / pow10(se);
        let decimals = if scaled >= 100.0 {
            0
        } else if scaled >= 10.0 {
            1
        } else if a < 1.0 {
            // 0.0123, 0.123: three significant digits.
            (2 - a.log10().floor() as i32).max(2) as usize
        } else {
            2
        };
        let s = format!("{scaled:.decimals$}");
        // Rounding may carry into the next SI unit (999.7 -> "1000" -> "1k").
        if s.parse::<f64>().unwrap_or(0.0) >= 1000.0 && se < 12 {
            se += 3;
            continue;
        }
        if se >= 12 && scaled >= 1000.0 {
            return trim_zeros(format!("{v:.2e}"));
        }
        let suffix = si(pow10(se)).1;
        let sign = if v < 0.0 { "-" } else { "" };
        return format!("{sign}{}{suffix}", trim_zeros(s));
    }
}

/// Ticks of an axis: `values` are consecutive multiples of `m * 10^exp` (m in 1, 2, 5)
/// enclosing the data range.
#[derive(Debug, Clone, PartialEq)]
struct Ticks {
    values: Vec<f64>,
    exp: i32,
}

/// A usable, non-degenerate range: non-finite bounds fall back to 0..1, huge bounds are
/// clamped, and an (almost) empty range is padded by 10% of its magnitude (or 1 around 0).
fn padded_range(lo: f64, hi: f64) -> (f64, f64) {
    let (lo, hi) = if lo.is_finite() && hi.is_finite() && lo <= hi { (lo, hi) } else { (0.0, 1.0) };
    let (lo, hi) = (lo.clamp(-1e300, 1e300), hi.clamp(-1e300, 1e300));
    let mag = lo.abs().max(hi.abs());
    if hi - lo <= mag * 1e-9 || hi - lo < 1e-300 {
        let pad = if mag > 1e-300 { mag * 0.1 } else { 1.0 };
        (lo - pad, hi + pad)
    } else {
        (lo, hi)
    }
}

/// "Nice" ticks covering `lo..=hi` with about `target` intervals; the step is 1, 2 or 5 times
/// a power of ten, picked by comparing the rough step with the geometric means sqrt(2),
/// sqrt(10), sqrt(50). The first tick is <= lo and the last >= hi.
fn nice_ticks(lo: f64, hi: f64, target: usize) -> Ticks {
    let (lo, hi) = padded_range(lo, hi);
    let t = target.max(1) as f64;
    let rough = hi / t - lo / t;
    let mut exp = rough.log10().floor() as i32;
    let mut norm = rough / pow10(exp);
    if norm >= 10.0 {
        exp += 1;
        norm /= 10.0;
    } else if norm < 1.0 {
        exp -= 1;
        norm *= 10.0;
    }
    let mult = if norm < std::f64::consts::SQRT_2 {
        1.0
    } else if norm < 10f64.sqrt() {
        2.0
    } else if norm < 50f64.sqrt() {
        5.0
    } else {
        exp += 1;
        1.0
    };
    let step = mult * pow10(exp);
    // A little tolerance so float noise (7.0000000001 / 1) does not add a whole extra tick.
    let kmin = (lo / step + 1e-9).floor();
    let kmax = (hi / step - 1e-9).ceil().max(kmin + 1.0);
    let value = |k: f64| {
        let n = k * mult;
        let v = if exp >= 0 { n * pow10(exp) } else { n / pow10(-exp) };
        if v == 0.0 {
            0.0
        } else {
            v
        }
    };
    let mut values = Vec::new();
    let mut k = kmin;
    while k <= kmax && values.len() < 1000 {
        values.push(value(k));
        k += 1.0;
    }
    Ticks { values, exp }
}

/// Reduce `points` to at most `max` points (for `max >= 4`): keep the first and the last,
/// split the rest into `(max - 2) / 2` buckets and keep each bucket's minimum and maximum y
/// (first occurrence, in original order), so spikes and dips survive.
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
mod tests {
    use super::*;

    /// Tiny well-formedness check: tags balance (with self-closing and `<?...?>` handled),
    /// attribute quotes pair up, `&` only starts one of the five predefined entities, exactly
    /// one `<svg`, the document ends with `</svg>\n`, and every `<polyline` has `points=`.
    fn check_well_formed(s: &str) {
        assert_eq!(s.matches("<svg").count(), 1, "exactly one <svg");
        assert!(s.ends_with("</svg>\n"), "ends with </svg>\\n");
        assert!(s.contains(r#"xmlns="http://www.w3.org/2000/svg""#));
        assert!(s.contains(r#"viewBox="0 0 800 450""#));
        for (i, _) in s.match_indices("<polyline") {
            let end = s[i..].find('>').expect("polyline tag closes") + i;
            assert!(s[i..end].contains(" points=\""), "polyline without points");
        }
        for (i, _) in s.match_indices('&') {
            let rest = &s[i..];
            assert!(["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"].iter().any(|e| rest.starts_with(e)), "bare & at {i}");
        }
        assert!(!s.contains("NaN") && !s.contains("inf"), "non-finite number leaked");
        let mut stack: Vec<&str> = Vec::new();
        let mut rest = s;
        while let Some(open) = rest.find('<') {
            assert!(!rest[..open].contains('>'), "stray > in text");
            rest = &rest[open..];
            if rest.starts_with("<?") {
                let end = rest.find("?>").expect("processing instruction closes");
                rest = &rest[end + 2..];
                continue;
            }
            // Find the end of the tag, skipping quoted attribute values.
            let mut quote = None;
            let mut end = None;
            for (i, ch) in rest.char_indices().skip(1) {
                match (quote, ch) {
                    (None, '"') | (None, '\'') => quote = Some(ch),
                    (Some(q), ch) if ch == q => quote = None,
                    (None, '<') => panic!("< inside tag"),
                    (None, '>') => {
                        end = Some(i);
                        break;
                    }
                    _ => {}
                }
            }
            let end = end.expect("tag closes");
            let tag = &rest[1..end];
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(stack.pop(), Some(name.trim()), "mismatched close tag");
            } else {
                let name = tag.split(|ch: char| ch.is_whitespace() || ch == '/').next().unwrap();
                assert!(!name.is_empty() && name.chars().all(|ch| ch.is_ascii_alphanumeric()), "bad tag name {name:?}");
                if !tag.ends_with('/') {
                    stack.push(name);
                }
            }
            rest = &rest[end + 1..];
        }
        assert!(stack.is_empty(), "unclosed tags: {stack:?}");
        assert_eq!(rest, "\n");
    }

    fn ramp(name: &str, n: usize, f: impl Fn(f64) -> f64) -> Series {
        Series::new(name, (0..n).map(|i| (i as f64, f(i as f64))).collect())
    }

    #[test]
    fn nice_ticks_exact() {
        assert_eq!(nice_ticks(0.0, 7.3, 5), Ticks { values: vec![0.0, 2.0, 4.0, 6.0, 8.0], exp: 0 });
        assert_eq!(nice_ticks(0.0, 1.0, 5), Ticks { values: vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0], exp: -1 });
        assert_eq!(nice_ticks(3.2, 9.8, 5).values, vec![3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]);
        assert_eq!(nice_ticks(0.0, 3.0, 5).values, vec![0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0]);
        assert_eq!(nice_ticks(-12.0, 47.0, 5).values, vec![-20.0, -10.0, 0.0, 10.0, 20.0, 30.0, 40.0, 50.0]);
        assert_eq!(nice_ticks(0.0, 7.3e6, 5), Ticks { values: vec![0.0, 2e6, 4e6, 6e6, 8e6], exp: 6 });
        assert_eq!(nice_ticks(1.0, 1.0003, 5).values, vec![1.0, 1.00005, 1.0001, 1.00015, 1.0002, 1.00025, 1.0003]);
    }

    #[test]
    fn nice_ticks_degenerate_ranges() {
        // All-equal: padded by 10%.
        assert_eq!(nice_ticks(5.0, 5.0, 5).values, vec![4.4, 4.6, 4.8, 5.0, 5.2, 5.4, 5.6]);
        assert_eq!(nice_ticks(0.0, 0.0, 5).values, vec![-1.0, -0.5, 0.0, 0.5, 1.0]);
        // Non-finite or reversed bounds fall back to 0..1.
        assert_eq!(nice_ticks(f64::NAN, 1.0, 5).values, nice_ticks(0.0, 1.0, 5).values);
        assert_eq!(nice_ticks(2.0, 1.0, 5).values, nice_ticks(0.0, 1.0, 5).values);
        // Extremes stay finite and short.
        for (lo, hi) in [(-f64::MAX, f64::MAX), (0.0, 1e-310), (1e16, 1e16 + 2.0), (-1e-12, 1e-12)] {
            let t = nice_ticks(lo, hi, 5);
            assert!(t.values.len() >= 2 && t.values.len() <= 12, "{lo}..{hi}: {t:?}");
            assert!(t.values.iter().all(|v| v.is_finite()));
            assert!(t.values.windows(2).all(|w| w[0] < w[1]));
        }
    }

    #[test]
    fn tick_and_value_labels() {
        let labels = |lo, hi| {
            let t = nice_ticks(lo, hi, 5);
            t.values.iter().map(|&v| fmt_tick(v, t.exp)).collect::<Vec<_>>().join(" ")
        };
        assert_eq!(labels(0.0, 3.0), "0 0.5 1 1.5 2 2.5 3");
        assert_eq!(labels(0.0, 7.3e6), "0 2M 4M 6M 8M");
        assert_eq!(labels(0.0, 4500.0), "0 1k 2k 3k 4k 5k");
        assert_eq!(labels(0.0, 1800.0), "0 500 1k 1.5k 2k");
        assert_eq!(labels(-2.5e9, 0.0), "-2.5G -2G -1.5G -1G -500M 0");
        assert_eq!(labels(0.0, 3e12), "0 500G 1T 1.5T 2T 2.5T 3T");
        assert_eq!(labels(0.0, 0.003), "0 0.0005 0.001 0.0015 0.002 0.0025 0.003");
        assert_eq!(labels(0.0, 4e-8), "0 1e-8 2e-8 3e-8 4e-8");
        assert_eq!(labels(0.0, 4e16), "0 1e16 2e16 3e16 4e16");
        assert_eq!(fmt_value(1.234), "1.23");
        assert_eq!(fmt_value(1.0), "1");
        assert_eq!(fmt_value(2.4), "2.4");
        assert_eq!(fmt_value(45.67), "45.7");
        assert_eq!(fmt_value(789.4), "789");
        assert_eq!(fmt_value(999.7), "1k");
        assert_eq!(fmt_value(12345.0), "12.3k");
        assert_eq!(fmt_value(-4.5e6), "-4.5M");
        assert_eq!(fmt_value(0.0123), "0.0123");
        assert_eq!(fmt_value(0.5), "0.5");
        assert_eq!(fmt_value(0.0), "0");
        assert_eq!(fmt_value(2e-5), "2e-5");
        assert_eq!(fmt_value(3e18), "3e18");
    }

    #[test]
    fn escaping() {
        assert_eq!(esc(r#"a&b<c>"d"'e'"#), "a&amp;b&lt;c&gt;&quot;d&quot;&apos;e&apos;");
        assert_eq!(esc("x\ny\u{1}z"), "x y\u{FFFD}z");
        let nasty = r#"<script>alert("x&y")</script> 'q'"#;
        let s = line_chart(nasty, nasty, nasty, &[Series::new(nasty, vec![(0.0, 1.0), (1.0, 2.0)])], false);
        assert!(!s.contains("<script") && !s.contains("</script"));
        assert!(s.contains("&lt;script&gt;alert(&quot;x&amp;y&quot;)&lt;/script&gt; &apos;q&apos;"));
        check_well_formed(&s);
        let b = bar_chart(nasty, nasty, &[nasty.to_string()], &[(nasty.to_string(), vec![1.0])]);
        assert!(!b.contains("<script"));
        check_well_formed(&b);
    }

    #[test]
    fn charts_are_well_formed() {
        let series = vec![
            ramp("greedy", 500, |x| 1.0 + (x / 40.0).sin().abs()),
            ramp("cost-benefit", 500, |x| 1.2 + x / 1000.0),
            ramp("sparse", 5, |x| 2.0 - x / 10.0),
        ];
        let s = line_chart("WAF", "host writes (GiB)", "WAF", &series, true);
        check_well_formed(&s);
        assert_eq!(s.matches("<polyline").count(), 3);
        assert_eq!(s.matches("<circle").count(), 5, "markers only on the sparse series");
        assert!(s.contains(">0</text>"), "y from zero has a 0 tick");

        let cats: Vec<String> = ["A", "B", "C"].iter().map(|s| s.to_string()).collect();
        let groups = vec![("shared".to_string(), vec![2.5, 1.2, -0.5]), ("isolated".to_string(), vec![1.1, f64::NAN])];
        let b = bar_chart("WAF per tenant", "WAF", &cats, &groups);
        check_well_formed(&b);
        // 3 + 1 bars (NaN and missing values leave gaps) plus background and frame rects
        // and 2 legend swatches and the legend box.
        assert_eq!(b.matches("<rect").count(), 4 + 2 + 2 + 1);
        assert!(b.contains(">-0.5</text>") && b.contains(">2.5</text>") && b.contains(">1.1</text>"));
    }

    #[test]
    fn downsampling_keeps_spikes() {
        let mut pts: Vec<(f64, f64)> = (0..10_000).map(|i| (i as f64, (i % 7) as f64 * 0.01)).collect();
        pts[5003].1 = 100.0;
        pts[7001].1 = -50.0;
        let d = downsample(&pts, MAX_POLYLINE_POINTS);
        assert!(d.len() <= MAX_POLYLINE_POINTS);
        assert_eq!(d[0], pts[0]);
        assert_eq!(*d.last().unwrap(), pts[9999]);
        assert!(d.contains(&(5003.0, 100.0)));
        assert!(d.contains(&(7001.0, -50.0)));
        assert!(d.windows(2).all(|w| w[0].0 < w[1].0), "original order kept");
        assert_eq!(downsample(&pts[..2000], MAX_POLYLINE_POINTS).len(), 2000);

        // Through the chart: the spike reaches the top tick (100) and the polyline is short.
        let s = line_chart("spike", "x", "y", &[Series::new("s", pts)], false);
        check_well_formed(&s);
        let start = s.find("points=\"").unwrap() + 8;
        let list = &s[start..start + s[start..].find('"').unwrap()];
        let n = list.split(' ').count();
        assert!(n <= MAX_POLYLINE_POINTS && n > 1000, "{n} points");
        let ys: Vec<f64> = list.split(' ').map(|p| p.split(',').nth(1).unwrap().parse().unwrap()).collect();
        let top = ys.iter().copied().fold(f64::INFINITY, f64::min);
        assert_eq!(top, PLOT_TOP, "spike at 100 maps to the top of the plot");
    }

    #[test]
    fn empty_and_degenerate_inputs() {
        let cases: Vec<Vec<Series>> = vec![
            vec![],
            vec![Series::new("empty", vec![])],
            vec![Series::new("nan", vec![(f64::NAN, 1.0), (1.0, f64::INFINITY), (f64::NEG_INFINITY, 0.0)])],
            vec![Series::new("one", vec![(3.0, 4.0)])],
            vec![Series::new("flat", vec![(0.0, 2.0), (1.0, 2.0), (2.0, 2.0)])],
            vec![Series::new("vertical", vec![(1.0, 0.0), (1.0, 5.0)])],
            vec![Series::new("zeros", vec![(0.0, 0.0), (1.0, 0.0)])],
            vec![Series::new("huge", vec![(-f64::MAX, f64::MAX), (f64::MAX, -f64::MAX)])],
        ];
        for series in &cases {
            for zero in [false, true] {
                let s = line_chart("", "", "", series, zero);
                check_well_formed(&s);
            }
        }
        assert!(line_chart("t", "x", "y", &[], false).contains("No data"));
        assert!(line_chart("t", "x", "y", &cases[2], false).contains("No data"));
        let one = line_chart("t", "x", "y", &cases[3], false);
        assert_eq!(one.matches("<polyline").count(), 0);
        assert_eq!(one.matches("<circle").count(), 1);

        let cats = vec!["a".to_string(), "b".to_string()];
        type BarCase = (Vec<String>, Vec<(String, Vec<f64>)>);
        let bar_cases: Vec<BarCase> = vec![
            (vec![], vec![]),
            (cats.clone(), vec![]),
            (vec![], vec![("g".to_string(), vec![1.0])]),
            (cats.clone(), vec![("g".to_string(), vec![f64::NAN, f64::INFINITY])]),
            (cats.clone(), vec![("g".to_string(), vec![0.0, 0.0])]),
            (cats.clone(), vec![("g".to_string(), vec![3.0, 3.0, 9.0])]),
            (cats.clone(), vec![("g".to_string(), vec![-3.0, -1.0])]),
            (cats, vec![("g".to_string(), vec![f64::MAX, -f64::MAX])]),
        ];
        for (cats, groups) in &bar_cases {
            check_well_formed(&bar_chart("t", "y", cats, groups));
        }
        assert!(bar_chart("t", "y", &[], &[]).contains("No data"));
    }

    #[test]
    fn many_series_and_long_names() {
        let series: Vec<Series> =
            (0..30).map(|i| ramp(&format!("series number {i} with a long name"), 50, |x| x * i as f64)).collect();
        let s = line_chart("many", "x", "y", &series, false);
        check_well_formed(&s);
        assert!(s.contains(r#"stroke-dasharray="7 4""#));
        assert!(s.contains(" more</text>"));

        let cats: Vec<String> = (0..12).map(|i| format!("a rather long tenant name {i}")).collect();
        let groups: Vec<(String, Vec<f64>)> =
            (0..5).map(|g| (format!("v{g}"), (0..12).map(|c| 1000.0 * (c + g) as f64).collect())).collect();
        let b = bar_chart("dense", "bytes", &cats, &groups);
        check_well_formed(&b);
        assert!(b.contains("rotate(-40"));
    }

    #[test]
    fn deterministic() {
        let series = vec![ramp("a", 3000, |x| (x * 0.37).sin()), ramp("b", 7, |x| x * x)];
        assert_eq!(line_chart("t", "x", "y", &series, false), line_chart("t", "x", "y", &series, false));
        let cats = vec!["x".to_string(), "y".to_string()];
        let groups = vec![("g".to_string(), vec![1.0, 2.0]), ("h".to_string(), vec![0.3, 0.7])];
        assert_eq!(bar_chart("t", "y", &cats, &groups), bar_chart("t", "y", &cats, &groups));
    }
}
