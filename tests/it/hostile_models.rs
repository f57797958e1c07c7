//! Issue #16, the model-file items: hostile GGUF, pickle and safetensors files and
//! configs, each built here from the tiny fixtures, must give one clear line (exit 1,
//! no panic) with bounded memory: GGUF `general.alignment = 0`, `block_count = 10^9`
//! and 0, a 10M-element metadata array (memory ~1x its size), metadata over the cap,
//! layouts llama.cpp refuses (quantized tensor relabelled F32, unaligned offset,
//! duplicated tensor); a pickle memo bomb and a tensor larger than its storage;
//! safetensors ranges that do not match their shapes or overlap; 0-layer models; NaN /
//! infinite weights and activations and a negative norm epsilon, named.

use std::path::{Path, PathBuf};

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use codescope::model::gguf::reader::{ggml_type_id, write, Header};
use codescope::model::gguf::{Array, GgufFile, Value};
use codescope::model::testutil::{write_tiny_model, Tiny};

use crate::cli_sources::{fails, Env};
use crate::hostile_inputs::run_measured;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A GGUF file taken apart: metadata and tensors, to doctor and write back.
pub(crate) struct Gguf {
    meta: Vec<(String, Value)>,
    pub(crate) tensors: Vec<write::RawTensor>,
}

impl Gguf {
    pub(crate) fn fixture(name: &str) -> Gguf {
        let path = fixtures().join("tiny_gguf").join(format!("{name}.gguf"));
        let f = GgufFile::open(&path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let h: &Header = &f.header;
        let mut meta: Vec<(String, Value)> = h
            .metadata
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        meta.sort_by(|a, b| a.0.cmp(&b.0));
        let tensors = h
            .tensors
            .iter()
            .map(|t| {
                let start = (h.data_offset + t.offset) as usize;
                write::RawTensor {
                    name: t.name.clone(),
                    ggml_type: ggml_type_id(t.dtype),
                    ne: t.dims.iter().rev().map(|&d| d as u64).collect(),
                    data: bytes[start..start + t.bytes as usize].to_vec(),
                }
            })
            .collect();
        Gguf { meta, tensors }
    }

    pub(crate) fn set(&mut self, key: &str, v: Value) {
        self.meta.retain(|(k, _)| k != key);
        self.meta.push((key.to_string(), v));
    }

    pub(crate) fn tensor(&mut self, name: &str) -> &mut write::RawTensor {
        self.tensors.iter_mut().find(|t| t.name == name).unwrap()
    }

    fn bytes(&self) -> Vec<u8> {
        let meta: Vec<(&str, Value)> = self
            .meta
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect();
        write::gguf(&meta, &self.tensors)
    }

    /// Write as `dir/model.gguf` with the fixture's tokenizer beside it.
    pub(crate) fn save(&self, dir: &Path) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::copy(
            fixtures().join("tiny_llama/tokenizer.json"),
            dir.join("tokenizer.json"),
        )
        .unwrap();
        let p = dir.join("model.gguf");
        std::fs::write(&p, self.bytes()).unwrap();
        p
    }
}

/// Load through the library; the one-line error.
fn gguf_error(g: &Gguf, dir: &Path) -> String {
    let p = g.save(dir);
    let e = match codescope::model::load_gguf_backbone(&p) {
        Ok(_) => panic!("{} loaded", p.display()),
        Err(e) => e.to_string(),
    };
    assert_eq!(e.lines().count(), 1, "{e}");
    e
}

/// `f32` values as little-endian bytes.
fn f32_bytes(v: impl IntoIterator<Item = f32>) -> Vec<u8> {
    v.into_iter().flat_map(f32::to_le_bytes).collect()
}

