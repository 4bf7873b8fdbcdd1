//! Theory-vs-simulation cases (experiments.md section 1 and the placement checks). Shared by the
//! test suite (small scale) and `wafsim validate`, which writes docs/validation.md.

use std::fmt::Write;
use wafsim_core::{theory, Device, DeviceConfig, GcPolicy, Io, NamespaceConfig, Op, Pid, Placement, Rng, RuhType};

const MU: u32 = 4096;

/// How big and how long the validation runs are.
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    /// Erase units of each device.
    pub erase_units: u32,
    /// Random writes of warm-up, then of measurement, in multiples of the logical capacity.
    pub warmup_fills: f64,
    /// Random writes measured, in multiples of the logical capacity.
    pub measure_fills: f64,
}

impl Scale {
    /// Used by the default test suite: >= 1,000 erase units, seconds in all.
    pub const TEST: Scale = Scale { erase_units: 4096, warmup_fills: 4.0, measure_fills: 4.0 };
    /// `wafsim validate --full`: four times the erase units, longer runs.
    pub const FULL: Scale = Scale { erase_units: 16384, warmup_fills: 8.0, measure_fills: 8.0 };
}

/// One comparison row.
#[derive(Debug, Clone)]
pub struct Case {
    /// What the case runs (workload, GC policy, OP, ...).
    pub name: String,
    /// The simulated figure (a WAF).
    pub simulated: f64,
    /// Independent expectation (closed form) or bound.
    pub expected: f64,
    /// Allowed relative error; None when `expected` is a bound described in `name`.
    pub tolerance: Option<f64>,
    /// How `expected` was obtained, and the run's size.
    pub note: String,
}

impl Case {
    /// (simulated - expected) / expected.
    pub fn rel_error(&self) -> f64 {
        (self.simulated - self.expected) / self.expected
    }
    /// Whether the case is within its tolerance (or under its bound).
    pub fn passed(&self) -> bool {
        match self.tolerance {
            Some(t) => self.rel_error().abs() <= t,
            None => self.simulated <= self.expected,
        }
    }
}

/// A single-namespace conventional device (see [`DeviceConfig::single_namespace`]).
pub fn uniform_device(eus: u32, np: u32, op: f64, policy: GcPolicy, seed: u64) -> Device {
    Device::new(DeviceConfig::single_namespace(eus, np, MU, op, policy, seed)).expect("validation device config is valid")
}

fn fill(dev: &mut Device) {
    crate::drives::precondition(dev).expect("precondition of a fresh device cannot fail");
}

/// Run `n` single-unit writes whose mapping unit `pick` chooses; returns WAF over the run.
fn measure(dev: &mut Device, n: u64, mut pick: impl FnMut() -> u64) -> f64 {
    let before = dev.counters().clone();
    let mut batch = Vec::with_capacity(4096);
    let mut left = n;
    while left > 0 {
        batch.clear();
        let k = left.min(4096);
        for _ in 0..k {
            batch.push(Io { op: Op::Write, ns: 0, offset: pick() * MU as u64, len: MU, pid: Pid::NONE });
        }
        dev.submit_batch(&batch).expect("validation writes stay in range");
        left -= k;
    }
    let d = dev.counters().delta(&before);
    d.media_units() as f64 / d.host_units as f64
}

/// Uniform random 4 KiB writes after a sequential fill, against the closed form for `policy`
/// (greedy, FIFO; d-choices:1 against the random-victim form).
pub fn uniform_case(policy: GcPolicy, np: u32, op: f64, scale: Scale, seed: u64) -> Case {
    let mut dev = uniform_device(scale.erase_units, np, op, policy, seed);
    let geo = dev.geometry().clone();
    let u = geo.namespace_units;
    fill(&mut dev);
    let mut rng = Rng::new(seed);
    measure(&mut dev, (scale.warmup_fills * u as f64) as u64, || rng.below(u));
    let sim = measure(&mut dev, (scale.measure_fills * u as f64) as u64, || rng.below(u));
    let alpha = geo.effective_alpha();
    let (expected, form) = match policy {
        GcPolicy::Greedy => (theory::waf_greedy(alpha, np as f64), "greedy, Desnoyers"),
        GcPolicy::Fifo => (theory::waf_fifo(alpha), "FIFO"),
        GcPolicy::DChoices(1) => (theory::waf_random(alpha), "random victim 1/Sf"),
        _ => panic!("no closed form for {policy}"),
    };
    Case {
        name: format!("uniform 4 KiB, {policy}, OP {:.0}%, Np {np}", op * 100.0),
        simulated: sim,
        expected,
        tolerance: Some(0.03),
        note: format!("{form}; {} erase units, alpha_eff {alpha:.5}", geo.erase_units),
    }
}

