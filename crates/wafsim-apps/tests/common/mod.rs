//! What the LSM store's test files share: their record shape and key scrambling.

pub const KIB: u64 = 1024;
/// Value bytes that make a 1 KiB record with a 24-byte key and no overhead.
pub const VALUE: u32 = 1000;

/// A scrambled key (unique per record number, uniform over u64).
pub fn key(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