#[test]
fn gguf_header_attacks_are_one_line_errors() {
    let d = tempfile::tempdir().unwrap();
    let mut n = 0;
    let mut case = |doctor: &dyn Fn(&mut Gguf), want: &str| {
        let mut g = Gguf::fixture("llama");
        doctor(&mut g);
        n += 1;
        let e = gguf_error(&g, &d.path().join(n.to_string()));
        assert!(e.contains(want), "want {want:?}: {e}");
    };
    case(
        &|g| g.set("general.alignment", Value::U32(0)),
        "general.alignment 0 is not a power of two",
    );
    case(
        &|g| g.set("llama.block_count", Value::U32(1_000_000_000)),
        "more than the 1024 layers",
    );
    case(
        &|g| g.set("llama.block_count", Value::U32(0)),
        "a model needs at least one layer",
    );
    case(
        &|g| g.set("llama.block_count", Value::U32(1)),
        "holds tensors for layer 1",
    );
    case(
        &|g| g.set("llama.attention.layer_norm_rms_epsilon", Value::F32(-1e-5)),
        "rms_norm_eps is -0.0000",
    );
}

/// Rewrite the tensor-directory entry of `name` in a written GGUF (type and offset).
fn patch_entry(bytes: &mut [u8], name: &str, ggml_type: Option<u32>, offset_delta: i64) {
    let mut key = (name.len() as u64).to_le_bytes().to_vec();
    key.extend(name.as_bytes());
    let at = bytes
        .windows(key.len())
        .rposition(|w| w == key)
        .expect("entry")
        + key.len();
    let n_dims = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    let ty = at + 4 + 8 * n_dims;
    if let Some(t) = ggml_type {
        bytes[ty..ty + 4].copy_from_slice(&t.to_le_bytes());
    }
    let off = ty + 4;
    let v = u64::from_le_bytes(bytes[off..off + 8].try_into().unwrap());
    bytes[off..off + 8].copy_from_slice(&((v as i64 + offset_delta) as u64).to_le_bytes());
}

#[test]
fn gguf_layouts_llama_cpp_refuses_are_refused() {
    let d = tempfile::tempdir().unwrap();
    // The embedding quantized to Q8_0 (rows of 32 = one block): a valid file first.
    let mut g = Gguf::fixture("llama");
    let emb = g.tensor("token_embd.weight");
    let values: Vec<f32> = emb
        .data
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let t = Tensor::from_vec(values, (300, 32), &Device::Cpu).unwrap();
    let q = QTensor::quantize(&t, GgmlDType::Q8_0).unwrap();
    emb.data = q.data().unwrap().to_vec();
    emb.ggml_type = ggml_type_id(GgmlDType::Q8_0);
    let ok = g.save(&d.path().join("q8"));
    codescope::model::load_gguf_backbone(&ok).expect("the Q8_0 file loads");
    let good = std::fs::read(&ok).unwrap();
    let try_load = |bytes: &[u8], tag: &str| -> String {
        let p = d.path().join(format!("{tag}.gguf"));
        std::fs::write(&p, bytes).unwrap();
        let e = codescope::model::load_gguf_backbone(&p)
            .err()
            .unwrap_or_else(|| panic!("{tag} loaded"))
            .to_string();
        assert_eq!(e.lines().count(), 1, "{e}");
        e
    };
    // The quantized tensor relabelled F32: it would need 4x the bytes, so the next
    // tensor is not where its offset says.
    let mut b = good.clone();
    patch_entry(&mut b, "token_embd.weight", Some(0), 0);
    let e = try_load(&b, "relabelled");
    assert!(e.contains("llama.cpp refuses this layout"), "{e}");
    // An unaligned offset.
    let mut b = good.clone();
    let last = g.tensors.last().unwrap().name.clone();
    patch_entry(&mut b, &last, None, 1);
    let e = try_load(&b, "unaligned");
    assert!(e.contains("llama.cpp refuses this layout"), "{e}");
    // A duplicated tensor: the second entry renamed to the first's name.
    let mut g2 = Gguf::fixture("llama");
    let first = g2.tensors[0].name.clone();
    let second = g2.tensors[1].name.clone();
    if g2.tensors[1].ne == g2.tensors[0].ne {
        g2.tensors[1].name = first.clone();
    } else {
        g2.tensors[1] = write::RawTensor {
            name: first.clone(),
            ggml_type: g2.tensors[0].ggml_type,
            ne: g2.tensors[0].ne.clone(),
            data: g2.tensors[0].data.clone(),
        };
    }
    let e = try_load(&g2.bytes(), "duplicate");
    assert!(
        e.contains(&format!("duplicate tensor name '{first}'")),
        "{e} ({second})"
    );
}

