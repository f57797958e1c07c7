//! The dequantized-GGUF cache (issue #18) through the binary, on a tiny GGUF that holds
//! both weights (the tiny Llama fixture) and a SentencePiece tokenizer (the tokenizer
//! fixture's, cut to the model's 300 ids): the first open writes the entry (the weights,
//! keyed by the GGUF's sha256; the tokenizer is always rebuilt), the second reads it and gives the
//! same trace; a damaged entry is discarded and rebuilt; a changed GGUF misses; `models`
//! lists entries, `cache verify` checks them, `cache clean` removes them;
//! `CODESCOPE_GGUF_CACHE=0` writes nothing, unset (the default) caches this small model,
//! any other value is refused.

use std::path::{Path, PathBuf};

use codescope::model::gguf::reader::{ggml_type_id, read_header, write};
use codescope::model::gguf::{Array, Value};
use sha2::{Digest, Sha256};

use crate::cli_sources::{ok, Env};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The tiny Llama's weights and metadata plus the SentencePiece fixture's tokenizer
/// metadata, its arrays cut to 300 entries.
fn model_gguf() -> Vec<u8> {
    let wbytes = std::fs::read(fixtures().join("tiny_gguf/llama.gguf")).unwrap();
    let w = read_header(&wbytes[..], wbytes.len() as u64, 1 << 30).unwrap();
    let tbytes = std::fs::read(fixtures().join("gguf_tok_spm.gguf")).unwrap();
    let t = read_header(&tbytes[..], tbytes.len() as u64, 1 << 30).unwrap();
    let mut meta: Vec<(String, Value)> = w
        .metadata
        .iter()
        .filter(|(k, _)| !k.starts_with("tokenizer."))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (k, v) in &t.metadata {
        if !k.starts_with("tokenizer.") {
            continue;
        }
        let v = match v {
            Value::Array(Array::String(a)) => Value::Array(Array::String(a[..300].to_vec())),
            Value::Array(Array::F32(a)) => Value::Array(Array::F32(a[..300].to_vec())),
            Value::Array(Array::I32(a)) => Value::Array(Array::I32(a[..300].to_vec())),
            v => v.clone(),
        };
        meta.push((k.clone(), v));
    }
    meta.sort_by(|a, b| a.0.cmp(&b.0));
    let tensors: Vec<write::RawTensor> = w
        .tensors
        .iter()
        .map(|e| {
            let start = (w.data_offset + e.offset) as usize;
            write::RawTensor {
                name: e.name.clone(),
                ggml_type: ggml_type_id(e.dtype),
                ne: e.dims.iter().rev().map(|&d| d as u64).collect(),
                data: wbytes[start..start + e.bytes as usize].to_vec(),
            }
        })
        .collect();
    let meta: Vec<(&str, Value)> = meta.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    write::gguf(&meta, &tensors)
}

/// Lines of the log written since `from` bytes.
/// The CLI with the (opt-in) dequantized-weight cache on.
fn cache_cmd(env: &Env) -> std::process::Command {
    let mut c = env.cmd();
    // The dequantized-weight cache serves the f32 path (`--weights f32`); the default
    // native path keeps the file's quantized weights and needs no cache.
    c.env("CODESCOPE_GGUF_CACHE", "1")
        .env("CODESCOPE_WEIGHTS", "f32");
    c
}

fn log_since(env: &Env, from: usize) -> String {
    let l = std::fs::read_to_string(env.root.join("log.txt")).unwrap_or_default();
    l.get(from..).unwrap_or("").to_string()
}

fn log_len(env: &Env) -> usize {
    std::fs::read(env.root.join("log.txt")).map_or(0, |l| l.len())
}

/// The trace JSON (it holds no timing).
fn trace(env: &Env, model: &Path) -> serde_json::Value {
    let out = ok(&cache_cmd(env)
        .args(["trace", "--json", "--surprisal", "--model"])
        .arg(model)
        .arg(env.sample())
        .output()
        .unwrap());
    serde_json::from_str(&out).unwrap()
}

