//! A TPC-C-like transaction mix as key-value requests (documents inserted, updated, read and
//! deleted), for document stores and KV engines (TPC Benchmark C, Standard Specification
//! revision 5.11: clause 1 for the tables and their row sizes, clause 2 for the transaction
//! profiles, clause 5.2.3 for the minimum mix, clause 2.1.6 for NURand, clause 4.3.3 for the
//! initial population).
//!
//! Model (docs/model.md, "TPC-C-like generator"):
//! - Tables are key spaces: a key is `table << 56 | row id`, the row id packing the row's
//!   primary key (warehouse, district, customer, order, line).
//! - Row sizes are the specification's (clause 1.2): a document store adds its own overhead.
//! - The load phase inserts the initial population of `warehouses` warehouses; the run phase
//!   draws transactions by the minimum mix: New-Order 45 %, Payment 43 %, Order-Status 4 %,
//!   Delivery 4 %, Stock-Level 4 %.
//! - New-Order: reads the warehouse, district and customer, updates the district (next order
//!   id), inserts the order and its new-order row, and for each of 5 to 15 lines reads the item,
//!   updates the stock row and inserts the order line (items by NURand(8191), 1 % of the
//!   orders roll back after the reads and write nothing, as 1 % name an unused item).
//! - Payment: updates the warehouse, the district and the customer (60 % chosen by last name:
//!   modelled as one more read), inserts a history row.
//! - Order-Status: reads the customer, its last order and the order's lines.
//! - Delivery: in each of the 10 districts, the oldest undelivered order: deletes its
//!   new-order row, updates the order and each of its lines, updates the customer.
//! - Stock-Level: reads the lines of the district's last 20 orders and their stock rows.
//! - Customers by NURand(1023, 1, 3000) within the district; remote warehouses are not
//!   modelled (each terminal stays in its home warehouse).

use crate::kv::{KvOp, KvSource};
use std::collections::VecDeque;
use wafsim_core::Rng;

/// Tables (key spaces).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Table {
    /// WAREHOUSE: one row per warehouse.
    Warehouse = 1,
    /// DISTRICT: ten per warehouse.
    District,
    /// CUSTOMER: 3000 per district.
    Customer,
    /// HISTORY: one row per payment (and per customer initially).
    History,
    /// NEW-ORDER: orders not delivered yet.
    NewOrder,
    /// ORDER.
    Order,
    /// ORDER-LINE: 5 to 15 per order.
    OrderLine,
    /// ITEM: 100,000 items, shared by all warehouses.
    Item,
    /// STOCK: one row per item per warehouse.
    Stock,
}

impl Table {
    /// Row size in bytes (TPC-C clause 1.2, rounded as the specification lists them).
    pub fn row_bytes(self) -> u32 {
        match self {
            Table::Warehouse => 89,
            Table::District => 95,
            Table::Customer => 655,
            Table::History => 46,
            Table::NewOrder => 8,
            Table::Order => 24,
            Table::OrderLine => 54,
            Table::Item => 82,
            Table::Stock => 306,
        }
    }

    /// The table a key belongs to.
    pub fn of(key: u64) -> Option<Table> {
        use Table::*;
        [Warehouse, District, Customer, History, NewOrder, Order, OrderLine, Item, Stock].into_iter().find(|t| *t as u64 == key >> 56)
    }
}

/// Districts per warehouse (clause 4.3.3.1).
pub const DISTRICTS: u64 = 10;
/// Customers per district (clause 4.3.3.1).
pub const CUSTOMERS: u64 = 3000;
/// Items in the ITEM table, and stock rows per warehouse (clause 4.3.3.1).
pub const ITEMS: u64 = 100_000;
/// Initial orders per district, of which the last 900 are undelivered (clause 4.3.3.1).
const INITIAL_ORDERS: u64 = 3000;
const INITIAL_UNDELIVERED: u64 = 900;

/// Row bytes of the initial population of `warehouses` warehouses (clause 4.3.3.1), with the
/// mean of 10 lines per order (5 to 15, uniform): about 68.6 MB per warehouse plus 8.2 MB of
/// items.
pub fn initial_bytes(warehouses: u64) -> u64 {
    let r = |t: Table| t.row_bytes() as u64;
    let orders = DISTRICTS * INITIAL_ORDERS;
    let per_warehouse = r(Table::Warehouse)
        + DISTRICTS * r(Table::District)
        + DISTRICTS * CUSTOMERS * (r(Table::Customer) + r(Table::History))
        + orders * (r(Table::Order) + 10 * r(Table::OrderLine))
        + DISTRICTS * INITIAL_UNDELIVERED * r(Table::NewOrder)
        + ITEMS * r(Table::Stock);
    ITEMS * r(Table::Item) + warehouses * per_warehouse
}