#[test]
fn gguf_metadata_memory_is_bounded() {
    let env = Env::new();
    let sample = env.sample();
    // A 10M-element u8 array: 10 MB on disk, ~10 MB in memory (candle's reader: 320 MB).
    let mut g = Gguf::fixture("llama");
    g.set("junk.bytes", Value::Array(Array::U8(vec![7; 10_000_000])));
    let p = g.save(&env.root.join("big"));
    let mut c = env.cmd();
    c.args(["trace", "--model"]).arg(&p).arg(&sample);
    let (o, mib) = run_measured(c, &env.root.join("log.txt"));
    eprintln!("peak RSS {mib} MiB");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The file is mapped (10 MB) and the array kept once (10 MB).
    assert!(mib < 80, "peak RSS {mib} MiB");
    // Over the cap (lowered to 1 MiB): refused by name, before the tensors.
    let mut c = env.cmd();
    c.env("CODESCOPE_MAX_METADATA_MB", "1")
        .args(["trace", "--model"])
        .arg(&p)
        .arg(&sample);
    let (o, _) = run_measured(c, &env.root.join("log.txt"));
    let line = fails(&o);
    assert!(
        line.contains("more than 1 MiB in memory") && line.contains("CODESCOPE_MAX_METADATA_MB"),
        "{line}"
    );
    // block_count = 10^9 through the binary: refused, memory stays small.
    let mut g = Gguf::fixture("llama");
    g.set("llama.block_count", Value::U32(1_000_000_000));
    let p = g.save(&env.root.join("layers"));
    let mut c = env.cmd();
    c.args(["trace", "--model"]).arg(&p).arg(&sample);
    let (o, mib) = run_measured(c, &env.root.join("log.txt"));
    eprintln!("peak RSS {mib} MiB");
    let line = fails(&o);
    assert!(line.contains("1024 layers"), "{line}");
    assert!(mib < 64, "peak RSS {mib} MiB");
}

#[test]
fn non_finite_gguf_weights_and_activations_are_named() {
    let d = tempfile::tempdir().unwrap();
    let mut g = Gguf::fixture("llama");
    let t = g.tensor("blk.1.attn_q.weight");
    let n = t.data.len() / 4;
    t.data = f32_bytes((0..n).map(|i| if i == 5 { f32::NAN } else { 0.01 }));
    let e = gguf_error(&g, d.path());
    assert!(
        e.contains("model.layers.1.self_attn.q_proj.weight holds 1 non-finite values"),
        "{e}"
    );
    // Finite weights that overflow: layer 1's down projection of 1e38s.
    let mut g = Gguf::fixture("llama");
    let t = g.tensor("blk.0.ffn_down.weight");
    let n = t.data.len() / 4;
    t.data = f32_bytes((0..n).map(|_| 1e38));
    let p = g.save(&d.path().join("overflow"));
    let (m, _, _) = codescope::model::load_gguf_backbone(&p).unwrap();
    let e = m
        .forward(&[1, 2, 3, 4], &Default::default())
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("layer 1:") && e.contains("NaN or infinite"),
        "{e}"
    );
}

/// A zip entry list as torch.save writes it (stored, `archive/` prefix).
fn torch_zip(entries: &[(&str, Vec<u8>)]) -> Vec<u8> {
    use std::io::Write;
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut z = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        for (name, bytes) in entries {
            z.start_file(*name, opts).unwrap();
            z.write_all(bytes).unwrap();
        }
        z.finish().unwrap();
    }
    buf.into_inner()
}

fn x(s: &str) -> Vec<u8> {
    let mut v = vec![b'X'];
    v.extend((s.len() as u32).to_le_bytes());
    v.extend(s.as_bytes());
    v
}

fn j(i: i32) -> Vec<u8> {
    let mut v = vec![b'J'];
    v.extend(i.to_le_bytes());
    v
}