#[test]
fn second_open_reads_the_cache_and_agrees() {
    let env = Env::new();
    let dir = env.root.join("m");
    std::fs::create_dir_all(&dir).unwrap();
    let gguf = dir.join("model.gguf");
    let bytes = model_gguf();
    std::fs::write(&gguf, &bytes).unwrap();
    let key = format!("{:x}", Sha256::digest(&bytes));
    let entry = env.root.join("cache/gguf-f32").join(&key);

    let at = log_len(&env);
    let first = trace(&env, &gguf);
    let log = log_since(&env, at);
    assert!(log.contains("GGUF dequantized and hashed"), "{log}");
    for f in ["weights.safetensors", "source.json"] {
        assert!(entry.join(f).is_file(), "{f} in {}", entry.display());
    }
    let at = log_len(&env);
    let second = trace(&env, &gguf);
    let log = log_since(&env, at);
    assert!(log.contains("dequantized weights from the cache"), "{log}");
    // The binary's allocator is installed: the weights are views of the mapped file.
    assert!(log.contains("served=Mapped"), "{log}");
    assert_eq!(first, second, "cached model gives another trace");

    let out = ok(&cache_cmd(&env).arg("models").output().unwrap());
    assert!(
        out.contains("Dequantized GGUF weights") && out.contains(&key),
        "{out}"
    );
    let out = ok(&cache_cmd(&env).args(["cache", "verify"]).output().unwrap());
    assert!(out.contains("ok") && out.contains("dequantized"), "{out}");

    // A damaged entry (rewritten: its mtime changes) is discarded and rebuilt.
    let w = entry.join("weights.safetensors");
    let mut b = std::fs::read(&w).unwrap();
    let n = b.len();
    b[n - 8] ^= 1;
    std::fs::write(&w, b).unwrap();
    let at = log_len(&env);
    assert_eq!(trace(&env, &gguf), first);
    let log = log_since(&env, at);
    assert!(
        log.contains("discarding the dequantized-weight cache entry"),
        "{log}"
    );
    assert!(log.contains("GGUF dequantized and hashed"), "{log}");
    let at = log_len(&env);
    assert_eq!(trace(&env, &gguf), first);
    assert!(log_since(&env, at).contains("from the cache"));

    // Damaged in place with its timestamp kept: the quick check passes, the background
    // digest catches it; the command fails saying so, and the entry is removed (rebuilt
    // on the next open, which then succeeds).
    let mut b = std::fs::read(&w).unwrap();
    let mtime = std::fs::metadata(&w).unwrap().modified().unwrap();
    let n = b.len();
    b[n - 8] ^= 1;
    std::fs::write(&w, b).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&w)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let out = cache_cmd(&env)
        .args(["trace", "--json", "--model"])
        .arg(&gguf)
        .arg(env.sample())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("removed; it is rebuilt on the next open"),
        "{err}"
    );
    // (Removed while this command ran: with a model this small the digest can finish
    // before the weights are read, and the entry is then rebuilt at once.)
    assert_eq!(trace(&env, &gguf), first);
    assert!(entry.join("weights.safetensors").is_file());

    // A GGUF rewritten since (new mtime) is not served from the old entry.
    std::fs::write(&gguf, &bytes).unwrap();
    let at = log_len(&env);
    assert_eq!(trace(&env, &gguf), first);
    assert!(log_since(&env, at).contains("GGUF dequantized and hashed"));

    let out = ok(&cache_cmd(&env).args(["cache", "clean"]).output().unwrap());
    assert!(out.contains("removed 1 dequantized GGUF cache(s)"), "{out}");
    assert!(!entry.exists());
    let out = ok(&cache_cmd(&env).args(["cache", "verify"]).output().unwrap());
    assert!(!out.contains("dequantized"), "{out}");

    // Off: nothing written.
    let out = ok(&env
        .cmd()
        .env("CODESCOPE_GGUF_CACHE", "0")
        .args(["trace", "--model"])
        .arg(&gguf)
        .arg(env.sample())
        .output()
        .unwrap());
    assert!(out.contains("layers"), "{out}");
    assert!(!entry.exists());

    // Unset (the default): a model this small is cached, and read back from the map
    // (on the f32 path, the one the cache serves).
    let plain = |env: &Env| {
        ok(&env
            .cmd()
            .env("CODESCOPE_WEIGHTS", "f32")
            .args(["trace", "--json", "--model"])
            .arg(&gguf)
            .arg(env.sample())
            .output()
            .unwrap())
    };
    let first = plain(&env);
    assert!(entry.join("weights.safetensors").is_file());
    let at = log_len(&env);
    assert_eq!(plain(&env), first);
    assert!(log_since(&env, at).contains("served=Mapped"));

    // Any other value: an error naming the setting.
    let out = env
        .cmd()
        .env("CODESCOPE_GGUF_CACHE", "yes")
        .args(["trace", "--model"])
        .arg(&gguf)
        .arg(env.sample())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("CODESCOPE_GGUF_CACHE must be 0"), "{err}");
}
