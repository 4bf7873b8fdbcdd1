//! What the server serves: the [`Export`] trait (one block device), the [`Exports`] trait (name
//! lookup during option haggling) and [`ExportMap`], a ready-made [`Exports`].
//!
//! The server validates every request against proto.md "Size constraints" (range, alignment,
//! payload size) and the read-only policy before calling an [`Export`] method, so implementations
//! only see in-range, aligned requests and can concentrate on storage.

use std::io;
use std::sync::Arc;

use crate::proto::{BlockSizes, Errno};

/// Zero source for write-zeroes implementations; static so no request allocates one.
pub(crate) static ZEROS: [u8; 64 * 1024] = [0u8; 64 * 1024];

/// Why an [`Export`] operation failed; the server turns it into an NBD error value.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The backing store failed (`NBD_EIO`, or `NBD_ENOSPC` for ENOSPC/EDQUOT/EFBIG, which
    /// proto.md "Error values" asks servers to map that way).
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),
    /// The store is full (`NBD_ENOSPC`).
    #[error("no space left on the export")]
    NoSpace,
    /// The export refuses this particular request (`NBD_EINVAL`).
    #[error("invalid request: {0}")]
    Invalid(String),
    /// The export is (now) read-only (`NBD_EPERM`).
    #[error("export is read-only")]
    ReadOnly,
    /// Any other failure (`NBD_EIO`), with a message for the client.
    #[error("{0}")]
    Failed(String),
}

impl ExportError {
    /// The NBD error value sent to the client.
    pub fn errno(&self) -> Errno {
        match self {
            ExportError::Io(e) => match e.raw_os_error() {
                // ENOSPC, EDQUOT, EFBIG on Linux.
                Some(28) | Some(122) | Some(27) => Errno::NoSpc,
                _ => Errno::Io,
            },
            ExportError::NoSpace => Errno::NoSpc,
            ExportError::Invalid(_) => Errno::Inval,
            ExportError::ReadOnly => Errno::Perm,
            ExportError::Failed(_) => Errno::Io,
        }
    }
}

/// One block device served over NBD.
///
/// The server calls these methods from one thread per connection, concurrently when several
/// connections use the same export, hence `Send + Sync` and `&self`. Before calling, the server
/// has checked that `offset .. offset + len` lies within [`Export::size`], is aligned to
/// [`BlockSizes::min`], and (for reads and writes) is no longer than [`BlockSizes::max`]; and
/// that the export is writable for `write`/`trim`/`write_zeroes`.
pub trait Export: Send + Sync {
    /// Size in bytes; fixed for the life of a connection (it is sent once during the handshake).
    fn size(&self) -> u64;

    /// Advertised size constraints (`NBD_INFO_BLOCK_SIZE`), also enforced by the server.
    /// `max` may be lowered further by [`crate::Config::max_request`].
    fn block_sizes(&self) -> BlockSizes {
        BlockSizes::DEFAULT
    }

    /// Whether the export refuses writes (`NBD_FLAG_READ_ONLY`).
    fn read_only(&self) -> bool {
        false
    }

    /// Whether flush and FUA on one connection make data durable and visible for all connections
    /// (`NBD_FLAG_CAN_MULTI_CONN`). Only say yes if there is no per-connection cache; the default
    /// is the conservative no.
    fn multi_conn(&self) -> bool {
        false
    }

    /// Fills `buf` with the bytes at `offset`.
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), ExportError>;

    /// Stores `data` at `offset`. With `fua`, return only once it is durable.
    fn write(&self, offset: u64, data: &[u8], fua: bool) -> Result<(), ExportError>;

    /// The client no longer needs `len` bytes at `offset`. A hint: doing nothing is correct,
    /// since clients must not assume anything about trimmed contents.
    fn trim(&self, offset: u64, len: u64) -> Result<(), ExportError> {
        let _ = (offset, len);
        Ok(())
    }

    /// Makes `len` bytes at `offset` read back as zero. Without `no_hole` the export may
    /// deallocate (it must still read as zeroes); with it, the space must stay provisioned.
    /// The default writes real zeroes through [`Export::write`], which satisfies both.
    fn write_zeroes(&self, offset: u64, len: u64, no_hole: bool) -> Result<(), ExportError> {
        let _ = no_hole;
        let mut done = 0u64;
        while done < len {
            let n = (ZEROS.len() as u64).min(len - done) as usize;
            self.write(offset + done, &ZEROS[..n], false)?;
            done += n as u64;
        }
        Ok(())
    }

    /// Makes every write already acknowledged durable.
    fn flush(&self) -> Result<(), ExportError> {
        Ok(())
    }
}

