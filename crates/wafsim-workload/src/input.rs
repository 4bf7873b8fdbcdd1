//! Reading the files a user names (experiments, fio job files and their includes, traces) as
//! untrusted input: only regular files (a FIFO would block the run forever, `/dev/zero` never
//! ends, a directory is no text), text of bounded size and lines of bounded length (one endless
//! line must end in an error, not in an allocation failure), and errors that quote a line only
//! as a short escaped prefix (an experiment may name any readable file, e.g. `include
//! /etc/shadow`; its content must not end up on the terminal or in a log).

use std::fs::File;
use std::io::{self, BufRead, Read};
use std::path::Path;

/// Largest experiment or job file read whole (a real one is a few KiB).
pub const MAX_TEXT_BYTES: u64 = 16 << 20;

/// Longest line of a trace or job file (a trace record is under 200 bytes).
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// Most characters of an input line an error message quotes.
pub const QUOTE_CHARS: usize = 80;

/// Refuse anything but a regular file (symlinks are followed): FIFOs, devices, sockets and
/// directories, with what the path is.
pub fn check_regular(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let t = std::fs::metadata(path)?.file_type();
    let what = if t.is_file() {
        return Ok(());
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a named pipe (FIFO)"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    };
    Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{what}, not a regular file (wafsim reads its inputs from regular files only)")))
}

/// Open a regular file for reading (see [`check_regular`]).
pub fn open_regular(path: &Path) -> io::Result<File> {
    check_regular(path)?;
    File::open(path)
}

/// The whole text of a regular file of at most [`MAX_TEXT_BYTES`].
pub fn read_text(path: &Path) -> io::Result<String> {
    let f = open_regular(path)?;
    let len = f.metadata()?.len();
    if len > MAX_TEXT_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{len} bytes, more than the {} MiB an experiment or job file may have", MAX_TEXT_BYTES >> 20),
        ));
    }
    let mut s = String::new();
    f.take(MAX_TEXT_BYTES + 1).read_to_string(&mut s).map_err(|e| match e.kind() {
        io::ErrorKind::InvalidData => io::Error::new(io::ErrorKind::InvalidData, "not text (not valid UTF-8)"),
        _ => e,
    })?;
    Ok(s)
}

/// The error of a line longer than [`MAX_LINE_BYTES`].
pub fn line_too_long() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("a line longer than {} MiB (not a text file of lines, e.g. binary data or a device)", MAX_LINE_BYTES >> 20),
    )
}

/// Append the next line (with its `\n`) to `buf`, at most [`MAX_LINE_BYTES`] of it: 0 at the
/// end of the input, an error for a longer line. Invalid UTF-8 is replaced (lossy).
pub fn read_line_bounded<R: BufRead>(input: &mut R, buf: &mut String) -> io::Result<usize> {
    let mut bytes = Vec::new();
    let n = input.by_ref().take(MAX_LINE_BYTES as u64 + 1).read_until(b'\n', &mut bytes)?;
    if n > MAX_LINE_BYTES && bytes.last() != Some(&b'\n') {
        return Err(line_too_long());
    }
    match String::from_utf8(bytes) {
        Ok(s) => buf.push_str(&s),
        Err(e) => buf.push_str(&String::from_utf8_lossy(e.as_bytes())),
    }
    Ok(n)
}

/// `s` for an error message: in double quotes, at most [`QUOTE_CHARS`] characters (then
/// "..."), control and other non-printable characters escaped (`\u{1b}`, `\t`).
///
/// ```
/// use wafsim_workload::input::quote;
/// assert_eq!(quote("bs=4k"), "\"bs=4k\"");
/// assert_eq!(quote("a\u{1b}[2Jb"), "\"a\\u{1b}[2Jb\"");
/// assert_eq!(quote(&"x".repeat(100)), format!("\"{}...\"", "x".repeat(80)));
/// ```
pub fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for (n, c) in s.chars().enumerate() {
        if n == QUOTE_CHARS {
            out.push_str("...");
            break;
        }
        if c == '"' || c == '\\' || c.is_control() || c == '\u{feff}' {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_regular_files_are_refused() {
        let e = read_text(Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(e.contains("character device"), "{e}");
        let e = read_text(Path::new("/")).unwrap_err().to_string();
        assert!(e.contains("directory"), "{e}");
    }

    #[test]
    fn an_endless_line_is_an_error() {
        let mut r = io::BufReader::new(io::repeat(b'a'));
        let mut s = String::new();
        assert!(read_line_bounded(&mut r, &mut s).unwrap_err().to_string().contains("longer than"));
        let mut r = io::BufReader::new(&b"ab\ncd"[..]);
        assert_eq!(read_line_bounded(&mut r, &mut s).unwrap(), 3);
        assert_eq!(read_line_bounded(&mut r, &mut s).unwrap(), 2);
        assert_eq!(read_line_bounded(&mut r, &mut s).unwrap(), 0);
        assert_eq!(s, "ab\ncd");
    }
}