/// A tiny model directory whose weights are `pytorch_model.bin` holding `pickle`.
fn pth_model(dir: &Path, pickle: Vec<u8>, storage: Vec<u8>) {
    write_tiny_model(dir, &Tiny::default()).unwrap();
    std::fs::remove_file(dir.join("model.safetensors")).unwrap();
    let zip = torch_zip(&[("archive/data.pkl", pickle), ("archive/data/0", storage)]);
    std::fs::write(dir.join("pytorch_model.bin"), zip).unwrap();
}

#[test]
fn pickle_attacks_are_bounded_one_line_errors() {
    let env = Env::new();
    // The memo bomb: t_{i+1} = (t_i, t_i), 40 levels (2^40 nodes as deep copies) in
    // under 300 bytes.
    let mut p = vec![0x80, 2, b')', b'q', 0];
    for i in 0..40u8 {
        p.extend([b'h', i, b'h', i, 0x86, b'q', i + 1]);
    }
    p.push(b'.');
    assert!(p.len() < 300);
    let m = env.root.join("bomb");
    pth_model(&m, p, vec![0; 64]);
    let mut c = env.cmd();
    c.args(["trace", "--model"]).arg(&m).arg(env.sample());
    let t = std::time::Instant::now();
    let (o, mib) = run_measured(c, &env.root.join("log.txt"));
    eprintln!("peak RSS {mib} MiB");
    let line = fails(&o);
    assert!(line.contains("pytorch_model.bin"), "{line}");
    assert!(mib < 64, "peak RSS {mib} MiB");
    assert!(t.elapsed().as_secs() < 20);
    // A tensor of shape (2^30, 2^30) over a 16-element (64-byte) storage.
    let mut p = vec![0x80, 2];
    p.extend(b"ccollections\nOrderedDict\n)R(");
    p.extend(x("embeddings.word_embeddings.weight"));
    p.extend(b"ctorch._utils\n_rebuild_tensor_v2\n((");
    p.extend(x("storage"));
    p.extend(b"ctorch\nFloatStorage\n");
    p.extend(x("0"));
    p.extend(x("cpu"));
    p.extend(j(16));
    p.extend(b"tQ");
    p.extend(j(0));
    p.push(b'(');
    p.extend(j(1 << 30));
    p.extend(j(1 << 30));
    p.extend(b"t(");
    p.extend(j(1 << 30));
    p.extend(j(1));
    p.extend(b"t\x89)tRu.");
    let m = env.root.join("huge");
    pth_model(&m, p, vec![0; 64]);
    let mut c = env.cmd();
    c.args(["trace", "--model"]).arg(&m).arg(env.sample());
    let (o, mib) = run_measured(c, &env.root.join("log.txt"));
    eprintln!("peak RSS {mib} MiB");
    let line = fails(&o);
    assert!(
        line.contains("embeddings.word_embeddings.weight") && line.contains("16-element storage"),
        "{line}"
    );
    assert!(mib < 64, "peak RSS {mib} MiB");
}

/// The header of a safetensors file and the byte offset its data starts at.
fn st_header(p: &Path) -> (serde_json::Map<String, serde_json::Value>, usize) {
    let b = std::fs::read(p).unwrap();
    let n = u64::from_le_bytes(b[..8].try_into().unwrap()) as usize;
    let v: serde_json::Value = serde_json::from_slice(&b[8..8 + n]).unwrap();
    (v.as_object().unwrap().clone(), 8 + n)
}

/// Rewrite a safetensors file's header (same data; the header padded to its old size).
fn st_rewrite(p: &Path, edit: impl Fn(&mut serde_json::Map<String, serde_json::Value>)) {
    let b = std::fs::read(p).unwrap();
    let (mut h, start) = st_header(p);
    edit(&mut h);
    let mut text = serde_json::to_string(&h).unwrap();
    assert!(
        text.len() <= start - 8,
        "edited header longer than the original"
    );
    while text.len() < start - 8 {
        text.push(' ');
    }
    let mut out = ((start - 8) as u64).to_le_bytes().to_vec();
    out.extend(text.as_bytes());
    out.extend(&b[start..]);
    std::fs::write(p, out).unwrap();
}

