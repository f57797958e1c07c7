//! A bounded reader of GGUF headers: metadata and the tensor directory, validated as
//! llama.cpp's `gguf_init_from_file` validates them, before anything is allocated.
//!
//! candle's `gguf_file::Content::read` cannot be made safe from outside: an alignment of
//! 0 divides by zero, and every metadata array element becomes a 32-byte enum (a
//! 100M-element u8 array took 4.5 GB). This reader
//! - checks every count and length against the bytes left in the file before
//!   allocating (an array of `n` elements needs at least `n` times its element size);
//! - stores arrays as typed vectors (a u8 array costs one byte per element) and refuses
//!   metadata that would take more than a cap in memory
//!   ([`crate::model::limits::max_gguf_metadata_bytes`]);
//! - refuses what llama.cpp refuses: version 1 or above 3, empty or duplicate keys,
//!   nested arrays, a `general.alignment` that is not a u32 power of two, tensor names
//!   of 64 bytes or more, duplicate tensor names, more than 4 dimensions, negative or
//!   overflowing element counts, rows that are not a whole number of blocks, and tensor
//!   offsets that are not exactly where the previous tensor (padded to the alignment)
//!   ends — which also catches a quantized tensor relabelled as F32 (its size changes)
//!   and unaligned offsets;
//! - checks that the data section holds every tensor (a truncated file names the bytes
//!   missing).
//!
//! Tensor types are those candle can dequantize; others are refused by name.

use std::collections::HashMap;
use std::io::Read;

use candle_core::quantized::GgmlDType;

/// A metadata value. Arrays are typed vectors, not vectors of values.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    U64(u64),
    I64(i64),
    F32(f32),
    F64(f64),
    Bool(bool),
    String(String),
    Array(Array),
}

