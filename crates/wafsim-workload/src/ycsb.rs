//! YCSB core workloads (A-F) as a [`KvSource`]: the request stream YCSB's `CoreWorkload` sends
//! to a database, with YCSB's property names, defaults, key ordering and request distributions.
//!
//! What follows YCSB (brianfrankcooper/YCSB, `core/src/main/java/site/ycsb/`):
//! - operation mix: one weighted draw per operation over read, update, insert, scan and
//!   read-modify-write (`workloads/CoreWorkload.java`, `createOperationGenerator`);
//! - load phase: record numbers 0..recordcount in order; run-phase inserts continue the
//!   sequence from recordcount, and a record number becomes choosable once inserted
//!   (`AcknowledgedCounterGenerator`); a chosen number above the last inserted one is drawn
//!   again (`CoreWorkload.nextKeynum`);
//! - keys: with `insertorder=hashed` a record number `k` is stored under `fnvhash64(k)`
//!   (`CoreWorkload.buildKeyName`, `Utils.fnvhash64`), with `ordered` under `k`;
//! - zipfian: Gray et al. (SIGMOD 1994) with theta 0.99 (`generator/ZipfianGenerator.java`),
//!   scrambled by drawing from 10^10 items with YCSB's precomputed zeta and folding
//!   `fnvhash64(rank) mod itemcount` over recordcount + 2 x expected inserts + 1 numbers
//!   (`ScrambledZipfianGenerator.java`, `CoreWorkload.init`);
//! - latest: last inserted number minus a zipfian draw (`SkewedLatestGenerator.java`);
//! - hotspot: `hotspotopnfraction` of draws uniform in the first `hotspotdatafraction` of the
//!   numbers, the rest uniform in the others (`HotspotIntegerGenerator.java`);
//! - uniform over 0..recordcount (`UniformLongGenerator.java`);
//! - sizes: an insert carries fieldcount x fieldlength bytes; an update or read-modify-write
//!   one field (fieldlength) or, with `writeallfields`, all fields (`buildSingleValue`,
//!   `buildValues`); field length distribution constant (YCSB's default).
//!
//! Random numbers come from [`wafsim_core::Rng`], so streams are YCSB's distributions, not
//! Java's `Random` sequences.

use crate::kv::{KvOp, KvSource};
use wafsim_core::Rng;

/// YCSB's zipfian constant.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;
/// Items of the zipfian draw behind the scrambled zipfian (10 billion).
pub const SCRAMBLED_ITEM_COUNT: u64 = 10_000_000_000;
/// zeta(10^10, 0.99), the constant YCSB precomputes for the scrambled zipfian.
pub const SCRAMBLED_ZETAN: f64 = 26.46902820178302;

const FNV_OFFSET_BASIS_64: u64 = 0xCBF2_9CE4_8422_2325;
const FNV_PRIME_64: u64 = 1_099_511_628_211;

/// YCSB's 64-bit FNV hash of a record number: FNV-1a over the 8 little-end-first bytes, then
/// the absolute value as a signed 64-bit number (so the result is below 2^63, except for the
/// one input whose hash is i64::MIN, kept as 2^63).
#[inline(always)]
pub fn fnvhash64(val: u64) -> u64 {
    let mut h = FNV_OFFSET_BASIS_64;
    let mut v = val;
    let mut i = 0;
    while i < 8 {
        h ^= v & 0xff;
        h = h.wrapping_mul(FNV_PRIME_64);
        v >>= 8;
        i += 1;
    }
    (h as i64).wrapping_abs() as u64
}

/// Order in which records are inserted (and so how record numbers become keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InsertOrder {
    /// Key = fnvhash64(record number) (YCSB default).
    Hashed,
    /// Key = record number.
    Ordered,
}

/// The key a record number is stored under: a pure function, so a logical record always has
/// the same key.
#[inline(always)]
pub fn ycsb_key(keynum: u64, order: InsertOrder) -> u64 {
    match order {
        InsertOrder::Hashed => fnvhash64(keynum),
        InsertOrder::Ordered => keynum,
    }
}