fn key(t: Table, id: u64) -> u64 {
    debug_assert!(id < 1 << 56);
    (t as u64) << 56 | id
}

/// Row ids: warehouse w (0-based), district d, customer c, order o, line l.
fn district_id(w: u64, d: u64) -> u64 {
    w * DISTRICTS + d
}
fn customer_id(w: u64, d: u64, c: u64) -> u64 {
    district_id(w, d) * CUSTOMERS + c
}
fn order_id(w: u64, d: u64, o: u64) -> u64 {
    district_id(w, d) << 28 | o
}
fn line_id(w: u64, d: u64, o: u64, l: u64) -> u64 {
    order_id(w, d, o) << 4 | l
}
fn stock_id(w: u64, i: u64) -> u64 {
    w * ITEMS + i
}

/// The transaction mix and the size of the database.
#[derive(Debug, Clone, PartialEq)]
pub struct TpccConfig {
    /// Warehouses of the database: the initial population grows with them (see
    /// [`initial_bytes`]).
    pub warehouses: u64,
    /// Run-phase transactions (None: until the byte budget).
    pub transactions: Option<u64>,
    /// Stop once inserts and updates have sent this many bytes (load included).
    pub byte_budget: Option<u64>,
    /// Emit the load phase first.
    pub load: bool,
    /// Mix in percent: New-Order, Payment, Order-Status, Delivery, Stock-Level.
    pub mix: [u32; 5],
}

impl Default for TpccConfig {
    fn default() -> Self {
        TpccConfig { warehouses: 1, transactions: Some(10_000), byte_budget: None, load: true, mix: [45, 43, 4, 4, 4] }
    }
}

/// A TPC-C-like workload as a stream of [`KvOp`]s. Deterministic for a seed.
pub struct Tpcc {
    cfg: TpccConfig,
    rng: Rng,
    seed: u64,
    /// Next order number per district, and its undelivered orders (oldest first) with their
    /// line counts and customers.
    next_o: Vec<u64>,
    undelivered: Vec<VecDeque<(u64, u64, u64)>>,
    /// Line counts of recent orders per district (for Order-Status and Stock-Level reads).
    lines: Vec<VecDeque<(u64, u64)>>,
    queue: VecDeque<KvOp>,
    /// Load cursor: (table step, index) of the next rows to insert.
    load_step: u32,
    load_i: u64,
    done_tx: u64,
    bytes: u64,
    /// Transactions run, per kind.
    pub counts: [u64; 5],
}

impl Tpcc {
    /// The workload; refuses zero warehouses and a mix that does not sum to 100.
    pub fn new(cfg: TpccConfig, seed: u64) -> Result<Tpcc, String> {
        if cfg.warehouses == 0 || cfg.warehouses > 1 << 16 {
            return Err(format!("TPC-C: {} warehouses: expected 1 to 65536", cfg.warehouses));
        }
        if cfg.mix.iter().sum::<u32>() != 100 {
            return Err(format!("TPC-C: mix {:?} does not add up to 100", cfg.mix));
        }
        let n = (cfg.warehouses * DISTRICTS) as usize;
        let mut t = Tpcc {
            rng: Rng::new(seed),
            seed,
            next_o: vec![INITIAL_ORDERS + 1; n],
            undelivered: vec![VecDeque::new(); n],
            lines: vec![VecDeque::new(); n],
            queue: VecDeque::new(),
            load_step: if cfg.load { 0 } else { 9 },
            load_i: 0,
            done_tx: 0,
            bytes: 0,
            counts: [0; 5],
            cfg,
        };
        // The initial population's undelivered orders and recent line counts: the same pure
        // function the load uses, so the two agree.
        for dd in 0..n {
            for o in INITIAL_ORDERS - INITIAL_UNDELIVERED + 1..=INITIAL_ORDERS {
                let (ol, c) = t.initial_order(dd as u64, o);
                t.undelivered[dd].push_back((o, ol, c));
                if o > INITIAL_ORDERS - 20 {
                    t.lines[dd].push_back((o, ol));
                }
            }
        }
        Ok(t)
    }

