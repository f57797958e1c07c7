//! Reading the user's input file (or stdin) safely.
//!
//! Inputs must be non-empty UTF-8 text under a size limit; binary files (NUL bytes) and
//! other encodings are refused with a message that says what is wrong and where, rather
//! than being decoded lossily behind the user's back.
//!
//! Every read is bounded: at most [`MAX_INPUT_BYTES`] + 1 bytes are read, whatever the
//! file claims to be (`/dev/zero`, `/dev/urandom` and FIFOs report a size of 0), so an
//! endless source costs one megabyte before it is refused. The command line and the
//! explorer's open prompt both read through [`read`].

use std::io::Read;
use std::path::Path;

use crate::error::{Error, Result};

/// Largest input accepted, in bytes (the syntax layer's limit too).
pub const MAX_INPUT_BYTES: usize = crate::syntax::MAX_SOURCE_BYTES;

/// An input text and the name to show for it.
#[derive(Debug, Clone)]
pub struct Input {
    pub name: String,
    pub text: String,
}

/// Read `arg` (`-` = stdin) as UTF-8 text.
pub fn read(arg: &str) -> Result<Input> {
    let (name, bytes) = if arg == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .take(MAX_INPUT_BYTES as u64 + 1)
            .read_to_end(&mut buf)
            .map_err(|e| Error::io("<stdin>", e))?;
        ("<stdin>".to_string(), buf)
    } else {
        let p = Path::new(arg);
        let meta = std::fs::metadata(p).map_err(|e| Error::io(p, e))?;
        if meta.is_dir() {
            return Err(Error::Input {
                name: arg.into(),
                reason: "is a directory, expected a source file".into(),
            });
        }
        // A regular file's size is known: refuse before reading. Devices and FIFOs
        // report 0 and are read up to the limit.
        if meta.is_file() && meta.len() > MAX_INPUT_BYTES as u64 {
            return Err(too_large(arg, Some(meta.len())));
        }
        let mut buf = Vec::new();
        std::fs::File::open(p)
            .and_then(|f| f.take(MAX_INPUT_BYTES as u64 + 1).read_to_end(&mut buf))
            .map_err(|e| Error::io(p, e))?;
        (arg.to_string(), buf)
    };
    from_bytes(name, bytes)
}

/// The size error; `size` is `None` when only "more than the limit" is known (a stream
/// read up to the limit).
fn too_large(name: &str, size: Option<u64>) -> Error {
    let size = match size {
        Some(s) => format!("{s} bytes"),
        None => "more than that".into(),
    };
    Error::Input {
        name: name.into(),
        reason: format!(
            "is over the {MAX_INPUT_BYTES}-byte limit ({size}); pass a single function or class"
        ),
    }
}

/// Validate raw bytes as an input text.
pub fn from_bytes(name: String, bytes: Vec<u8>) -> Result<Input> {
    if bytes.len() > MAX_INPUT_BYTES {
        // Reads stop one byte past the limit, so the true size is unknown here.
        return Err(too_large(&name, None));
    }
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(Error::Input {
            name,
            reason: "is empty".into(),
        });
    }
    if let Some(pos) = bytes.iter().position(|&b| b == 0) {
        return Err(Error::Input {
            name,
            reason: format!("looks binary (NUL byte at offset {pos}), expected source text"),
        });
    }
    let text = String::from_utf8(bytes).map_err(|e| Error::Input {
        name: name.clone(),
        reason: format!(
            "is not UTF-8 text (invalid byte at offset {}); convert it first, e.g. with iconv",
            e.utf8_error().valid_up_to()
        ),
    })?;
    // The memory plan of the model loaded next is made for this input.
    crate::model::plan::set_input_bytes(text.len());
    Ok(Input { name, text })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_bad_bytes() {
        let e = from_bytes("f".into(), b"  \n\t".to_vec())
            .unwrap_err()
            .to_string();
        assert!(e.contains("is empty"), "{e}");
        let e = from_bytes("f".into(), b"ab\0cd".to_vec())
            .unwrap_err()
            .to_string();
        assert!(e.contains("NUL byte at offset 2"), "{e}");
        let e = from_bytes("f".into(), b"ok \xff\xfe".to_vec())
            .unwrap_err()
            .to_string();
        assert!(e.contains("not UTF-8") && e.contains("offset 3"), "{e}");
        let big = vec![b'a'; MAX_INPUT_BYTES + 1];
        assert!(from_bytes("f".into(), big)
            .unwrap_err()
            .to_string()
            .contains("limit"));
        let ok = from_bytes("f".into(), "x = 'é'\n".as_bytes().to_vec()).unwrap();
        assert_eq!(ok.text, "x = 'é'\n");
    }
}