/// How run-phase operations pick their record (`requestdistribution`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestDistribution {
    /// Every record equally likely (`uniform`).
    Uniform,
    /// YCSB's scrambled zipfian: popular records scattered over the key space (`zipfian`).
    Zipfian,
    /// Recently inserted records most popular (`latest`).
    Latest,
    /// A hot fraction of the records gets a fraction of the operations (`hotspot`).
    Hotspot,
}

/// How scans pick their length (`scanlengthdistribution`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanLengthDistribution {
    /// Uniform between `minscanlength` and `maxscanlength`.
    Uniform,
    /// Zipfian between `minscanlength` and `maxscanlength`, short scans most likely.
    Zipfian,
}

/// YCSB core workload properties (names as in YCSB's property files).
#[derive(Debug, Clone, PartialEq)]
pub struct YcsbConfig {
    /// Records inserted by the load phase (and the key range the run phase starts with).
    pub recordcount: u64,
    /// Operations of the run phase.
    pub operationcount: u64,
    /// Fields per record.
    pub fieldcount: u32,
    /// Bytes per field (constant).
    pub fieldlength: u32,
    /// Reads fetch all fields (no effect on the request stream: a read names a record).
    pub readallfields: bool,
    /// Updates and read-modify-writes send all fields instead of one.
    pub writeallfields: bool,
    /// Weight of reads in the operation mix.
    pub readproportion: f64,
    /// Weight of updates.
    pub updateproportion: f64,
    /// Weight of inserts of new records.
    pub insertproportion: f64,
    /// Weight of scans.
    pub scanproportion: f64,
    /// Weight of read-modify-writes.
    pub readmodifywriteproportion: f64,
    /// How run-phase operations pick their record.
    pub requestdistribution: RequestDistribution,
    /// `hotspot`: fraction of the records that are hot, in [0, 1].
    pub hotspotdatafraction: f64,
    /// `hotspot`: fraction of the operations that go to the hot records, in [0, 1].
    pub hotspotopnfraction: f64,
    /// Fewest records a scan covers.
    pub minscanlength: u32,
    /// Most records a scan covers.
    pub maxscanlength: u32,
    /// How scans pick their length.
    pub scanlengthdistribution: ScanLengthDistribution,
    /// Insert order, which decides the key a record number is stored under.
    pub insertorder: InsertOrder,
}

impl Default for YcsbConfig {
    /// YCSB's `CoreWorkload` defaults; recordcount and operationcount 1000 as in every shipped
    /// workload file (YCSB's client treats an absent recordcount as unbounded).
    fn default() -> Self {
        YcsbConfig {
            recordcount: 1000,
            operationcount: 1000,
            fieldcount: 10,
            fieldlength: 100,
            readallfields: true,
            writeallfields: false,
            readproportion: 0.95,
            updateproportion: 0.05,
            insertproportion: 0.0,
            scanproportion: 0.0,
            readmodifywriteproportion: 0.0,
            requestdistribution: RequestDistribution::Uniform,
            hotspotdatafraction: 0.2,
            hotspotopnfraction: 0.8,
            minscanlength: 1,
            maxscanlength: 1000,
            scanlengthdistribution: ScanLengthDistribution::Uniform,
            insertorder: InsertOrder::Hashed,
        }
    }
}

impl YcsbConfig {
    /// The shipped core workload files `workloads/workloada` .. `workloadf` (letter in either
    /// case); `None` for other letters.
    pub fn try_workload(letter: char) -> Option<YcsbConfig> {
        let base = YcsbConfig {
            readproportion: 0.0,
            updateproportion: 0.0,
            insertproportion: 0.0,
            scanproportion: 0.0,
            readmodifywriteproportion: 0.0,
            requestdistribution: RequestDistribution::Zipfian,
            ..YcsbConfig::default()
        };
        Some(match letter.to_ascii_lowercase() {
            // update heavy
            'a' => YcsbConfig { readproportion: 0.5, updateproportion: 0.5, ..base },
            // read mostly
            'b' => YcsbConfig { readproportion: 0.95, updateproportion: 0.05, ..base },
            // read only
            'c' => YcsbConfig { readproportion: 1.0, ..base },
            // read latest
            'd' => YcsbConfig {
                readproportion: 0.95,
                insertproportion: 0.05,
                requestdistribution: RequestDistribution::Latest,
                ..base
            },
            // short ranges
            'e' => YcsbConfig {
                scanproportion: 0.95,
                insertproportion: 0.05,
                maxscanlength: 100,
                scanlengthdistribution: ScanLengthDistribution::Uniform,
                ..base
            },
            // read-modify-write
            'f' => YcsbConfig { readproportion: 0.5, readmodifywriteproportion: 0.5, ..base },
            _ => return None,
        })
    }