    /// Bytes sent by inserts and updates so far.
    pub fn bytes_written(&self) -> u64 {
        self.bytes
    }

    fn nurand(&mut self, a: u64, x: u64, y: u64, c: u64) -> u64 {
        (((self.rng.below(a + 1) | (x + self.rng.below(y - x + 1))) + c) % (y - x + 1)) + x
    }

    fn push(&mut self, op: KvOp) {
        if let KvOp::Insert { bytes, .. } | KvOp::Update { bytes, .. } = op {
            self.bytes += bytes as u64;
        }
        self.queue.push_back(op);
    }

    fn insert(&mut self, t: Table, id: u64) {
        self.push(KvOp::Insert { key: key(t, id), bytes: t.row_bytes() });
    }
    fn update(&mut self, t: Table, id: u64) {
        self.push(KvOp::Update { key: key(t, id), bytes: t.row_bytes() });
    }
    fn read(&mut self, t: Table, id: u64) {
        self.push(KvOp::Read { key: key(t, id) });
    }

    /// Queue the next batch of load rows; false when the load is complete.
    fn load_more(&mut self) -> bool {
        let w_n = self.cfg.warehouses;
        let step_rows = |s: u32| -> u64 {
            match s {
                0 => ITEMS,
                1 => w_n,
                2 => w_n * DISTRICTS,
                3 | 4 => w_n * DISTRICTS * CUSTOMERS,
                5 => w_n * DISTRICTS * INITIAL_ORDERS,
                6 => w_n * ITEMS,
                _ => 0,
            }
        };
        while self.load_step < 7 && self.load_i >= step_rows(self.load_step) {
            self.load_step += 1;
            self.load_i = 0;
        }
        if self.load_step >= 7 {
            self.load_step = 9;
            return false;
        }
        let end = (self.load_i + 256).min(step_rows(self.load_step));
        for i in self.load_i..end {
            match self.load_step {
                0 => self.insert(Table::Item, i),
                1 => self.insert(Table::Warehouse, i),
                2 => self.insert(Table::District, i),
                3 => self.insert(Table::Customer, i),
                4 => self.insert(Table::History, i),
                5 => {
                    // Order o of district dd, its lines, and its new-order row if undelivered.
                    let dd = i / INITIAL_ORDERS;
                    let o = i % INITIAL_ORDERS + 1;
                    let (w, d) = (dd / DISTRICTS, dd % DISTRICTS);
                    self.insert(Table::Order, order_id(w, d, o));
                    let (ol, _) = self.initial_order(dd, o);
                    for l in 0..ol {
                        self.insert(Table::OrderLine, line_id(w, d, o, l));
                    }
                    if o > INITIAL_ORDERS - INITIAL_UNDELIVERED {
                        self.insert(Table::NewOrder, order_id(w, d, o));
                    }
                }
                _ => self.insert(Table::Stock, i),
            }
        }
        self.load_i = end;
        true
    }

    /// Lines (5 to 15) and customer of initial order `o` of district `dd`: a hash of the seed
    /// and the order, so load and run agree without storing them.
    fn initial_order(&self, dd: u64, o: u64) -> (u64, u64) {
        let mut z = self.seed ^ (dd << 32 | o).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (5 + z % 11, 1 + (z >> 8) % CUSTOMERS)
    }

