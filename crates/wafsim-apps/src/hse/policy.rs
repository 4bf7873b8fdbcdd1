//! Media classes, node roles, block kinds, the media-class policy table and the `Create.group`
//! encoding of every file the engine makes.
//!
//! Source: hse r1.9.0 `src/kvdb/mclass_policy.c` (the built-in policies, one preference per
//! cell, so no fallback class); the policy is chosen per mblock allocation from the builder's
//! age group, which is the *destination* node's role when the mblock is allocated
//! (`src/cn/kblock_builder.c` `kblock_finish`, `src/cn/vblock_builder.c` `_vblock_start`,
//! `src/cn/spill.c` `cn_spill`, `src/cn/kcompact.c` `cn_kcompact`). With no staging class every
//! policy is forced to capacity_only (`src/cn/cn.c` `cn_open`). c1 mlogs go to staging whenever a
//! staging class exists, whatever the policy (`src/c1/c1_log.c` `c1_log_create`).

/// A media class (mpool `MP_MED_STAGING` / `MP_MED_CAPACITY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MediaClass {
    /// The fast, small class (e.g. an Optane or SLC drive).
    Staging,
    /// The large class (HSE's default for everything).
    Capacity,
}

/// A cN node's role (its age group, `HSE_MPOLICY_AGE_ROOT/INTERNAL/LEAF`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// The root: no parent (`cn_node_isroot`).
    Root = 0,
    /// Has a parent and children.
    Internal = 1,
    /// Has a parent and no children (`cn_node_isleaf`).
    Leaf = 2,
}

/// What an mblock holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlockKind {
    /// A kblock: keys, their metadata, wbtree index, bloom filter, HyperLogLog.
    Key = 0,
    /// A vblock: values.
    Value = 1,
}

/// The built-in media-class policies of HSE 1.9 (`mclass_policy.c` `default_mclass_policies`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MclassPolicy {
    /// Everything on capacity: HSE 1.9's default (`kvs_rparams.c`, `mclass_policy`).
    #[default]
    CapacityOnly,
    /// Everything on staging.
    StagingOnly,
    /// Only leaf values on capacity; root and internal keys and values and leaf keys on staging
    /// (Micron's MongoDB media-class test configs).
    StagingMaxCapacity,
    /// Root keys and values on staging; internal and leaf nodes on capacity.
    StagingMinCapacity,
}

impl MclassPolicy {
    /// The class of a `kind` block written to a node of role `role` (the sync row is unused in
    /// 1.9: nothing sets `HSE_MPOLICY_AGE_SYNC`).
    pub fn class(self, role: Role, kind: BlockKind) -> MediaClass {
        use MediaClass::*;
        match self {
            MclassPolicy::CapacityOnly => Capacity,
            MclassPolicy::StagingOnly => Staging,
            MclassPolicy::StagingMaxCapacity => {
                if role == Role::Leaf && kind == BlockKind::Value {
                    Capacity
                } else {
                    Staging
                }
            }
            MclassPolicy::StagingMinCapacity => {
                if role == Role::Root {
                    Staging
                } else {
                    Capacity
                }
            }
        }
    }

    /// HSE's name of the policy.
    pub fn name(self) -> &'static str {
        match self {
            MclassPolicy::CapacityOnly => "capacity_only",
            MclassPolicy::StagingOnly => "staging_only",
            MclassPolicy::StagingMaxCapacity => "staging_max_capacity",
            MclassPolicy::StagingMinCapacity => "staging_min_capacity",
        }
    }

    /// The policy HSE names `name`.
    pub fn from_name(name: &str) -> Option<MclassPolicy> {
        [MclassPolicy::CapacityOnly, MclassPolicy::StagingOnly, MclassPolicy::StagingMaxCapacity, MclassPolicy::StagingMinCapacity].into_iter().find(|p| p.name() == name)
    }
}

/// HSE's names (`mclass_policy`); any other is refused with the names it takes.
impl std::str::FromStr for MclassPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<MclassPolicy, String> {
        MclassPolicy::from_name(s).ok_or_else(|| format!("mclass_policy {s:?}: expected \"capacity_only\" (HSE 1.9's default), \"staging_only\", \"staging_max_capacity\" or \"staging_min_capacity\""))
    }
}

/// Group bit of a file on the capacity class: the bit a `MediaClassFs` routes by, the same as
/// the LSM store's ([`crate::lsm::CAPACITY_GROUP_BIT`], bit 31); clear = staging.
pub const HSE_CAPACITY_BIT: u32 = crate::lsm::CAPACITY_GROUP_BIT;
/// Group bit of an mlog (c1); the same value as wafsim-host's `fs::mpool::MLOG_GROUP_BIT`.
pub const HSE_MLOG_BIT: u32 = 1 << 30;
/// Group bit of an allocation that may use mpool's spare reserve (compaction and spill
/// outputs, `KVSET_BUILDER_FLAGS_SPARE`); wafsim-host's `fs::mpool::SPARE_GROUP_BIT`.
pub const HSE_SPARE_BIT: u32 = 1 << 29;
/// An mlog's zone count (mblock-size units) is in the group from this bit on
/// (wafsim-host's `fs::mpool::MLOG_ZONES_SHIFT`) ...
pub const HSE_MLOG_ZONES_SHIFT: u32 = 16;
/// ... masked with this (`fs::mpool::MLOG_ZONES_MASK`).
pub const HSE_MLOG_ZONES_MASK: u32 = 0x1FFF;
/// Mask of the kind code in the low bits of a group.
pub const HSE_KIND_MASK: u32 = 0xFF;
/// Kind code of c1 mlogs; mblocks have `2 * role + kind` (0 root keys, 1 root values,
/// 2 internal keys, 3 internal values, 4 leaf keys, 5 leaf values).
pub const HSE_KIND_C1: u32 = 6;

/// The group of an mblock of `kind` for a node of role `role` on `class`; `spare` for
/// compaction and spill outputs.
pub fn mblock_group(class: MediaClass, role: Role, kind: BlockKind, spare: bool) -> u32 {
    let mut g = 2 * role as u32 + kind as u32;
    if class == MediaClass::Capacity {
        g |= HSE_CAPACITY_BIT;
    }
    if spare {
        g |= HSE_SPARE_BIT;
    }
    g
}

/// The group of a c1 mlog of `zones` mblock-size zones on `class`.
pub fn mlog_group(class: MediaClass, zones: u64) -> u32 {
    let z = zones.clamp(1, HSE_MLOG_ZONES_MASK as u64) as u32;
    let mut g = HSE_KIND_C1 | HSE_MLOG_BIT | z << HSE_MLOG_ZONES_SHIFT;
    if class == MediaClass::Capacity {
        g |= HSE_CAPACITY_BIT;
    }
    g
}

/// The media class a group says.
pub fn group_class(group: u32) -> MediaClass {
    if group & HSE_CAPACITY_BIT != 0 {
        MediaClass::Capacity
    } else {
        MediaClass::Staging
    }
}

/// The role and kind of an mblock group; `None` for a c1 mlog.
pub fn group_kind(group: u32) -> Option<(Role, BlockKind)> {
    let k = group & HSE_KIND_MASK;
    let role = match k / 2 {
        0 => Role::Root,
        1 => Role::Internal,
        2 => Role::Leaf,
        _ => return None,
    };
    Some((role, if k.is_multiple_of(2) { BlockKind::Key } else { BlockKind::Value }))
}