/// Hot/cold (r/f) mixed in one frontier under FIFO against the hot/cold formula.
pub fn hot_cold_case(r: f64, f: f64, op: f64, scale: Scale, seed: u64) -> Case {
    let np = 64;
    let mut dev = uniform_device(scale.erase_units, np, op, GcPolicy::Fifo, seed);
    let geo = dev.geometry().clone();
    let u = geo.namespace_units;
    let hot = (u as f64 * f).round() as u64;
    fill(&mut dev);
    let mut rng = Rng::new(seed);
    let mut pick = || if rng.unit_f64() < r { rng.below(hot) } else { hot + rng.below(u - hot) };
    measure(&mut dev, (scale.warmup_fills * 1.5 * u as f64) as u64, &mut pick);
    let sim = measure(&mut dev, (scale.measure_fills * u as f64) as u64, &mut pick);
    let fh = hot as f64 / u as f64;
    let expected = theory::waf_hot_cold_fifo(geo.effective_alpha(), &[(r, fh), (1.0 - r, 1.0 - fh)]);
    Case {
        name: format!("hot/cold {:.0}/{:.0}, FIFO, OP {:.0}%", r * 100.0, f * 100.0, op * 100.0),
        simulated: sim,
        expected,
        tolerance: Some(0.05),
        note: format!("hot/cold FIFO formula; {} erase units, Np {np}", geo.erase_units),
    }
}

/// Uniform random writes under a policy without a closed form; reported between bounds.
pub fn bounded_case(policy: GcPolicy, np: u32, op: f64, scale: Scale, seed: u64) -> (Case, f64, f64) {
    let mut dev = uniform_device(scale.erase_units, np, op, policy, seed);
    let geo = dev.geometry().clone();
    let u = geo.namespace_units;
    fill(&mut dev);
    let mut rng = Rng::new(seed);
    measure(&mut dev, (scale.warmup_fills * u as f64) as u64, || rng.below(u));
    let sim = measure(&mut dev, (scale.measure_fills * u as f64) as u64, || rng.below(u));
    let alpha = geo.effective_alpha();
    let lo = theory::waf_greedy(alpha, np as f64);
    let hi = theory::waf_random(alpha);
    (
        Case {
            name: format!("uniform 4 KiB, {policy}, OP {:.0}%, Np {np}", op * 100.0),
            simulated: sim,
            expected: hi,
            tolerance: None,
            note: format!("between greedy {lo:.3} and random victim {hi:.3}"),
        },
        lo,
        hi,
    )
}

/// Eight equal-IOPS sequential writers (4k,4k,16k,16k,64k,64k,128k,128k) on one drive:
/// WAF without placement and with one initially isolated RUH per namespace.
pub fn sequential_writers_case(fdp: bool, scale: Scale, seed: u64) -> Case {
    let np = 256u32;
    let eus = scale.erase_units / 4;
    // OP about 7% over the eight namespaces, after the reserve and the open frontiers.
    let ns_units = ((eus as f64 - 32.0) * np as f64 / 1.07 / 8.0) as u64;
    let placement = if fdp {
        Placement::Fdp { reclaim_groups: 1, ruh_types: vec![RuhType::InitiallyIsolated; 8] }
    } else {
        Placement::Conventional
    };
    let namespaces: Vec<_> = (0..8)
        .map(|i| NamespaceConfig { name: format!("ns{i}"), size_bytes: ns_units * MU as u64, placement_handles: vec![i] })
        .collect();
    let mut dev = Device::new(DeviceConfig {
        logical_bytes: 8 * ns_units * MU as u64,
        physical_bytes: eus as u64 * np as u64 * MU as u64,
        mapping_unit: MU,
        erase_unit_bytes: np as u64 * MU as u64,
        gc_policy: GcPolicy::Greedy,
        gc_free_min: 2,
        gc_free_target: 2,
        gc_age_classes: 1,
        fdp_idle_handles_hold_units: false,
        placement,
        namespaces,
        seed,
        slc_cache: None,
    })
    .expect("valid");
    fill(&mut dev);
    const BS: [u32; 8] = [1, 1, 4, 4, 16, 16, 32, 32];
    let mut pos = [0u64; 8];
    let mut run = |dev: &mut Device, host_units: u64| {
        let before = dev.counters().clone();
        let mut done = 0;
        while done < host_units {
            for (i, &bs) in BS.iter().enumerate() {
                if pos[i] + bs as u64 > ns_units {
                    pos[i] = 0;
                }
                let io = Io { op: Op::Write, ns: i as u32, offset: pos[i] * MU as u64, len: bs * MU, pid: Pid::NONE };
                dev.submit(&io).expect("in range");
                pos[i] += bs as u64;
                done += bs as u64;
            }
        }
        let d = dev.counters().delta(&before);
        d.media_units() as f64 / d.host_units as f64
    };
    run(&mut dev, (scale.warmup_fills * 8.0 * ns_units as f64) as u64);
    let sim = run(&mut dev, (scale.measure_fills * 8.0 * ns_units as f64) as u64);
    if fdp {
        Case {
            name: "8 sequential writers, equal IOPS, FDP (RUH per namespace)".into(),
            simulated: sim,
            expected: 1.01,
            tolerance: None,
            note: "bound: WAF <= 1.01".into(),
        }
    } else {
        Case {
            name: "8 sequential writers, equal IOPS, no placement".into(),
            simulated: sim,
            expected: f64::INFINITY,
            tolerance: None,
            note: "reported: the I/O blender; expected clearly above 1".into(),
        }
    }
}