    /// [`YcsbConfig::try_workload`], panicking on a letter outside a..=f.
    pub fn workload(letter: char) -> YcsbConfig {
        YcsbConfig::try_workload(letter)
            .unwrap_or_else(|| panic!("YCSB core workloads are a to f, not {letter:?}"))
    }

    /// Set one property by its YCSB name (`zeropadding` and other properties that do not
    /// change the request stream are accepted and ignored).
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        fn num<T: std::str::FromStr>(name: &str, v: &str) -> Result<T, String> {
            v.trim().parse().map_err(|_| format!("YCSB property {name}: {v:?} is not a valid number"))
        }
        fn boolean(name: &str, v: &str) -> Result<bool, String> {
            match v.trim() {
                "true" => Ok(true),
                "false" => Ok(false),
                _ => Err(format!("YCSB property {name}: {v:?} is not true or false")),
            }
        }
        let v = value.trim();
        match name {
            "recordcount" => self.recordcount = num(name, v)?,
            "operationcount" => self.operationcount = num(name, v)?,
            "fieldcount" => self.fieldcount = num(name, v)?,
            "fieldlength" => self.fieldlength = num(name, v)?,
            "readallfields" => self.readallfields = boolean(name, v)?,
            "writeallfields" => self.writeallfields = boolean(name, v)?,
            "readproportion" => self.readproportion = num(name, v)?,
            "updateproportion" => self.updateproportion = num(name, v)?,
            "insertproportion" => self.insertproportion = num(name, v)?,
            "scanproportion" => self.scanproportion = num(name, v)?,
            "readmodifywriteproportion" => self.readmodifywriteproportion = num(name, v)?,
            "hotspotdatafraction" => self.hotspotdatafraction = num(name, v)?,
            "hotspotopnfraction" => self.hotspotopnfraction = num(name, v)?,
            "minscanlength" => self.minscanlength = num(name, v)?,
            "maxscanlength" => self.maxscanlength = num(name, v)?,
            "requestdistribution" => {
                self.requestdistribution = match v {
                    "uniform" => RequestDistribution::Uniform,
                    "zipfian" => RequestDistribution::Zipfian,
                    "latest" => RequestDistribution::Latest,
                    "hotspot" => RequestDistribution::Hotspot,
                    _ => return Err(format!("YCSB requestdistribution {v:?}: supported are uniform, zipfian, latest, hotspot")),
                }
            }
            "scanlengthdistribution" => {
                self.scanlengthdistribution = match v {
                    "uniform" => ScanLengthDistribution::Uniform,
                    "zipfian" => ScanLengthDistribution::Zipfian,
                    _ => return Err(format!("YCSB scanlengthdistribution {v:?}: supported are uniform, zipfian")),
                }
            }
            "insertorder" => {
                self.insertorder = if v == "hashed" { InsertOrder::Hashed } else { InsertOrder::Ordered }
            }
            "fieldlengthdistribution" if v != "constant" => {
                return Err(format!("YCSB fieldlengthdistribution {v:?}: only constant is modelled"))
            }
            "zeropadding" | "workload" | "table" | "fieldnameprefix" | "readallfieldsbyname"
            | "fieldlengthdistribution" => {}
            _ => return Err(format!("unknown YCSB property {name:?}")),
        }
        Ok(())
    }

    /// Check the properties; the reason when they cannot drive a workload.
    pub fn validate(&self) -> Result<(), String> {
        let p = [
            self.readproportion,
            self.updateproportion,
            self.insertproportion,
            self.scanproportion,
            self.readmodifywriteproportion,
        ];
        if p.iter().any(|x| !(x.is_finite() && *x >= 0.0)) || p.iter().sum::<f64>() <= 0.0 {
            return Err("YCSB operation proportions must be >= 0 with a positive sum".into());
        }
        if self.recordcount == 0 {
            return Err("YCSB recordcount must be at least 1".into());
        }
        if self.requestdistribution == RequestDistribution::Latest && self.recordcount < 2 {
            return Err("YCSB requestdistribution=latest needs recordcount >= 2".into());
        }
        if self.requestdistribution == RequestDistribution::Hotspot {
            for (n, f) in [("hotspotdatafraction", self.hotspotdatafraction), ("hotspotopnfraction", self.hotspotopnfraction)] {
                if !(0.0..=1.0).contains(&f) {
                    return Err(format!("YCSB {n} must be in [0, 1], not {f}"));
                }
            }
        }
        if self.scanproportion > 0.0 && (self.minscanlength == 0 || self.minscanlength > self.maxscanlength) {
            return Err("YCSB scan lengths need 1 <= minscanlength <= maxscanlength".into());
        }
        if self.fieldcount as u64 * self.fieldlength as u64 > u32::MAX as u64 {
            return Err("YCSB record size (fieldcount x fieldlength) must fit in 32 bits".into());
        }
        Ok(())
    }

    /// Bytes of field data of one whole record.
    pub fn record_bytes(&self) -> u32 {
        self.fieldcount * self.fieldlength
    }
}

