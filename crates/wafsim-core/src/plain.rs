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

impl PlainDevice {
    /// The kind a plain device's image names.
    pub const IMAGE_KIND: &'static str = "plain";

    /// What an image must have been saved from: the size and block size.
    fn config_text(&self) -> String {
        format!("PlainDevice {{ bytes: {}, block_size: {} }}", self.bytes, self.block_size)
    }
}

/// The image holds the counters only: the device keeps no data, only what it was sent.
impl crate::image::SavesImage for PlainDevice {
    fn save_image_to(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let mut w = crate::image::ImageWriter::with_config(out, Self::IMAGE_KIND, &self.config_text())?;
        crate::image::write_counters(&mut w, &self.counters)?;
        w.finish().map(drop)
    }

    fn load_image_from(&mut self, input: &mut dyn std::io::Read) -> Result<(), crate::image::ImageError> {
        let mut r = crate::image::ImageReader::with_config(input, Self::IMAGE_KIND, &self.config_text())?;
        let counters = crate::image::read_counters(&mut r)?;
        r.finish()?;
        if counters.namespaces.len() != 1 {
            return Err(crate::image::ImageError::Damaged("counters of another device".into()));
        }
        self.counters = counters;
        Ok(())
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

    #[test]
    fn an_image_carries_the_counters_and_refuses_another_size() {
        use crate::image::SavesImage;
        let mut d = PlainDevice::new(1 << 20, 4096).unwrap();
        d.submit(&Io { op: Op::Write, ns: 0, offset: 4096, len: 8192, pid: Pid::NONE }).unwrap();
        let mut image = Vec::new();
        d.save_image_to(&mut image).unwrap();
        let mut back = PlainDevice::new(1 << 20, 4096).unwrap();
        back.load_image_from(&mut &image[..]).unwrap();
        assert_eq!(back.counters(), d.counters());
        let e = PlainDevice::new(1 << 21, 4096).unwrap().load_image_from(&mut &image[..]).unwrap_err().to_string();
        assert!(e.contains("another configuration") && e.contains("1048576") && e.contains("2097152"), "{e}");
    }
}