/// One sequential writer overwriting its whole namespace repeatedly: no GC copies, WAF 1.
pub fn single_sequential_case(scale: Scale, seed: u64) -> Case {
    let mut dev = uniform_device(scale.erase_units, 256, 0.07, GcPolicy::Greedy, seed);
    let u = dev.geometry().namespace_units;
    fill(&mut dev);
    let mut next = 0u64;
    let mut seq = || {
        let b = next;
        next = (next + 1) % u;
        b
    };
    measure(&mut dev, (scale.warmup_fills * u as f64) as u64, &mut seq);
    let sim = measure(&mut dev, (scale.measure_fills * u as f64) as u64, &mut seq);
    Case {
        name: "1 sequential writer, whole namespace, OP 7%".into(),
        simulated: sim,
        expected: 1.0,
        tolerance: Some(0.0),
        note: "exact: a sequential overwrite invalidates whole erase units, GC copies nothing".into(),
    }
}

/// Every case of docs/validation.md.
pub fn all_cases(scale: Scale, seed: u64, mut progress: impl FnMut(&str)) -> Vec<Case> {
    let mut cases = vec![single_sequential_case(scale, seed)];
    progress(&cases[0].name);
    for policy in [GcPolicy::Greedy, GcPolicy::Fifo] {
        for np in [64u32, 256] {
            for op in [0.07, 0.28, 1.0] {
                let c = uniform_case(policy, np, op, scale, seed);
                progress(&c.name);
                cases.push(c);
            }
        }
    }
    for op in [0.28, 1.0] {
        let c = uniform_case(GcPolicy::DChoices(1), 256, op, scale, seed);
        progress(&c.name);
        cases.push(c);
    }
    for op in [0.07, 0.28] {
        let c = hot_cold_case(0.9, 0.1, op, scale, seed);
        progress(&c.name);
        cases.push(c);
    }
    for policy in [GcPolicy::DChoices(4), GcPolicy::CostBenefit] {
        let (c, _, _) = bounded_case(policy, 64, 0.28, scale, seed);
        progress(&c.name);
        cases.push(c);
    }
    for fdp in [false, true] {
        let c = sequential_writers_case(fdp, scale, seed);
        progress(&c.name);
        cases.push(c);
    }
    cases
}

/// The markdown of docs/validation.md.
pub fn markdown(cases: &[Case], scale: Scale, command: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Validation: theory vs simulation\n");
    let _ = writeln!(s, "Generated by `{command}` (seed 1, {} erase units per device, warm-up {}x and measurement {}x the logical capacity of random writes after a sequential fill). Do not edit by hand.\n", scale.erase_units, scale.warmup_fills, scale.measure_fills);
    let _ = writeln!(s, "Closed forms from ../shared/reference/experiments.md section 1 (Desnoyers, SYSTOR 2012 / ACM TOS 2014), evaluated at the effective alpha = T/U where T counts all erase units except the GC free-pool reserve and half of each open frontier (docs/model.md, \"Which erase units count as spare\").\n");
    let _ = writeln!(s, "| case | simulated WAF | expected | error | tolerance | result | notes |");
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---|---|");
    for c in cases {
        let (exp, err, tol) = match c.tolerance {
            Some(t) => (format!("{:.4}", c.expected), format!("{:+.2}%", c.rel_error() * 100.0), format!("{:.0}%", t * 100.0)),
            None if c.expected.is_infinite() => ("> 1".into(), "".into(), "".into()),
            None => (format!("<= {:.3}", c.expected), "".into(), "bound".into()),
        };
        let ok = if c.expected.is_infinite() { if c.simulated > 1.0 { "reported" } else { "FAIL" } } else if c.passed() { "pass" } else { "FAIL" };
        let _ = writeln!(s, "| {} | {:.4} | {exp} | {err} | {tol} | {ok} | {} |", c.name, c.simulated, c.note);
    }
    s
}