/// The name → export lookup used during option haggling.
///
/// The embedding code decides what names mean: [`Exports::resolve`] may return a fixed export,
/// build one on the fly (e.g. `"ssd@2"` for namespace 2 of a simulated drive) or refuse.
pub trait Exports: Send + Sync {
    /// The export a client asking for `name` gets; `""` asks for the default export.
    /// `None` makes `NBD_OPT_INFO`/`NBD_OPT_GO` fail with `NBD_REP_ERR_UNKNOWN` (and ends a
    /// session that used `NBD_OPT_EXPORT_NAME`, which cannot report errors).
    fn resolve(&self, name: &str) -> Option<Arc<dyn Export>>;

    /// `(name, description)` pairs for `NBD_OPT_LIST`; need not include every resolvable name.
    fn list(&self) -> Vec<(String, String)>;

    /// Canonical name and description of what `name` resolves to, for `NBD_INFO_NAME` and
    /// `NBD_INFO_DESCRIPTION`. The default uses [`Exports::list`]: `""` means its first entry, a
    /// listed name its own entry, anything else itself with no description.
    fn describe(&self, name: &str) -> (String, String) {
        let list = self.list();
        let hit = if name.is_empty() { list.into_iter().next() } else { list.into_iter().find(|(n, _)| n == name) };
        hit.unwrap_or_else(|| (name.to_owned(), String::new()))
    }
}

impl<T: Exports + ?Sized> Exports for Arc<T> {
    fn resolve(&self, name: &str) -> Option<Arc<dyn Export>> {
        (**self).resolve(name)
    }
    fn list(&self) -> Vec<(String, String)> {
        (**self).list()
    }
    fn describe(&self, name: &str) -> (String, String) {
        (**self).describe(name)
    }
}

/// Resolver callback for names that are not in an [`ExportMap`].
pub type Resolver = dyn Fn(&str) -> Option<Arc<dyn Export>> + Send + Sync;

/// A fixed, ordered set of named exports plus an optional resolver for other names.
///
/// The empty name selects the first export added (proto.md reserves it for a "default" export).
#[derive(Default)]
pub struct ExportMap {
    entries: Vec<(String, String, Arc<dyn Export>)>,
    resolver: Option<Box<Resolver>>,
}

impl ExportMap {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an export; a later entry with the same name replaces the earlier one in place.
    pub fn with(mut self, name: impl Into<String>, description: impl Into<String>, export: Arc<dyn Export>) -> Self {
        self.insert(name, description, export);
        self
    }

    /// Adds an export (see [`ExportMap::with`]).
    pub fn insert(&mut self, name: impl Into<String>, description: impl Into<String>, export: Arc<dyn Export>) {
        let (name, description) = (name.into(), description.into());
        match self.entries.iter_mut().find(|(n, _, _)| *n == name) {
            Some(e) => *e = (name, description, export),
            None => self.entries.push((name, description, export)),
        }
    }

    /// Consults `resolver` for any name that is neither listed nor empty.
    pub fn with_resolver(mut self, resolver: impl Fn(&str) -> Option<Arc<dyn Export>> + Send + Sync + 'static) -> Self {
        self.resolver = Some(Box::new(resolver));
        self
    }
}

impl std::fmt::Debug for ExportMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExportMap")
            .field("names", &self.entries.iter().map(|(n, _, _)| n.as_str()).collect::<Vec<_>>())
            .field("resolver", &self.resolver.is_some())
            .finish()
    }
}

impl Exports for ExportMap {
    fn resolve(&self, name: &str) -> Option<Arc<dyn Export>> {
        if name.is_empty() {
            if let Some((_, _, e)) = self.entries.first() {
                return Some(e.clone());
            }
        }
        if let Some((_, _, e)) = self.entries.iter().find(|(n, _, _)| n == name) {
            return Some(e.clone());
        }
        self.resolver.as_ref().and_then(|r| r(name))
    }

    fn list(&self) -> Vec<(String, String)> {
        self.entries.iter().map(|(n, d, _)| (n.clone(), d.clone())).collect()
    }
}
