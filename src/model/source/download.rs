//! HTTP downloads: the agent, and streaming a file to disk while hashing it.

use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use super::progress::progress_target;
use crate::error::{Error, Result};

/// An HTTP agent that trusts the platform's certificate store (corporate and sandbox
/// proxies install their CA there, not in the bundled webpki roots).
pub(super) fn agent(timeout: Duration) -> ureq::Agent {
    use ureq::tls::{RootCerts, TlsConfig};
    ureq::Agent::config_builder()
        .tls_config(
            TlsConfig::builder()
                .root_certs(RootCerts::PlatformVerifier)
                .build(),
        )
        .timeout_connect(Some(Duration::from_secs(10)))
        .timeout_global(Some(timeout))
        .build()
        .into()
}

/// What a download or an extraction wrote: its size and digests.
pub(super) struct Written {
    pub bytes: u64,
    pub sha256: String,
    pub digests: crate::model::integrity::Digests,
}

/// Copy `r` into `dest` (created), at most `limit` bytes, hashing as it goes. More than
/// `limit` bytes is an error `too_big` describes; the partial file is the caller's temp
/// directory's to remove.
pub(super) fn copy_capped(
    r: &mut dyn Read,
    dest: &Path,
    limit: u64,
    mut on_chunk: impl FnMut(usize),
    too_big: impl Fn() -> Error,
    read_err: impl Fn(std::io::Error) -> Error,
) -> Result<Written> {
    let mut file = std::fs::File::create(dest).map_err(|e| Error::io(dest, e))?;
    let mut hasher = crate::model::integrity::FileHasher::default();
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0u64;
    loop {
        let n = r.read(&mut buf).map_err(&read_err)?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > limit {
            return Err(too_big());
        }
        hasher.update(&buf[..n]);
        file.write_all(&buf[..n]).map_err(|e| Error::io(dest, e))?;
        on_chunk(n);
    }
    file.flush().map_err(|e| Error::io(dest, e))?;
    let digests = hasher.finish();
    Ok(Written {
        bytes: total,
        sha256: digests.sha256.clone(),
        digests,
    })
}

/// Download `url` into `dest` with a progress bar labelled `label`. At most `declared`
/// bytes when the source declared a size (PyPI's JSON, the hub's headers), else at most
/// the ceiling (`CODESCOPE_MAX_DOWNLOAD_MB`); an announced `Content-Length` over the
/// limit is refused before reading. A declared size not met exactly is an error.
pub(super) fn download(
    url: &str,
    dest: &Path,
    declared: Option<u64>,
    label: &str,
) -> Result<Written> {
    let ceiling = crate::model::limits::max_download_bytes()?;
    let limit = declared.unwrap_or(ceiling);
    let mut resp = agent(Duration::from_secs(3600))
        .get(url)
        .call()
        .map_err(|e| Error::Network(format!("cannot download {url}: {e}")))?;
    let too_big = || {
        Error::Network(match declared {
            Some(d) => format!("{url} sends more than the {d} bytes it was declared to have"),
            None => format!(
                "{url} sends more than {} MiB (CODESCOPE_MAX_DOWNLOAD_MB raises the ceiling)",
                ceiling >> 20
            ),
        })
    };
    if resp.body().content_length().is_some_and(|n| n > limit) {
        return Err(too_big());
    }
    let mut reader = resp.body_mut().with_config().limit(u64::MAX).reader();
    let bar = indicatif::ProgressBar::with_draw_target(declared, progress_target());
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{msg} {bar:30} {bytes}/{total_bytes} {bytes_per_sec}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.set_message(format!("downloading {label}"));
    let w = copy_capped(
        &mut reader,
        dest,
        limit,
        |n| bar.inc(n as u64),
        too_big,
        |e| Error::Network(format!("download of {url} failed: {e}")),
    );
    bar.finish_and_clear();
    let w = w?;
    if let Some(d) = declared.filter(|&d| d != w.bytes) {
        return Err(Error::Network(format!(
            "{url} sent {} bytes, {d} were declared",
            w.bytes
        )));
    }
    Ok(w)
}

/// [`download`], then check the sha256 PyPI published.
pub(super) fn download_verified(
    url: &str,
    dest: &Path,
    want_sha: &str,
    size: Option<u64>,
    package: &str,
) -> Result<()> {
    let got = download(url, dest, size, package)?.sha256;
    if got != want_sha {
        return Err(Error::Package {
            package: package.into(),
            reason: format!("sha256 mismatch: PyPI says {want_sha}, downloaded {got}"),
        });
    }
    Ok(())
}
