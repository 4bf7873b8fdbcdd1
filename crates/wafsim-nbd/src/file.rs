//! [`FileExport`]: an export backed by a regular file or a block device node.
//!
//! Uses positional I/O (`pread`/`pwrite` through [`FileExt`]) on one shared descriptor, so
//! connections never contend for a file offset. Flush and FUA map to `fdatasync`. Trim is
//! accepted and ignored (allowed: it is only a hint, and punching holes is not needed here);
//! write-zeroes writes real zero bytes, which honours `NBD_CMD_FLAG_NO_HOLE` trivially.

use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::export::{Export, ExportError, ZEROS};
use crate::proto::BlockSizes;

/// A file-backed export.
#[derive(Debug)]
pub struct FileExport {
    file: File,
    size: u64,
    read_only: bool,
    sizes: BlockSizes,
}

impl FileExport {
    /// Opens an existing file or block device; the export size is its current length.
    pub fn open(path: impl AsRef<Path>, read_only: bool) -> io::Result<Self> {
        let file = OpenOptions::new().read(true).write(!read_only).open(path)?;
        // Seeking to the end, unlike metadata().len(), also sizes block device nodes.
        let size = (&file).seek(SeekFrom::End(0))?;
        Ok(FileExport { file, size, read_only, sizes: BlockSizes::DEFAULT })
    }

    /// Creates (or truncates) a file of `size` bytes; it starts sparse on file systems that
    /// support it.
    pub fn create(path: impl AsRef<Path>, size: u64) -> io::Result<Self> {
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(path)?;
        file.set_len(size)?;
        Ok(FileExport { file, size, read_only: false, sizes: BlockSizes::DEFAULT })
    }

    /// Opens `path` with its data when it exists, else creates it sparse with `size` bytes. An
    /// existing file of another size is refused: it holds another export's data.
    pub fn open_or_create(path: impl AsRef<Path>, size: u64) -> io::Result<Self> {
        let path = path.as_ref();
        match OpenOptions::new().read(true).write(true).create_new(true).open(path) {
            Ok(file) => {
                file.set_len(size)?;
                Ok(FileExport { file, size, read_only: false, sizes: BlockSizes::DEFAULT })
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let f = FileExport::open(path, false)?;
                if f.size != size {
                    return Err(io::Error::other(format!("holds {} bytes, the export has {size}: it is another export's data (remove it, or use another directory)", f.size)));
                }
                Ok(f)
            }
            Err(e) => Err(e),
        }
    }

    /// Replaces the advertised size constraints.
    pub fn with_block_sizes(mut self, sizes: BlockSizes) -> Self {
        self.sizes = sizes;
        self
    }
}

impl Export for FileExport {
    fn size(&self) -> u64 {
        self.size
    }

    fn block_sizes(&self) -> BlockSizes {
        self.sizes
    }

    fn read_only(&self) -> bool {
        self.read_only
    }

    /// All connections share one descriptor and the kernel page cache, and `fdatasync` covers
    /// every write made through it.
    fn multi_conn(&self) -> bool {
        true
    }

    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), ExportError> {
        Ok(self.file.read_exact_at(buf, offset)?)
    }

    fn write(&self, offset: u64, data: &[u8], fua: bool) -> Result<(), ExportError> {
        if self.read_only {
            return Err(ExportError::ReadOnly);
        }
        self.file.write_all_at(data, offset)?;
        if fua {
            self.file.sync_data()?;
        }
        Ok(())
    }

    fn write_zeroes(&self, offset: u64, len: u64, _no_hole: bool) -> Result<(), ExportError> {
        if self.read_only {
            return Err(ExportError::ReadOnly);
        }
        let mut done = 0u64;
        while done < len {
            let n = (ZEROS.len() as u64).min(len - done) as usize;
            self.file.write_all_at(&ZEROS[..n], offset + done)?;
            done += n as u64;
        }
        Ok(())
    }

    fn flush(&self) -> Result<(), ExportError> {
        if self.read_only {
            return Ok(());
        }
        Ok(self.file.sync_data()?)
    }
}