/// zeta(n, theta) summed from term `from` (0-based) to `n`, added to `sum`.
fn zeta_from(from: u64, n: u64, theta: f64, sum: f64) -> f64 {
    let mut s = sum;
    for i in from..n {
        s += 1.0 / ((i + 1) as f64).powf(theta);
    }
    s
}

/// zeta(n, theta) = sum of 1 / i^theta for i = 1..=n.
pub fn zeta(n: u64, theta: f64) -> f64 {
    zeta_from(0, n, theta, 0.0)
}

/// Zipfian over `base .. base + items` (item `base` the most popular), the Gray et al. method
/// as in YCSB's ZipfianGenerator, including its handling of a growing item count: zeta is
/// extended incrementally, eta keeps the item count given at construction.
#[derive(Debug, Clone)]
pub struct Zipfian {
    items: u64,
    base: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    zeta2theta: f64,
    /// 1 + 0.5^theta: below it (times zetan) the draw is the second item.
    second: f64,
    countforzeta: u64,
}

impl Zipfian {
    /// Items `0 .. items`, theta 0.99.
    pub fn new(items: u64) -> Zipfian {
        Zipfian::with_range(0, items.saturating_sub(1), ZIPFIAN_CONSTANT)
    }

    /// Items `min ..= max`.
    pub fn with_range(min: u64, max: u64, theta: f64) -> Zipfian {
        let items = max - min + 1;
        Zipfian::with_zetan(min, max, theta, zeta(items, theta))
    }

    /// Items `min ..= max` with a precomputed zeta(max - min + 1, theta).
    pub fn with_zetan(min: u64, max: u64, theta: f64, zetan: f64) -> Zipfian {
        let items = max - min + 1;
        let zeta2theta = zeta(2, theta);
        let eta = (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2theta / zetan);
        Zipfian {
            items,
            base: min,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta,
            zeta2theta,
            second: 1.0 + 0.5f64.powf(theta),
            countforzeta: items,
        }
    }

    /// Number of items given at construction.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// zeta over the current item count.
    pub fn zetan(&self) -> f64 {
        self.zetan
    }

