//! Which collections and indexes a MongoDB database has, and where a request's document goes:
//! one collection (YCSB's `usertable`), or TPC-C as py-tpcc loads it into MongoDB
//! (mongodb-labs/py-tpcc `pytpcc/drivers/mongodbdriver.py`, its defaults: `denormalize = True`,
//! so order lines are an array inside their order's document and there is no ORDER_LINE
//! collection; `TABLE_INDEXES` gives each collection's secondary indexes; every document's `_id`
//! is an ObjectId, which grows with time, so the `_id` index is appended to at its right edge).
//! Each collection and each index is its own WiredTiger file (a B-tree).

/// TPC-C tables as the request generator numbers them (`wafsim_workload::tpcc::Table`: a key is
/// `table << 56 | row id`; an order line's row id is its order's row id shifted left by 4).
pub mod tpcc_table {
    /// WAREHOUSE.
    pub const WAREHOUSE: u64 = 1;
    /// DISTRICT.
    pub const DISTRICT: u64 = 2;
    /// CUSTOMER.
    pub const CUSTOMER: u64 = 3;
    /// HISTORY.
    pub const HISTORY: u64 = 4;
    /// NEW-ORDER.
    pub const NEW_ORDER: u64 = 5;
    /// ORDER.
    pub const ORDER: u64 = 6;
    /// ORDER-LINE (embedded in ORDER's documents).
    pub const ORDER_LINE: u64 = 7;
    /// ITEM.
    pub const ITEM: u64 = 8;
    /// STOCK.
    pub const STOCK: u64 = 9;
}

/// Where an index entry sorts, which decides which of the index's leaves a write dirties.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexOrder {
    /// In insertion order (an ObjectId `_id`, or the RecordId): always the right edge.
    Insertion,
    /// In the order of the request's row id (TPC-C's compound primary keys, whose fields the
    /// row id packs in the same order).
    Key,
    /// Unrelated to both (a hashed YCSB key, an index led by another field): a hash of the key
    /// with this salt.
    Hashed(u64),
}

/// One index of a collection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexDef {
    /// Its fields, for reports.
    pub name: &'static str,
    /// Where its entries sort.
    pub order: IndexOrder,
    /// An update of the document changes the entry's key (a field of the index is updated:
    /// the entry is removed and inserted again, next to where it was).
    pub on_update: bool,
}

/// One collection and its indexes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectionDef {
    /// Its name.
    pub name: &'static str,
    /// Its `_id` index.
    pub id: IndexDef,
    /// Its secondary indexes (`TABLE_INDEXES`).
    pub indexes: Vec<IndexDef>,
}

/// The database's collections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// One collection; the key is the `_id` (YCSB's MongoDB client sets `_id` to the key
    /// string, whose order is unrelated to insertion order).
    #[default]
    Single,
    /// TPC-C, denormalized, as py-tpcc loads it.
    Tpcc,
}

const fn index(name: &'static str, order: IndexOrder, on_update: bool) -> IndexDef {
    IndexDef { name, order, on_update }
}

const OBJECT_ID: IndexDef = index("_id", IndexOrder::Insertion, false);

/// The collections in file order, and for each TPC-C table the collection that holds it.
const TPCC: [(u64, &str); 8] = [
    (tpcc_table::WAREHOUSE, "WAREHOUSE"),
    (tpcc_table::DISTRICT, "DISTRICT"),
    (tpcc_table::CUSTOMER, "CUSTOMER"),
    (tpcc_table::HISTORY, "HISTORY"),
    (tpcc_table::NEW_ORDER, "NEW_ORDER"),
    (tpcc_table::ORDER, "ORDERS"),
    (tpcc_table::ITEM, "ITEM"),
    (tpcc_table::STOCK, "STOCK"),
];

impl Layout {
    /// The collections, in the order their files are created.
    pub fn collections(self) -> Vec<CollectionDef> {
        use IndexOrder::*;
        match self {
            Layout::Single => vec![CollectionDef { name: "usertable", id: index("_id", Hashed(0), false), indexes: vec![] }],
            Layout::Tpcc => TPCC
                .iter()
                .map(|&(t, name)| {
                    // py-tpcc TABLE_INDEXES; a field that a transaction updates inside an index
                    // key makes the update rewrite the entry (D_NEXT_O_ID by New-Order,
                    // S_QUANTITY by New-Order, O_CARRIER_ID by Delivery).
                    let indexes = match t {
                        tpcc_table::WAREHOUSE => vec![index("W_ID, W_TAX", Key, false)],
                        tpcc_table::DISTRICT => vec![index("D_W_ID, D_ID, D_NEXT_O_ID, D_TAX", Key, true)],
                        tpcc_table::CUSTOMER => vec![index("C_W_ID, C_D_ID, C_ID", Key, false), index("C_W_ID, C_D_ID, C_LAST", Hashed(0xC1), false)],
                        tpcc_table::NEW_ORDER => vec![index("NO_W_ID, NO_D_ID, NO_O_ID", Key, false)],
                        tpcc_table::ORDER => vec![index("O_W_ID, O_D_ID, O_ID, O_C_ID", Key, false), index("O_C_ID, O_D_ID, O_W_ID, O_ID, O_CARRIER_ID, O_ENTRY_ID", Hashed(0x0C), true)],
                        tpcc_table::ITEM => vec![index("I_W_ID, I_ID", Key, false)],
                        tpcc_table::STOCK => vec![index("S_W_ID, S_I_ID, S_QUANTITY", Key, true), index("S_I_ID", Hashed(0x51), false)],
                        _ => vec![],
                    };
                    CollectionDef { name, id: OBJECT_ID, indexes }
                })
                .collect(),
        }
    }

    /// Where a request for `key` goes: the collection, the document's key, and whether the
    /// request writes an element of an array inside that document (an order line in its
    /// order) rather than the document itself. `None` for a key the layout does not know.
    pub fn route(self, key: u64) -> Option<(usize, u64, bool)> {
        match self {
            Layout::Single => Some((0, key, false)),
            Layout::Tpcc => {
                let t = key >> 56;
                if t == tpcc_table::ORDER_LINE {
                    let order = tpcc_table::ORDER << 56 | (key & ((1 << 56) - 1)) >> 4;
                    let c = TPCC.iter().position(|&(t, _)| t == tpcc_table::ORDER)?;
                    return Some((c, order, true));
                }
                TPCC.iter().position(|&(tt, _)| tt == t).map(|c| (c, key, false))
            }
        }
    }
}

/// Where in an index of `order` the entry of the document `key` (RecordId `rid`) sorts.
pub fn index_position(order: IndexOrder, key: u64, rid: u64) -> u64 {
    match order {
        IndexOrder::Insertion => rid,
        IndexOrder::Key => key & ((1 << 56) - 1),
        IndexOrder::Hashed(salt) => {
            let key = key ^ salt;
            let h = (key ^ (key >> 31)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            h ^ (h >> 29)
        }
    }
}