    /// Queue one transaction.
    fn transaction(&mut self) {
        let w = self.rng.below(self.cfg.warehouses);
        let d = self.rng.below(DISTRICTS);
        let dd = district_id(w, d) as usize;
        let pick = self.rng.below(100) as u32;
        let mut acc = 0;
        let kind = self.cfg.mix.iter().position(|&p| {
            acc += p;
            pick < acc
        });
        let kind = kind.unwrap_or(0);
        self.counts[kind] += 1;
        match kind {
            0 => {
                // New-Order.
                let c = self.nurand(1023, 1, CUSTOMERS, 259);
                self.read(Table::Warehouse, w);
                self.read(Table::District, dd as u64);
                self.read(Table::Customer, customer_id(w, d, c));
                let ol = 5 + self.rng.below(11);
                let items: Vec<u64> = (0..ol).map(|_| self.nurand(8191, 1, ITEMS, 7911) - 1).collect();
                for &i in &items {
                    self.read(Table::Item, i);
                }
                if self.rng.below(100) == 0 {
                    return; // rolled back: an unused item number
                }
                let o = self.next_o[dd];
                self.next_o[dd] += 1;
                self.update(Table::District, dd as u64);
                self.insert(Table::Order, order_id(w, d, o));
                self.insert(Table::NewOrder, order_id(w, d, o));
                for (l, &i) in items.iter().enumerate() {
                    self.update(Table::Stock, stock_id(w, i));
                    self.insert(Table::OrderLine, line_id(w, d, o, l as u64));
                }
                self.undelivered[dd].push_back((o, ol, c));
                self.lines[dd].push_back((o, ol));
                if self.lines[dd].len() > 20 {
                    self.lines[dd].pop_front();
                }
            }
            1 => {
                // Payment.
                let c = self.nurand(1023, 1, CUSTOMERS, 259);
                self.update(Table::Warehouse, w);
                self.update(Table::District, dd as u64);
                if self.rng.below(100) < 60 {
                    self.read(Table::Customer, customer_id(w, d, c)); // the by-last-name lookup
                }
                self.update(Table::Customer, customer_id(w, d, c));
                let h = self.rng.next_u64() >> 9;
                self.insert(Table::History, (CUSTOMERS * DISTRICTS * self.cfg.warehouses) + h);
            }
            2 => {
                // Order-Status.
                let c = self.nurand(1023, 1, CUSTOMERS, 259);
                self.read(Table::Customer, customer_id(w, d, c));
                if let Some(&(o, ol)) = self.lines[dd].back() {
                    self.read(Table::Order, order_id(w, d, o));
                    for l in 0..ol {
                        self.read(Table::OrderLine, line_id(w, d, o, l));
                    }
                }
            }
            3 => {
                // Delivery: every district of the warehouse.
                for d2 in 0..DISTRICTS {
                    let dd2 = district_id(w, d2) as usize;
                    let Some((o, ol, c)) = self.undelivered[dd2].pop_front() else { continue };
                    self.push(KvOp::Delete { key: key(Table::NewOrder, order_id(w, d2, o)) });
                    self.update(Table::Order, order_id(w, d2, o));
                    for l in 0..ol {
                        self.update(Table::OrderLine, line_id(w, d2, o, l));
                    }
                    self.update(Table::Customer, customer_id(w, d2, c));
                }
            }
            _ => {
                // Stock-Level.
                self.read(Table::District, dd as u64);
                let recent: Vec<(u64, u64)> = self.lines[dd].iter().copied().collect();
                for (o, ol) in recent {
                    for l in 0..ol {
                        self.read(Table::OrderLine, line_id(w, d, o, l));
                        let i = self.rng.below(ITEMS);
                        self.read(Table::Stock, stock_id(w, i));
                    }
                }
            }
        }
        self.done_tx += 1;
    }

    fn finished(&self) -> bool {
        self.cfg.byte_budget.is_some_and(|b| self.bytes >= b) || (self.load_step == 9 && self.cfg.transactions.is_some_and(|t| self.done_tx >= t))
    }
}