    /// A draw over the item count given at construction.
    #[inline(always)]
    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        let n = self.items;
        self.next_of(rng, n)
    }

    /// A draw over `itemcount` items; a larger count than before extends zeta (YCSB never
    /// shrinks it).
    #[inline(always)]
    pub fn next_of(&mut self, rng: &mut Rng, itemcount: u64) -> u64 {
        if itemcount > self.countforzeta {
            self.grow(itemcount);
        }
        let u = rng.unit_f64();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return self.base;
        }
        if uz < self.second {
            return self.base + 1;
        }
        self.base + (itemcount as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64
    }

    #[cold]
    fn grow(&mut self, itemcount: u64) {
        self.zetan = zeta_from(self.countforzeta, itemcount, self.theta, self.zetan);
        self.countforzeta = itemcount;
        self.eta = (1.0 - (2.0 / self.items as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2theta / self.zetan);
    }
}

/// YCSB's scrambled zipfian over `min ..= max`: a zipfian draw over 10^10 items (zeta
/// precomputed), hashed with fnvhash64 and folded modulo the item count, so popular items are
/// scattered and the popularity profile does not change with the item count.
#[derive(Debug, Clone)]
pub struct ScrambledZipfian {
    gen: Zipfian,
    min: u64,
    itemcount: u64,
}

impl ScrambledZipfian {
    /// The scrambled zipfian over record numbers `min ..= max`.
    pub fn new(min: u64, max: u64) -> ScrambledZipfian {
        ScrambledZipfian {
            gen: Zipfian::with_zetan(0, SCRAMBLED_ITEM_COUNT, ZIPFIAN_CONSTANT, SCRAMBLED_ZETAN),
            min,
            itemcount: max - min + 1,
        }
    }

    /// The next record number.
    #[inline(always)]
    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        let r = self.gen.next(rng);
        self.min + fnvhash64(r) % self.itemcount
    }
}

/// YCSB's hotspot generator over `lower ..= upper`.
#[derive(Debug, Clone)]
pub struct Hotspot {
    lower: u64,
    hot: u64,
    cold: u64,
    opn: f64,
}

impl Hotspot {
    /// Draws over `lower ..= upper`: a fraction `opnfraction` of them uniform over the first
    /// `datafraction` of the range, the rest uniform over the others.
    pub fn new(lower: u64, upper: u64, datafraction: f64, opnfraction: f64) -> Hotspot {
        let interval = upper - lower + 1;
        let hot = (interval as f64 * datafraction) as u64;
        Hotspot { lower, hot, cold: interval - hot, opn: opnfraction }
    }

    /// The next number.
    #[inline(always)]
    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        // YCSB divides by zero for an empty set; here an empty set sends the draw to the other.
        if (rng.unit_f64() < self.opn && self.hot > 0) || self.cold == 0 {
            self.lower + rng.below(self.hot)
        } else {
            self.lower + self.hot + rng.below(self.cold)
        }
    }
}

#[derive(Debug, Clone)]
enum KeyChooser {
    Uniform { n: u64 },
    Zipfian(ScrambledZipfian),
    /// Zipfian over the distance back from the last inserted record.
    Latest(Zipfian),
    Hotspot(Hotspot),
}

#[derive(Debug, Clone)]
enum ScanLen {
    Uniform { min: u32, span: u64 },
    Zipfian(Zipfian),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Read,
    Update,
    Insert,
    Scan,
    Rmw,
}

/// Which phases a [`Ycsb`] source emits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum YcsbPhases {
    /// Insert recordcount records in insert order, then stop.
    Load,
    /// operationcount operations against a loaded store.
    Run,
    /// The load phase, then the run phase.
    LoadAndRun,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Load,
    Run,
    Done,
}

/// A YCSB core workload as a stream of [`KvOp`]s. Deterministic for a seed.
#[derive(Debug, Clone)]
pub struct Ycsb {
    rng: Rng,
    phase: Phase,
    stop_after_load: bool,
    order: InsertOrder,
    recordcount: u64,
    /// Next record number the load phase inserts.
    load_next: u64,
    /// Next record number a run-phase insert takes; numbers below it exist.
    insert_next: u64,
    ops_done: u64,
    op_limit: Option<u64>,
    byte_budget: Option<u64>,
    bytes: u64,
    /// Cumulative proportions (normalised) and the operation each closes.
    cum: [f64; 5],
    kinds: [Kind; 5],
    chooser: KeyChooser,
    scan: ScanLen,
    record_bytes: u32,
    update_bytes: u32,
}