#[test]
fn safetensors_and_config_attacks_are_named() {
    let env = Env::new();
    let run = |m: &Path| {
        fails(
            &env.cmd()
                .args(["trace", "--model"])
                .arg(m)
                .arg(env.sample())
                .output()
                .unwrap(),
        )
    };
    let fresh = |tag: &str| {
        let m = env.root.join(tag);
        write_tiny_model(&m, &Tiny::default()).unwrap();
        m
    };
    let w = "encoder.layer.0.attention.self.query.weight";
    // A shape larger than its byte range.
    let m = fresh("shape");
    st_rewrite(&m.join("model.safetensors"), |h| {
        h[w]["shape"] = serde_json::json!([32, 64]);
    });
    let line = run(&m);
    assert!(
        line.contains(w) && line.contains("needs 8192 bytes"),
        "{line}"
    );
    // Two tensors sharing bytes.
    let m = fresh("overlap");
    st_rewrite(&m.join("model.safetensors"), |h| {
        let (a, b) = {
            let mut names: Vec<&String> = h.keys().filter(|k| *k != "__metadata__").collect();
            names.sort_by_key(|n| h[n.as_str()]["data_offsets"][0].as_u64());
            (names[0].clone(), names[1].clone())
        };
        let ra = h[&a]["data_offsets"].clone();
        let la = ra[1].as_u64().unwrap() - ra[0].as_u64().unwrap();
        let rb = h[&b]["data_offsets"].clone();
        let lb = rb[1].as_u64().unwrap() - rb[0].as_u64().unwrap();
        if la == lb {
            h[&b]["data_offsets"] = ra;
        } else {
            // Shift b back by one element into a.
            let s = rb[0].as_u64().unwrap() - 4;
            h[&b]["data_offsets"] = serde_json::json!([s, s + lb]);
        }
    });
    let line = run(&m);
    assert!(line.contains("overlap"), "{line}");
    // NaN in a weight: named.
    let m = fresh("nan");
    let p = m.join("model.safetensors");
    let (h, start) = st_header(&p);
    let off = start + h[w]["data_offsets"][0].as_u64().unwrap() as usize;
    let mut b = std::fs::read(&p).unwrap();
    b[off + 8..off + 12].copy_from_slice(&f32::NAN.to_le_bytes());
    b[off + 12..off + 16].copy_from_slice(&f32::INFINITY.to_le_bytes());
    std::fs::write(&p, b).unwrap();
    let line = run(&m);
    assert!(
        line.contains(w) && line.contains("2 non-finite values"),
        "{line}"
    );
    // Config values: a negative epsilon, 0 layers (trace and analyze both refuse).
    let m = fresh("eps");
    let cfg = m.join("config.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    v["layer_norm_eps"] = serde_json::json!(-1e-5);
    std::fs::write(&cfg, v.to_string()).unwrap();
    let line = run(&m);
    assert!(line.contains("layer_norm_eps is -0.00001"), "{line}");
    let m = fresh("zero");
    let cfg = m.join("config.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    v["num_hidden_layers"] = serde_json::json!(0);
    std::fs::write(&cfg, v.to_string()).unwrap();
    let line = run(&m);
    assert!(line.contains("the model has 0 layers"), "{line}");
    let line = fails(
        &env.cmd()
            .args(["analyze", "--model"])
            .arg(&m)
            .arg(env.sample())
            .output()
            .unwrap(),
    );
    assert!(line.contains("the model has 0 layers"), "{line}");
}

#[test]
fn a_tokenizer_that_makes_the_tokenizers_crate_panic_is_one_line() {
    let env = Env::new();
    let m = env.root.join("tiny");
    write_tiny_model(&m, &Tiny::default()).unwrap();
    std::fs::remove_file(m.join("vocab.txt")).unwrap();
    // A tokenizer.json cut inside its decoder: the tokenizers crate's decoder
    // deserializer `expect`s and panics (found by tests/it/fuzz.rs).
    let good = std::fs::read_to_string(fixtures().join("tiny_codegen/tokenizer.json")).unwrap();
    let at = good.find("\"decoder\"").expect("a decoder");
    std::fs::write(
        m.join("tokenizer.json"),
        format!("{}\"decoder\": {{\"type\": \"ByteLevel\", ", &good[..at]),
    )
    .unwrap();
    let o = env
        .cmd()
        .args(["trace", "--model"])
        .arg(&m)
        .arg(env.sample())
        .output()
        .unwrap();
    let line = fails(&o);
    assert!(line.contains("tokenizer"), "{line}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// Escape sequences inside model files never reach the terminal: the one-line error
/// shows them escaped (`\u{1b}`), so a hostile `model_type`, tensor name or GGUF
/// architecture cannot set the window title, write the clipboard (OSC 52), clear the
/// screen or overwrite the error line with a fake success.
#[test]
fn control_text_in_model_files_reaches_stderr_escaped() {
    let env = Env::new();
    const EVIL: &str =
        "\u{1b}]0;owned\u{7}\u{1b}]52;c;aGk=\u{7}\u{1b}[2J\rcodescope: model loaded fine";
    let check = |args: &[&std::ffi::OsStr]| -> String {
        let o = env.cmd().args(args).output().unwrap();
        let line = fails(&o);
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(
            !err.chars().any(|c| c.is_control() && c != '\n'),
            "raw control text on stderr: {err:?}"
        );
        assert!(line.contains("\\u{1b}]52;c;"), "{line}");
        line
    };
    let sample = env.sample();
    // config.json's model_type.
    let m = env.root.join("cfg");
    write_tiny_model(&m, &Tiny::default()).unwrap();
    let cfg = m.join("config.json");
    let mut c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    c["model_type"] = EVIL.into();
    std::fs::write(&cfg, c.to_string()).unwrap();
    check(&[
        "analyze".as_ref(),
        "--model".as_ref(),
        m.as_os_str(),
        sample.as_os_str(),
    ]);
    // A safetensors tensor name.
    let m = env.root.join("st");
    write_tiny_model(&m, &Tiny::default()).unwrap();
    let w = "encoder.layer.0.attention.self.query.weight";
    st_rewrite(&m.join("model.safetensors"), |h| {
        let mut v = h.remove(w).unwrap();
        // A shape larger than its bytes: the header check names the tensor.
        v["shape"] = serde_json::json!([32, 64]);
        // Same header length or less: the name's tail with a clipboard write before it.
        h.insert(format!("\u{1b}]52;c;aGk=\u{7}{}", &w[30..]), v);
    });
    check(&[
        "trace".as_ref(),
        "--model".as_ref(),
        m.as_os_str(),
        sample.as_os_str(),
    ]);
    // A GGUF general.architecture.
    let mut g = Gguf::fixture("llama");
    g.set("general.architecture", Value::String(EVIL.into()));
    let p = g.save(&env.root.join("gguf"));
    check(&[
        "trace".as_ref(),
        "--model".as_ref(),
        p.as_os_str(),
        sample.as_os_str(),
    ]);
    // A file name.
    let bad = env.root.join(format!("x{EVIL}.py"));
    check(&["syntax".as_ref(), bad.as_os_str()]);
    // A tour's file value.
    let tour = env.root.join("t.toml");
    std::fs::write(
        &tour,
        format!(
            "[[step]]\nmodel = {}\nfile = {}\n",
            serde_json::Value::from(fixtures().join("tiny_roberta").display().to_string()),
            serde_json::Value::from(EVIL)
        ),
    )
    .unwrap();
    check(&[
        "render".as_ref(),
        "--tour".as_ref(),
        tour.as_os_str(),
        "--out".as_ref(),
        env.root.join("deck").as_os_str(),
    ]);
    // A tour's rewrite value (the step's file is fine).
    std::fs::write(
        &tour,
        format!(
            "[[step]]\nmodel = {}\nfile = {}\nrewrite = {}\n",
            serde_json::Value::from(fixtures().join("tiny_roberta").display().to_string()),
            serde_json::Value::from(sample.display().to_string()),
            serde_json::Value::from(EVIL)
        ),
    )
    .unwrap();
    let line = check(&[
        "render".as_ref(),
        "--tour".as_ref(),
        tour.as_os_str(),
        "--out".as_ref(),
        env.root.join("deck").as_os_str(),
    ]);
    assert!(line.contains("step 1"), "{line}");
}