/// A metadata array: one vector of one element type (GGUF has no nested arrays that
/// llama.cpp accepts).
#[derive(Debug, Clone, PartialEq)]
pub enum Array {
    U8(Vec<u8>),
    I8(Vec<i8>),
    U16(Vec<u16>),
    I16(Vec<i16>),
    U32(Vec<u32>),
    I32(Vec<i32>),
    U64(Vec<u64>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    Bool(Vec<bool>),
    String(Vec<String>),
}

impl Array {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Array::U8(v) => v.len(),
            Array::I8(v) => v.len(),
            Array::U16(v) => v.len(),
            Array::I16(v) => v.len(),
            Array::U32(v) => v.len(),
            Array::I32(v) => v.len(),
            Array::U64(v) => v.len(),
            Array::I64(v) => v.len(),
            Array::F32(v) => v.len(),
            Array::F64(v) => v.len(),
            Array::Bool(v) => v.len(),
            Array::String(v) => v.len(),
        }
    }

    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` as an integer of any width (`None`: out of range or not integers).
    pub fn int(&self, i: usize) -> Option<i128> {
        Some(match self {
            Array::U8(v) => (*v.get(i)?).into(),
            Array::I8(v) => (*v.get(i)?).into(),
            Array::U16(v) => (*v.get(i)?).into(),
            Array::I16(v) => (*v.get(i)?).into(),
            Array::U32(v) => (*v.get(i)?).into(),
            Array::I32(v) => (*v.get(i)?).into(),
            Array::U64(v) => (*v.get(i)?).into(),
            Array::I64(v) => (*v.get(i)?).into(),
            _ => return None,
        })
    }
}

/// Metadata keys and values.
pub type Metadata = HashMap<String, Value>;

/// One tensor of the directory, in file order.
#[derive(Debug, Clone)]
pub struct TensorEntry {
    pub name: String,
    pub dtype: GgmlDType,
    /// Dimensions outermost first (GGUF stores them innermost first).
    pub dims: Vec<usize>,
    /// Byte offset inside the data section.
    pub offset: u64,
    /// Bytes of the tensor's data.
    pub bytes: u64,
}

/// A validated GGUF header.
#[derive(Debug, Clone)]
pub struct Header {
    pub version: u32,
    pub metadata: Metadata,
    pub tensors: Vec<TensorEntry>,
    /// Absolute file offset of the data section.
    pub data_offset: u64,
    pub alignment: u64,
}

impl Header {
    /// The tensor named `name`.
    pub fn tensor(&self, name: &str) -> Option<&TensorEntry> {
        self.tensors.iter().find(|t| t.name == name)
    }
}

const DEFAULT_ALIGNMENT: u64 = 32;
/// llama.cpp's `GGML_MAX_NAME`: names must be shorter.
const MAX_NAME: usize = 64;
/// llama.cpp's `GGML_MAX_DIMS`.
const MAX_DIMS: u32 = 4;

/// A candle-dequantizable ggml type id (llama.cpp's numbering).
fn ggml_dtype(id: u32) -> Option<GgmlDType> {
    Some(match id {
        0 => GgmlDType::F32,
        1 => GgmlDType::F16,
        2 => GgmlDType::Q4_0,
        3 => GgmlDType::Q4_1,
        6 => GgmlDType::Q5_0,
        7 => GgmlDType::Q5_1,
        8 => GgmlDType::Q8_0,
        9 => GgmlDType::Q8_1,
        10 => GgmlDType::Q2K,
        11 => GgmlDType::Q3K,
        12 => GgmlDType::Q4K,
        13 => GgmlDType::Q5K,
        14 => GgmlDType::Q6K,
        15 => GgmlDType::Q8K,
        30 => GgmlDType::BF16,
        _ => return None,
    })
}

/// llama.cpp's type id of a ggml type (the inverse of [`ggml_dtype`]).
pub fn ggml_type_id(t: GgmlDType) -> u32 {
    match t {
        GgmlDType::F32 => 0,
        GgmlDType::F16 => 1,
        GgmlDType::Q4_0 => 2,
        GgmlDType::Q4_1 => 3,
        GgmlDType::Q5_0 => 6,
        GgmlDType::Q5_1 => 7,
        GgmlDType::Q8_0 => 8,
        GgmlDType::Q8_1 => 9,
        GgmlDType::Q2K => 10,
        GgmlDType::Q3K => 11,
        GgmlDType::Q4K => 12,
        GgmlDType::Q5K => 13,
        GgmlDType::Q6K => 14,
        GgmlDType::Q8K => 15,
        GgmlDType::BF16 => 30,
    }
}

/// Reads little-endian values, tracking the bytes left in the file.
struct Cursor<R> {
    r: R,
    left: u64,
    pos: u64,
    /// Bytes of metadata kept in memory so far, and the most allowed.
    kept: u64,
    cap: u64,
}

type Res<T> = std::result::Result<T, String>;

impl<R: Read> Cursor<R> {
    fn bytes<const N: usize>(&mut self) -> Res<[u8; N]> {
        if (N as u64) > self.left {
            return Err(format!(
                "the file ends inside the header (offset {})",
                self.pos
            ));
        }
        let mut b = [0u8; N];
        self.r
            .read_exact(&mut b)
            .map_err(|e| format!("reading the header: {e}"))?;
        self.left -= N as u64;
        self.pos += N as u64;
        Ok(b)
    }

    fn u32(&mut self) -> Res<u32> {
        Ok(u32::from_le_bytes(self.bytes()?))
    }

    fn u64(&mut self) -> Res<u64> {
        Ok(u64::from_le_bytes(self.bytes()?))
    }

    /// Count `bytes` of memory against the metadata cap.
    fn keep(&mut self, bytes: u64) -> Res<()> {
        self.kept = self.kept.saturating_add(bytes);
        if self.kept > self.cap {
            return Err(format!(
                "metadata would take more than {} MiB in memory \
                 (CODESCOPE_MAX_METADATA_MB raises the limit)",
                self.cap >> 20
            ));
        }
        Ok(())
    }

    fn string(&mut self, what: &str) -> Res<String> {
        let n = self.u64()?;
        if n > self.left {
            return Err(format!(
                "{what}: a {n}-byte string with {} bytes left in the file",
                self.left
            ));
        }
        self.keep(n + 24)?;
        let mut buf = vec![0u8; n as usize];
        self.r
            .read_exact(&mut buf)
            .map_err(|e| format!("reading the header: {e}"))?;
        self.left -= n;
        self.pos += n;
        String::from_utf8(buf).map_err(|_| format!("{what} is not UTF-8"))
    }

    /// `n` fixed-size elements, after checking they fit in the file and the cap.
    fn vec<T, const N: usize>(
        &mut self,
        n: u64,
        key: &str,
        conv: impl Fn([u8; N]) -> Res<T>,
    ) -> Res<Vec<T>> {
        let need = n.saturating_mul(N as u64);
        if need > self.left {
            return Err(format!(
                "{key}: an array of {n} elements needs {need} bytes, {} are left in the file",
                self.left
            ));
        }
        self.keep(n.saturating_mul(std::mem::size_of::<T>() as u64))?;
        let mut v = Vec::with_capacity(n as usize);
        for _ in 0..n {
            v.push(conv(self.bytes::<N>()?)?);
        }
        Ok(v)
    }

    fn scalar(&mut self, ty: u32, key: &str) -> Res<Value> {
        self.keep(16)?;
        Ok(match ty {
            0 => Value::U8(self.bytes::<1>()?[0]),
            1 => Value::I8(self.bytes::<1>()?[0] as i8),
            2 => Value::U16(u16::from_le_bytes(self.bytes()?)),
            3 => Value::I16(i16::from_le_bytes(self.bytes()?)),
            4 => Value::U32(self.u32()?),
            5 => Value::I32(i32::from_le_bytes(self.bytes()?)),
            6 => Value::F32(f32::from_le_bytes(self.bytes()?)),
            7 => Value::Bool(self.bytes::<1>()?[0] != 0),
            8 => Value::String(self.string(key)?),
            10 => Value::U64(self.u64()?),
            11 => Value::I64(i64::from_le_bytes(self.bytes()?)),
            12 => Value::F64(f64::from_le_bytes(self.bytes()?)),
            9 => return Err(format!("{key}: nested arrays are not allowed")),
            t => return Err(format!("{key} has an invalid value type {t}")),
        })
    }

    fn array(&mut self, key: &str) -> Res<Array> {
        let ty = self.u32()?;
        let n = self.u64()?;
        Ok(match ty {
            0 => Array::U8(self.vec(n, key, |b: [u8; 1]| Ok(b[0]))?),
            1 => Array::I8(self.vec(n, key, |b: [u8; 1]| Ok(b[0] as i8))?),
            2 => Array::U16(self.vec(n, key, |b| Ok(u16::from_le_bytes(b)))?),
            3 => Array::I16(self.vec(n, key, |b| Ok(i16::from_le_bytes(b)))?),
            4 => Array::U32(self.vec(n, key, |b| Ok(u32::from_le_bytes(b)))?),
            5 => Array::I32(self.vec(n, key, |b| Ok(i32::from_le_bytes(b)))?),
            6 => Array::F32(self.vec(n, key, |b| Ok(f32::from_le_bytes(b)))?),
            7 => Array::Bool(self.vec(n, key, |b: [u8; 1]| Ok(b[0] != 0))?),
            10 => Array::U64(self.vec(n, key, |b| Ok(u64::from_le_bytes(b)))?),
            11 => Array::I64(self.vec(n, key, |b| Ok(i64::from_le_bytes(b)))?),
            12 => Array::F64(self.vec(n, key, |b| Ok(f64::from_le_bytes(b)))?),
            8 => {
                // Each string is at least its 8-byte length.
                if n.saturating_mul(8) > self.left {
                    return Err(format!(
                        "{key}: an array of {n} strings needs at least {} bytes, {} are left",
                        n.saturating_mul(8),
                        self.left
                    ));
                }
                self.keep(n.saturating_mul(24))?;
                let mut v = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    v.push(self.string(key)?);
                }
                Array::String(v)
            }
            9 => return Err(format!("{key}: nested arrays are not allowed")),
            t => return Err(format!("{key} has an invalid element type {t}")),
        })
    }
}

/// Read and validate the header of a `file_len`-byte GGUF file from `r` (positioned at
/// its start), keeping at most `cap` bytes of metadata in memory. Errors are one-line
/// reasons.
pub fn read_header(r: impl Read, file_len: u64, cap: u64) -> Res<Header> {
    let mut c = Cursor {
        r,
        left: file_len,
        pos: 0,
        kept: 0,
        cap,
    };
    let magic = c
        .bytes::<4>()
        .map_err(|_| "the file is too short".to_string())?;
    if &magic != b"GGUF" {
        return Err("no GGUF magic".into());
    }
    let version = c.u32()?;
    if version == 1 {
        return Err("GGUF version 1 is not supported (as in llama.cpp)".into());
    }
    if version == 0 || version > 3 {
        return Err(format!("unknown GGUF version {version}"));
    }
    let n_tensors = c.u64()?;
    let n_kv = c.u64()?;
    // Each key-value takes at least 8 (key length) + 4 (type) + 1 bytes, each tensor
    // entry 8 + 4 + 4 + 8.
    let need = n_kv
        .saturating_mul(13)
        .saturating_add(n_tensors.saturating_mul(24));
    if need > c.left {
        return Err(format!(
            "the header declares {n_tensors} tensors and {n_kv} metadata entries, which need \
             at least {need} bytes; {} are left",
            c.left
        ));
    }
    let mut metadata = Metadata::new();
    for i in 0..n_kv {
        let key = c.string("a metadata key")?;
        if key.is_empty() {
            return Err(format!("metadata key {i} is empty"));
        }
        if metadata.contains_key(&key) {
            return Err(format!("duplicate metadata key '{key}'"));
        }
        let ty = c.u32()?;
        let value = if ty == 9 {
            Value::Array(c.array(&key)?)
        } else {
            c.scalar(ty, &key)?
        };
        metadata.insert(key, value);
    }
    let alignment = match metadata.get("general.alignment") {
        None => DEFAULT_ALIGNMENT,
        Some(Value::U32(a)) => *a as u64,
        Some(other) => {
            return Err(format!(
                "general.alignment must be a u32, it is {}",
                type_name(other)
            ))
        }
    };
    if alignment == 0 || !alignment.is_power_of_two() {
        return Err(format!(
            "general.alignment {alignment} is not a power of two"
        ));
    }
    let mut tensors: Vec<TensorEntry> = Vec::with_capacity(n_tensors as usize);
    let mut seen: HashMap<String, ()> = HashMap::with_capacity(n_tensors as usize);
    for i in 0..n_tensors {
        let name = c.string("a tensor name")?;
        if name.len() >= MAX_NAME {
            return Err(format!(
                "tensor {i}: name of {} bytes (llama.cpp allows at most {})",
                name.len(),
                MAX_NAME - 1
            ));
        }
        if seen.insert(name.clone(), ()).is_some() {
            return Err(format!("duplicate tensor name '{name}'"));
        }
        let n_dims = c.u32()?;
        if n_dims > MAX_DIMS {
            return Err(format!("tensor {name} has {n_dims} dimensions (at most 4)"));
        }
        let mut ne = Vec::with_capacity(n_dims as usize);
        for _ in 0..n_dims {
            let d = i64::from_le_bytes(c.bytes()?);
            if d < 0 {
                return Err(format!("tensor {name} has a negative dimension {d}"));
            }
            ne.push(d as u64);
        }
        let elems = ne
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
            .filter(|&e| e < i64::MAX as u64)
            .ok_or_else(|| format!("tensor {name}: the element count overflows"))?;
        let ty = c.u32()?;
        let dtype = ggml_dtype(ty).ok_or_else(|| {
            format!("tensor {name} has ggml type {ty}, which codescope cannot dequantize")
        })?;
        let block = dtype.block_size() as u64;
        let row = ne.first().copied().unwrap_or(1);
        if row % block != 0 {
            return Err(format!(
                "tensor {name}: rows of {row} elements are not a whole number of {block}-element blocks"
            ));
        }
        let bytes = (elems / block)
            .checked_mul(dtype.type_size() as u64)
            .ok_or_else(|| format!("tensor {name}: the byte size overflows"))?;
        let offset = c.u64()?;
        c.keep(128 + name.len() as u64)?;
        let dims: Vec<usize> = ne.iter().rev().map(|&d| d as usize).collect();
        tensors.push(TensorEntry {
            name,
            dtype,
            dims,
            offset,
            bytes,
        });
    }
    let data_offset = if n_tensors > 0 {
        c.pos.div_ceil(alignment) * alignment
    } else {
        c.pos
    };
    // llama.cpp: each tensor starts exactly where the previous one, padded to the
    // alignment, ended.
    let mut expected = 0u64;
    for t in &tensors {
        if t.offset != expected {
            return Err(format!(
                "tensor {} is at offset {}, expected {expected} (llama.cpp refuses this layout)",
                t.name, t.offset
            ));
        }
        expected = t
            .bytes
            .div_ceil(alignment)
            .checked_mul(alignment)
            .and_then(|p| expected.checked_add(p))
            .ok_or_else(|| format!("tensor {}: the data section size overflows", t.name))?;
    }
    if let Some(last) = tensors.last() {
        let end = data_offset
            .checked_add(last.offset)
            .and_then(|e| e.checked_add(last.bytes))
            .ok_or("the data section size overflows")?;
        if end > file_len {
            return Err(format!(
                "truncated: tensors need {end} bytes, the file has {file_len}"
            ));
        }
    }
    Ok(Header {
        version,
        metadata,
        tensors,
        data_offset,
        alignment,
    })
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::U8(_) => "u8",
        Value::I8(_) => "i8",
        Value::U16(_) => "u16",
        Value::I16(_) => "i16",
        Value::U32(_) => "u32",
        Value::I32(_) => "i32",
        Value::U64(_) => "u64",
        Value::I64(_) => "i64",
        Value::F32(_) => "f32",
        Value::F64(_) => "f64",
        Value::Bool(_) => "bool",
        Value::String(_) => "string",
        Value::Array(_) => "array",
    }
}

/// Writes GGUF files (tests, fuzzing and the hostile-file regression tests build their
/// inputs with it; codescope itself never writes GGUF).
#[doc(hidden)]
pub mod write {
    use super::{Array, Value};

    /// A tensor to write: name, ggml type id, dims innermost first (as stored), data.
    pub struct RawTensor {
        pub name: String,
        pub ggml_type: u32,
        pub ne: Vec<u64>,
        pub data: Vec<u8>,
    }

    fn string(out: &mut Vec<u8>, s: &str) {
        out.extend((s.len() as u64).to_le_bytes());
        out.extend(s.as_bytes());
    }

    fn type_id(v: &Value) -> u32 {
        match v {
            Value::U8(_) => 0,
            Value::I8(_) => 1,
            Value::U16(_) => 2,
            Value::I16(_) => 3,
            Value::U32(_) => 4,
            Value::I32(_) => 5,
            Value::F32(_) => 6,
            Value::Bool(_) => 7,
            Value::String(_) => 8,
            Value::Array(_) => 9,
            Value::U64(_) => 10,
            Value::I64(_) => 11,
            Value::F64(_) => 12,
        }
    }

    fn scalar(out: &mut Vec<u8>, v: &Value) {
        match v {
            Value::U8(x) => out.push(*x),
            Value::I8(x) => out.push(*x as u8),
            Value::U16(x) => out.extend(x.to_le_bytes()),
            Value::I16(x) => out.extend(x.to_le_bytes()),
            Value::U32(x) => out.extend(x.to_le_bytes()),
            Value::I32(x) => out.extend(x.to_le_bytes()),
            Value::U64(x) => out.extend(x.to_le_bytes()),
            Value::I64(x) => out.extend(x.to_le_bytes()),
            Value::F32(x) => out.extend(x.to_le_bytes()),
            Value::F64(x) => out.extend(x.to_le_bytes()),
            Value::Bool(x) => out.push(*x as u8),
            Value::String(s) => string(out, s),
            Value::Array(a) => array(out, a),
        }
    }

    fn array(out: &mut Vec<u8>, a: &Array) {
        macro_rules! arr {
            ($id:expr, $v:expr, $f:expr) => {{
                out.extend(($id as u32).to_le_bytes());
                out.extend(($v.len() as u64).to_le_bytes());
                for x in $v {
                    #[allow(clippy::redundant_closure_call)]
                    ($f)(out, x);
                }
            }};
        }
        match a {
            Array::U8(v) => arr!(0, v, |o: &mut Vec<u8>, x: &u8| o.push(*x)),
            Array::I8(v) => arr!(1, v, |o: &mut Vec<u8>, x: &i8| o.push(*x as u8)),
            Array::U16(v) => arr!(2, v, |o: &mut Vec<u8>, x: &u16| o.extend(x.to_le_bytes())),
            Array::I16(v) => arr!(3, v, |o: &mut Vec<u8>, x: &i16| o.extend(x.to_le_bytes())),
            Array::U32(v) => arr!(4, v, |o: &mut Vec<u8>, x: &u32| o.extend(x.to_le_bytes())),
            Array::I32(v) => arr!(5, v, |o: &mut Vec<u8>, x: &i32| o.extend(x.to_le_bytes())),
            Array::F32(v) => arr!(6, v, |o: &mut Vec<u8>, x: &f32| o.extend(x.to_le_bytes())),
            Array::Bool(v) => arr!(7, v, |o: &mut Vec<u8>, x: &bool| o.push(*x as u8)),
            Array::String(v) => arr!(8, v, |o: &mut Vec<u8>, x: &String| string(o, x)),
            Array::U64(v) => arr!(10, v, |o: &mut Vec<u8>, x: &u64| o.extend(x.to_le_bytes())),
            Array::I64(v) => arr!(11, v, |o: &mut Vec<u8>, x: &i64| o.extend(x.to_le_bytes())),
            Array::F64(v) => arr!(12, v, |o: &mut Vec<u8>, x: &f64| o.extend(x.to_le_bytes())),
        }
    }

    /// A GGUF v3 file: metadata in the given order, tensors laid out as llama.cpp lays
    /// them out (offsets padded to `general.alignment`, else 32).
    pub fn gguf(meta: &[(&str, Value)], tensors: &[RawTensor]) -> Vec<u8> {
        let align = meta
            .iter()
            .find(|(k, _)| *k == "general.alignment")
            .and_then(|(_, v)| match v {
                Value::U32(a) if *a > 0 => Some(*a as u64),
                _ => None,
            })
            .unwrap_or(32);
        let mut out = b"GGUF".to_vec();
        out.extend(3u32.to_le_bytes());
        out.extend((tensors.len() as u64).to_le_bytes());
        out.extend((meta.len() as u64).to_le_bytes());
        for (k, v) in meta {
            string(&mut out, k);
            out.extend(type_id(v).to_le_bytes());
            scalar(&mut out, v);
        }
        let mut offset = 0u64;
        for t in tensors {
            string(&mut out, &t.name);
            out.extend((t.ne.len() as u32).to_le_bytes());
            for d in &t.ne {
                out.extend(d.to_le_bytes());
            }
            out.extend(t.ggml_type.to_le_bytes());
            out.extend(offset.to_le_bytes());
            offset += (t.data.len() as u64).div_ceil(align) * align;
        }
        if !tensors.is_empty() {
            let pad = (out.len() as u64).div_ceil(align) * align;
            out.resize(pad as usize, 0);
        }
        for t in tensors {
            let start = out.len();
            out.extend(&t.data);
            let padded = (t.data.len() as u64).div_ceil(align) * align;
            out.resize(start + padded as usize, 0);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::write::{gguf, RawTensor};
    use super::*;

    fn f32_tensor(name: &str, ne: &[u64]) -> RawTensor {
        let n: u64 = ne.iter().product();
        RawTensor {
            name: name.into(),
            ggml_type: 0,
            ne: ne.to_vec(),
            data: (0..n).flat_map(|i| (i as f32).to_le_bytes()).collect(),
        }
    }

    fn read(bytes: &[u8]) -> Res<Header> {
        read_header(bytes, bytes.len() as u64, 1 << 30)
    }

    #[test]
    fn round_trips_metadata_and_tensors() {
        let bytes = gguf(
            &[
                ("general.architecture", Value::String("llama".into())),
                ("a.u8s", Value::Array(Array::U8(vec![1, 2, 3]))),
                (
                    "a.strs",
                    Value::Array(Array::String(vec!["x".into(), "yz".into()])),
                ),
                ("a.f", Value::F32(0.5)),
            ],
            &[f32_tensor("t0", &[3, 2]), f32_tensor("t1", &[5])],
        );
        let h = read(&bytes).unwrap();
        assert_eq!(h.version, 3);
        assert_eq!(h.metadata["a.u8s"], Value::Array(Array::U8(vec![1, 2, 3])));
        assert_eq!(h.metadata["a.f"], Value::F32(0.5));
        assert_eq!(h.tensors[0].dims, vec![2, 3]);
        assert_eq!(h.tensors[0].bytes, 24);
        assert_eq!(h.tensors[1].offset, 32);
        assert_eq!(h.data_offset % 32, 0);
    }

    #[test]
    fn refuses_what_llama_cpp_refuses() {
        let meta = |a: Value| vec![("general.alignment", a)];
        for (m, want) in [
            (meta(Value::U32(0)), "not a power of two"),
            (meta(Value::U32(24)), "not a power of two"),
            (meta(Value::U64(32)), "must be a u32"),
        ] {
            let e = read(&gguf(&m, &[f32_tensor("t", &[4])])).unwrap_err();
            assert!(e.contains(want), "{e}");
        }
        // Duplicate tensor: same name twice.
        let e = read(&gguf(&[], &[f32_tensor("t", &[4]), f32_tensor("t", &[4])])).unwrap_err();
        assert!(e.contains("duplicate tensor name"), "{e}");
        // Relabel the first tensor (F32, 8 elements = 32 bytes) as Q8_0 (one 34-byte
        // block per 32 elements): rows of 8 are not whole blocks.
        let mut b = gguf(&[], &[f32_tensor("t", &[8]), f32_tensor("u", &[8])]);
        let pos = find(&b, b"t") + 1 + 4 + 8;
        b[pos..pos + 4].copy_from_slice(&8u32.to_le_bytes());
        let e = read(&b).unwrap_err();
        assert!(e.contains("whole number"), "{e}");
        // A 64-element F32 tensor relabelled F16: its size halves, so the next tensor
        // is no longer where it should be.
        let mut b = gguf(&[], &[f32_tensor("t", &[64]), f32_tensor("u", &[8])]);
        let pos = find(&b, b"t") + 1 + 4 + 8;
        b[pos..pos + 4].copy_from_slice(&1u32.to_le_bytes());
        let e = read(&b).unwrap_err();
        assert!(e.contains("tensor u is at offset 256, expected 128"), "{e}");
        // An unaligned offset.
        let mut b = gguf(&[], &[f32_tensor("t", &[8]), f32_tensor("u", &[8])]);
        let pos = find(&b, b"u") + 1 + 4 + 8 + 4;
        b[pos..pos + 8].copy_from_slice(&33u64.to_le_bytes());
        let e = read(&b).unwrap_err();
        assert!(e.contains("offset 33"), "{e}");
        // Nested arrays, duplicate keys, version 1.
        let mut b = gguf(&[("k", Value::Array(Array::U8(vec![])))], &[]);
        let pos = find(&b, b"k") + 1 + 4;
        b[pos..pos + 4].copy_from_slice(&9u32.to_le_bytes());
        assert!(read(&b).unwrap_err().contains("nested"));
        let b = gguf(&[("k", Value::U8(1)), ("k", Value::U8(2))], &[]);
        assert!(read(&b).unwrap_err().contains("duplicate metadata key"));
        let mut b = gguf(&[], &[]);
        b[4..8].copy_from_slice(&1u32.to_le_bytes());
        assert!(read(&b).unwrap_err().contains("version 1"));
    }

    #[test]
    fn counts_are_checked_against_the_file_before_allocating() {
        // An array claiming 10^12 u32 elements in a 60-byte file.
        let mut b = gguf(&[("k", Value::Array(Array::U32(vec![7])))], &[]);
        let pos = find(&b, b"k") + 1 + 4 + 4;
        b[pos..pos + 8].copy_from_slice(&1_000_000_000_000u64.to_le_bytes());
        let e = read(&b).unwrap_err();
        assert!(e.contains("1000000000000 elements"), "{e}");
        // A huge tensor count.
        let mut b = gguf(&[], &[]);
        b[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(read(&b).unwrap_err().contains("tensors"));
        // A string longer than the file.
        let mut b = gguf(&[("k", Value::String("abc".into()))], &[]);
        let pos = find(&b, b"k") + 1 + 4;
        b[pos..pos + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
        assert!(read(&b).unwrap_err().contains("bytes left"));
        // Metadata over the memory cap: 1000 strings of 10 bytes keep ~34 kB.
        let b = gguf(
            &[(
                "k",
                Value::Array(Array::String(vec!["0123456789".into(); 1000])),
            )],
            &[],
        );
        assert!(read(&b).is_ok());
        let e = read_header(&b[..], b.len() as u64, 20_000).unwrap_err();
        assert!(e.contains("in memory"), "{e}");
        // Truncated data.
        let b = gguf(&[], &[f32_tensor("t", &[64])]);
        let e = read(&b[..b.len() - 10]).unwrap_err();
        assert!(e.contains("truncated"), "{e}");
    }

    fn find(hay: &[u8], needle: &[u8]) -> usize {
        // The name's bytes follow its 8-byte length: return the index of its last byte.
        hay.windows(needle.len() + 8)
            .position(|w| w[..8] == (needle.len() as u64).to_le_bytes() && &w[8..] == needle)
            .map(|p| p + 8 + needle.len() - 1)
            .expect("name in file")
    }
}