impl Ycsb {
    /// A source for `cfg` emitting `phases`; panics if `cfg` does not validate (see
    /// [`Ycsb::try_new`]).
    pub fn new(cfg: &YcsbConfig, phases: YcsbPhases, seed: u64) -> Ycsb {
        Ycsb::try_new(cfg, phases, seed).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A source for `cfg` emitting `phases`, deterministic for `seed`; fails if `cfg` does not
    /// validate ([`YcsbConfig::validate`]).
    pub fn try_new(cfg: &YcsbConfig, phases: YcsbPhases, seed: u64) -> Result<Ycsb, String> {
        cfg.validate()?;
        let n = cfg.recordcount;
        let props = [
            (cfg.readproportion, Kind::Read),
            (cfg.updateproportion, Kind::Update),
            (cfg.insertproportion, Kind::Insert),
            (cfg.scanproportion, Kind::Scan),
            (cfg.readmodifywriteproportion, Kind::Rmw),
        ];
        let total: f64 = props.iter().map(|p| p.0).sum();
        let mut cum = [f64::INFINITY; 5];
        let mut kinds = [Kind::Read; 5];
        let mut nkinds = 0;
        let mut acc = 0.0;
        for (p, k) in props {
            if p > 0.0 {
                acc += p / total;
                cum[nkinds] = acc;
                kinds[nkinds] = k;
                nkinds += 1;
            }
        }
        // Rounding must never let a draw fall past the last operation.
        cum[nkinds - 1] = f64::INFINITY;
        let chooser = match cfg.requestdistribution {
            RequestDistribution::Uniform => KeyChooser::Uniform { n },
            RequestDistribution::Zipfian => {
                // Room for the inserts YCSB expects (twice the expected count), so the
                // popular records do not change as the key space grows.
                let expected = (cfg.operationcount as f64 * cfg.insertproportion * 2.0) as u64;
                KeyChooser::Zipfian(ScrambledZipfian::new(0, n + expected))
            }
            // YCSB builds it over the last inserted number (recordcount - 1) as item count.
            RequestDistribution::Latest => KeyChooser::Latest(Zipfian::new(n - 1)),
            RequestDistribution::Hotspot => {
                KeyChooser::Hotspot(Hotspot::new(0, n - 1, cfg.hotspotdatafraction, cfg.hotspotopnfraction))
            }
        };
        let scan = match cfg.scanlengthdistribution {
            ScanLengthDistribution::Uniform => ScanLen::Uniform {
                min: cfg.minscanlength,
                span: (cfg.maxscanlength.max(cfg.minscanlength) - cfg.minscanlength) as u64 + 1,
            },
            ScanLengthDistribution::Zipfian => ScanLen::Zipfian(Zipfian::with_range(
                cfg.minscanlength as u64,
                cfg.maxscanlength.max(cfg.minscanlength) as u64,
                ZIPFIAN_CONSTANT,
            )),
        };
        let record_bytes = cfg.record_bytes();
        Ok(Ycsb {
            rng: Rng::derive(seed, 0x5943_5342),
            phase: if phases == YcsbPhases::Run { Phase::Run } else { Phase::Load },
            stop_after_load: phases == YcsbPhases::Load,
            order: cfg.insertorder,
            recordcount: n,
            load_next: 0,
            insert_next: n,
            ops_done: 0,
            op_limit: Some(cfg.operationcount),
            byte_budget: None,
            bytes: 0,
            cum,
            kinds,
            chooser,
            scan,
            record_bytes,
            update_bytes: if cfg.writeallfields { record_bytes } else { cfg.fieldlength },
        })
    }

    /// Stop once the inserted and updated bytes (field data of inserts, updates and
    /// read-modify-writes, load phase included) reach `bytes`, instead of after
    /// operationcount run-phase operations. The operation that reaches it is the last one.
    pub fn with_byte_budget(mut self, bytes: u64) -> Ycsb {
        self.byte_budget = Some(bytes);
        self.op_limit = None;
        if bytes == 0 {
            self.phase = Phase::Done;
        }
        self
    }

    /// Field data bytes of inserts, updates and read-modify-writes emitted so far.
    pub fn bytes_written(&self) -> u64 {
        self.bytes
    }

    /// Run-phase operations emitted so far.
    pub fn operations(&self) -> u64 {
        self.ops_done
    }

    /// Records that exist (loaded or inserted in the run phase).
    pub fn records(&self) -> u64 {
        self.insert_next
    }

    /// A record number for a run-phase operation (YCSB's `nextKeynum`).
    #[inline(always)]
    fn keynum(&mut self) -> u64 {
        let last = self.insert_next - 1;
        loop {
            let k = match &mut self.chooser {
                KeyChooser::Uniform { n } => self.rng.below(*n),
                KeyChooser::Zipfian(z) => z.next(&mut self.rng),
                KeyChooser::Latest(z) => last.wrapping_sub(z.next_of(&mut self.rng, last)),
                KeyChooser::Hotspot(h) => h.next(&mut self.rng),
            };
            if k <= last {
                return k;
            }
        }
    }

    #[inline(always)]
    fn key(&self, keynum: u64) -> u64 {
        ycsb_key(keynum, self.order)
    }

    #[inline(always)]
    fn run_op(&mut self) -> KvOp {
        let u = self.rng.unit_f64();
        let mut i = 0;
        while u >= self.cum[i] {
            i += 1;
        }
        match self.kinds[i] {
            Kind::Read => {
                let k = self.keynum();
                KvOp::Read { key: self.key(k) }
            }
            Kind::Update => {
                let k = self.keynum();
                KvOp::Update { key: self.key(k), bytes: self.update_bytes }
            }
            Kind::Insert => {
                let k = self.insert_next;
                self.insert_next += 1;
                KvOp::Insert { key: self.key(k), bytes: self.record_bytes }
            }
            Kind::Scan => {
                let k = self.keynum();
                let records = match &mut self.scan {
                    ScanLen::Uniform { min, span } => *min + self.rng.below(*span) as u32,
                    ScanLen::Zipfian(z) => z.next(&mut self.rng) as u32,
                };
                KvOp::Scan { key: self.key(k), records }
            }
            Kind::Rmw => {
                let k = self.keynum();
                KvOp::ReadModifyWrite { key: self.key(k), bytes: self.update_bytes }
            }
        }
    }
}

#[inline(always)]
fn op_bytes(op: &KvOp) -> u64 {
    match *op {
        KvOp::Insert { bytes, .. } | KvOp::Update { bytes, .. } | KvOp::ReadModifyWrite { bytes, .. } => bytes as u64,
        _ => 0,
    }
}

impl KvSource for Ycsb {
    fn fill(&mut self, out: &mut Vec<KvOp>, max: usize) -> usize {
        let start = out.len();
        out.reserve(max.min(1 << 16));
        while out.len() - start < max {
            let op = match self.phase {
                Phase::Done => break,
                Phase::Load => {
                    if self.load_next >= self.recordcount {
                        self.phase = if self.stop_after_load { Phase::Done } else { Phase::Run };
                        continue;
                    }
                    let k = self.load_next;
                    self.load_next += 1;
                    KvOp::Insert { key: self.key(k), bytes: self.record_bytes }
                }
                Phase::Run => {
                    if let Some(limit) = self.op_limit {
                        if self.ops_done >= limit {
                            self.phase = Phase::Done;
                            break;
                        }
                    }
                    self.ops_done += 1;
                    self.run_op()
                }
            };
            out.push(op);
            self.bytes += op_bytes(&op);
            if let Some(budget) = self.byte_budget {
                if self.bytes >= budget {
                    self.phase = Phase::Done;
                }
            }
        }
        out.len() - start
    }
    /// The load ends when its last record is out: the phase turns to Run (or Done) before the
    /// next request is made.
    fn loading(&self) -> bool {
        self.phase == Phase::Load && self.load_next < self.recordcount
    }
    fn load_left(&self) -> Option<u64> {
        Some(if self.phase == Phase::Load { self.recordcount - self.load_next } else { 0 })
    }
}