impl KvSource for Tpcc {
    fn fill(&mut self, out: &mut Vec<KvOp>, max: usize) -> usize {
        let before = out.len();
        while out.len() - before < max {
            if let Some(op) = self.queue.pop_front() {
                out.push(op);
                continue;
            }
            if self.finished() {
                break;
            }
            if self.load_step != 9 {
                if self.load_more() {
                    continue;
                }
                if self.finished() {
                    break;
                }
            }
            self.transaction();
        }
        out.len() - before
    }
    /// The load is over once `load_more` found nothing left (it queues nothing then), so every
    /// request handed out before was a load row.
    fn loading(&self) -> bool {
        self.load_step != 9
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(t: &mut Tpcc) -> Vec<KvOp> {
        let mut v = Vec::new();
        while t.fill(&mut v, 1000) > 0 {}
        v
    }

    #[test]
    fn initial_bytes_match_the_load() {
        let mut t = Tpcc::new(TpccConfig { warehouses: 2, transactions: Some(0), ..TpccConfig::default() }, 3).unwrap();
        let mut ops = Vec::new();
        while t.fill(&mut ops, 4096) > 0 {}
        let loaded: u64 = ops.iter().map(|o| match *o { KvOp::Insert { bytes, .. } => bytes as u64, _ => 0 }).sum();
        let est = initial_bytes(2);
        assert!((loaded as f64 / est as f64 - 1.0).abs() < 0.01, "loaded {loaded} vs estimate {est}");
    }

    #[test]
    fn load_inserts_the_initial_population_once() {
        let mut t = Tpcc::new(TpccConfig { transactions: Some(0), ..TpccConfig::default() }, 1).unwrap();
        let ops = drain(&mut t);
        let mut per = std::collections::HashMap::new();
        let mut keys = std::collections::HashSet::new();
        for op in &ops {
            let KvOp::Insert { key, bytes } = *op else { panic!("load emits inserts only: {op:?}") };
            let tb = Table::of(key).unwrap();
            assert_eq!(bytes, tb.row_bytes());
            assert!(keys.insert(key), "key {key:#x} inserted twice");
            *per.entry(tb as u8).or_insert(0u64) += 1;
        }
        // Clause 4.3.3.1 for one warehouse.
        assert_eq!(per[&(Table::Item as u8)], 100_000);
        assert_eq!(per[&(Table::Warehouse as u8)], 1);
        assert_eq!(per[&(Table::District as u8)], 10);
        assert_eq!(per[&(Table::Customer as u8)], 30_000);
        assert_eq!(per[&(Table::History as u8)], 30_000);
        assert_eq!(per[&(Table::Order as u8)], 30_000);
        assert_eq!(per[&(Table::NewOrder as u8)], 9_000);
        assert_eq!(per[&(Table::Stock as u8)], 100_000);
        let lines = per[&(Table::OrderLine as u8)] as f64 / 30_000.0;
        assert!((lines - 10.0).abs() < 0.1, "{lines} lines per order (5..=15 uniform: 10)");
    }

    #[test]
    fn run_follows_the_minimum_mix_and_new_orders_write_what_they_should() {
        let n = 200_000;
        let mut t = Tpcc::new(TpccConfig { warehouses: 4, transactions: Some(n), load: false, ..TpccConfig::default() }, 7).unwrap();
        let ops = drain(&mut t);
        for (k, want) in [45.0, 43.0, 4.0, 4.0, 4.0].iter().enumerate() {
            let got = t.counts[k] as f64 * 100.0 / n as f64;
            assert!((got - want).abs() < 0.5, "kind {k}: {got:.2}% vs {want}%");
        }
        // New-Order: ~10 order lines and stock updates each, 99% committed.
        let lines = ops.iter().filter(|o| matches!(o, KvOp::Insert { key, .. } if Table::of(*key) == Some(Table::OrderLine))).count() as f64;
        let per = lines / t.counts[0] as f64;
        assert!((per - 9.9).abs() < 0.15, "{per} lines per New-Order (10 x 0.99)");
        // Delivery deletes a new-order row per district with one waiting.
        let deletes = ops.iter().filter(|o| matches!(o, KvOp::Delete { .. })).count() as u64;
        assert!(deletes > 0 && deletes <= t.counts[3] * DISTRICTS);
    }

    #[test]
    fn nurand_stays_in_range_and_is_skewed() {
        let mut t = Tpcc::new(TpccConfig::default(), 3).unwrap();
        let mut hist = vec![0u32; CUSTOMERS as usize + 1];
        for _ in 0..300_000 {
            let c = t.nurand(1023, 1, CUSTOMERS, 259);
            assert!((1..=CUSTOMERS).contains(&c));
            hist[c as usize] += 1;
        }
        hist.sort_unstable();
        // Uniform would put 100 per customer; NURand's OR of two uniforms skews it.
        assert!(hist[CUSTOMERS as usize] > 2 * 100, "most popular customer {}", hist[CUSTOMERS as usize]);
    }

    #[test]
    fn same_seed_same_stream_and_budget_stops() {
        let cfg = TpccConfig { transactions: None, byte_budget: Some(50 << 20), ..TpccConfig::default() };
        let a = drain(&mut Tpcc::new(cfg.clone(), 9).unwrap());
        let b = drain(&mut Tpcc::new(cfg, 9).unwrap());
        assert_eq!(a, b);
        let sent: u64 = a.iter().map(|o| match o {
            KvOp::Insert { bytes, .. } | KvOp::Update { bytes, .. } => *bytes as u64,
            _ => 0,
        }).sum();
        assert!(sent >= 50 << 20 && sent < (50 << 20) + (64 << 10), "{sent}");
    }
}
