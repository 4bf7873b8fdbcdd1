//! A regular block device with no model of its media: what it is sent, it stores (media =
//! host). It stands for a device whose own write amplification is out of a study's scope, such
//! as the NVDIMM or NVMe cache device in front of SMR disks under dm-zoned, where the question is
//! what the host layer writes, not what the cache's FTL does with it.

use crate::blockdev::{BlockDevice, Completion};
use crate::counters::{Counters, NsCounters};
use crate::error::DeviceError;
use crate::io::{Io, Op};

/// One namespace of `bytes` bytes in blocks of `block_size`.
#[derive(Debug, Clone)]
pub struct PlainDevice {
    bytes: u64,
    block_size: u32,
    counters: Counters,
}

impl PlainDevice {
    /// `bytes` is rounded down to whole blocks; `block_size` must be a power of two.
    pub fn new(bytes: u64, block_size: u32) -> Result<PlainDevice, &'static str> {
        if !block_size.is_power_of_two() || bytes < block_size as u64 {
            return Err("a plain device needs a power-of-two block size and at least one block");
        }
        let bytes = bytes / block_size as u64 * block_size as u64;
        Ok(PlainDevice { bytes, block_size, counters: Counters { namespaces: vec![NsCounters::default()], ..Default::default() } })
    }

    fn check(&self, io: &Io) -> Result<u64, DeviceError> {
        if io.ns != 0 {
            return Err(DeviceError::NoSuchNamespace(io.ns));
        }
        if io.len == 0 {
            return Err(DeviceError::ZeroLength);
        }
        if io.offset.checked_add(io.len as u64).is_none_or(|e| e > self.bytes) {
            return Err(DeviceError::OutOfRange { ns: io.ns, offset: io.offset, len: io.len, size: self.bytes });
        }
        // Blocks touched.
        let bs = self.block_size as u64;
        Ok((io.offset + io.len as u64).div_ceil(bs) - io.offset / bs)
    }
}

impl BlockDevice for PlainDevice {
    fn submit(&mut self, io: &Io) -> Result<Completion, DeviceError> {
        match io.op {
            Op::Write => {
                let n = self.check(io)?;
                let c = &mut self.counters;
                c.host_write_bytes += io.len as u64;
                c.host_units += n;
                c.namespaces[0].host_write_bytes += io.len as u64;
                c.namespaces[0].host_units += n;
            }
            Op::Read => {
                let n = self.check(io)?;
                self.counters.host_read_bytes += io.len as u64;
                self.counters.read_units += n;
                self.counters.namespaces[0].host_read_bytes += io.len as u64;
            }
            Op::Trim => {
                self.check(io)?;
                self.counters.trim_bytes += io.len as u64;
                self.counters.namespaces[0].trim_bytes += io.len as u64;
            }
            Op::Flush if io.ns == 0 => {}
            Op::Flush => return Err(DeviceError::NoSuchNamespace(io.ns)),
            Op::Append | Op::Zone(_) => return Err(DeviceError::NotZoned { ns: io.ns }),
        }
        Ok(Completion { offset: io.offset })
    }

    fn namespace_count(&self) -> u32 {
        1
    }

    fn namespace_bytes(&self, ns: u32) -> u64 {
        if ns == 0 {
            self.bytes
        } else {
            0
        }
    }

    fn block_size(&self) -> u32 {
        self.block_size
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::Pid;

    #[test]
    fn stores_what_it_is_sent_and_refuses_the_rest() {
        let mut d = PlainDevice::new(1 << 20, 4096).unwrap();
        let io = |op, offset, len| Io { op, ns: 0, offset, len, pid: Pid::NONE };
        d.submit(&io(Op::Write, 8192, 16384)).unwrap();
        d.submit(&io(Op::Read, 0, 4096)).unwrap();
        assert_eq!((d.counters().host_write_bytes, d.counters().media_units(), d.counters().read_units), (16384, 4, 1));
        assert!(matches!(d.submit(&io(Op::Write, (1 << 20) - 4096, 8192)), Err(DeviceError::OutOfRange { .. })));
        assert!(matches!(d.submit(&io(Op::Write, 0, 0)), Err(DeviceError::ZeroLength)));
        assert!(matches!(d.submit(&io(Op::Append, 0, 4096)), Err(DeviceError::NotZoned { .. })));
        assert!(d.zone_geometry(0).is_none());
    }
}
