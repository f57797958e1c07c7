//! A bounded reader of the pickles inside PyTorch checkpoints (`data.pkl`): just enough
//! of the pickle machine to find a state dict's tensors, and nothing that executes.
//!
//! Replaces candle's `pickle::Stack` for untrusted files: candle deep-copies a memo entry
//! on every `BINGET` (a 473-byte file whose memo entries nest 26 deep exhausts memory)
//! and allocates whatever a `BINUNICODE` length says. Here
//! - objects are reference-counted, so a memo get is O(1); containers are values
//!   (copied on write when shared, as candle's copies are), and every copy is charged to
//!   a work budget proportional to the pickle's size;
//! - every length is checked against the bytes left before anything is allocated;
//! - nesting is limited to [`MAX_DEPTH`] (deeper structures are not state dicts, and
//!   dropping them would recurse);
//! - globals are names only: nothing is imported or called. `collections.OrderedDict`
//!   becomes a dict, everything else stays an opaque `Reduce` node.
//!
//! [`state_dict_tensors`] then reads `torch._utils._rebuild_tensor_v2` calls (also
//! wrapped in `_rebuild_parameter` or `_rebuild_from_type_v2`) into [`PickledTensor`]s.

use std::rc::Rc;

/// Deepest nesting of containers accepted.
pub const MAX_DEPTH: u32 = 64;

type Res<T> = std::result::Result<T, String>;

/// A pickled value. Cloning is cheap (reference counts).
#[derive(Debug, Clone)]
pub enum Obj {
    Mark,
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Rc<str>),
    Bytes(Rc<[u8]>),
    /// `module.name` as a GLOBAL opcode names it.
    Global(Rc<(String, String)>),
    Tuple(Rc<Node<Vec<Obj>>>),
    List(Rc<Node<Vec<Obj>>>),
    Dict(Rc<Node<Vec<(Obj, Obj)>>>),
    /// `callable(*args)`, never called.
    Reduce(Rc<Node<(Obj, Obj)>>),
    /// `obj.__setstate__(state)`, never called.
    Build(Rc<Node<(Obj, Obj)>>),
    /// A persistent id (torch: a storage reference).
    PersId(Rc<Node<Obj>>),
}

/// A container with its nesting depth (fixed at construction: children are values).
#[derive(Debug, Clone)]
pub struct Node<T> {
    pub depth: u32,
    pub v: T,
}

impl Obj {
    fn depth(&self) -> u32 {
        match self {
            Obj::Tuple(n) | Obj::List(n) => n.depth,
            Obj::Dict(n) => n.depth,
            Obj::Reduce(n) | Obj::Build(n) => n.depth,
            Obj::PersId(n) => n.depth,
            _ => 0,
        }
    }

    fn node<T>(v: T, children: u32) -> Res<Rc<Node<T>>> {
        let depth = children + 1;
        if depth > MAX_DEPTH {
            return Err(format!("objects nested more than {MAX_DEPTH} deep"));
        }
        Ok(Rc::new(Node { depth, v }))
    }

    fn seq_depth(items: &[Obj]) -> u32 {
        items.iter().map(Obj::depth).max().unwrap_or(0)
    }

    fn tuple(items: Vec<Obj>) -> Res<Obj> {
        let d = Self::seq_depth(&items);
        Ok(Obj::Tuple(Self::node(items, d)?))
    }

    fn pair(a: Obj, b: Obj) -> Res<Rc<Node<(Obj, Obj)>>> {
        let d = a.depth().max(b.depth());
        Self::node((a, b), d)
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Obj::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The integer, if this is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Obj::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The items, if this is a tuple.
    pub fn as_tuple(&self) -> Option<&[Obj]> {
        match self {
            Obj::Tuple(n) => Some(&n.v),
            _ => None,
        }
    }

    /// `(module, name)`, if this is a global.
    pub fn as_global(&self) -> Option<(&str, &str)> {
        match self {
            Obj::Global(g) => Some((&g.0, &g.1)),
            _ => None,
        }
    }
}

/// The pickle machine's state while reading one pickle.
struct Machine<'a> {
    data: &'a [u8],
    pos: usize,
    stack: Vec<Obj>,
    /// Indices into `stack` of the open MARKs.
    marks: Vec<usize>,
    memo: std::collections::HashMap<u32, Obj>,
    /// Element copies left (copy-on-write of shared containers).
    budget: u64,
}

impl<'a> Machine<'a> {
    fn take(&mut self, n: usize) -> Res<&'a [u8]> {
        if n > self.data.len() - self.pos {
            return Err(format!(
                "a {n}-byte argument at offset {} runs past the end of the pickle",
                self.pos
            ));
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn u8(&mut self) -> Res<u8> {
        Ok(self.take(1)?[0])
    }

    fn le<const N: usize>(&mut self) -> Res<[u8; N]> {
        let mut b = [0u8; N];
        b.copy_from_slice(self.take(N)?);
        Ok(b)
    }

    fn line(&mut self) -> Res<String> {
        let rest = &self.data[self.pos..];
        let end = rest
            .iter()
            .position(|&b| b == b'\n')
            .ok_or("a GLOBAL name without its newline")?;
        let s = String::from_utf8_lossy(&rest[..end]).into_owned();
        self.pos += end + 1;
        Ok(s)
    }

    fn pop(&mut self) -> Res<Obj> {
        if self.marks.last().is_some_and(|&m| m >= self.stack.len()) {
            return Err("pop across a MARK".into());
        }
        self.stack
            .pop()
            .ok_or_else(|| "pop from an empty stack".into())
    }

    fn pop_mark(&mut self) -> Res<Vec<Obj>> {
        let m = self.marks.pop().ok_or("no MARK to pop to")?;
        Ok(self.stack.split_off(m))
    }

    fn top(&mut self) -> Res<&mut Obj> {
        if self.marks.last().is_some_and(|&m| m >= self.stack.len()) {
            return Err("no object above the MARK".into());
        }
        self.stack.last_mut().ok_or_else(|| "empty stack".into())
    }

    /// Charge `n` element copies to the budget.
    fn charge(&mut self, n: usize) -> Res<()> {
        self.budget = self
            .budget
            .checked_sub(n as u64)
            .ok_or("the pickle copies shared containers too often")?;
        Ok(())
    }

    fn append(&mut self, items: Vec<Obj>) -> Res<()> {
        let d = Obj::seq_depth(&items) + 1;
        if d > MAX_DEPTH {
            return Err(format!("objects nested more than {MAX_DEPTH} deep"));
        }
        let top = self.top()?;
        let Obj::List(node) = top else {
            return Err("APPEND to something that is not a list".into());
        };
        let copies = if Rc::strong_count(node) > 1 {
            node.v.len()
        } else {
            0
        };
        let node = Rc::make_mut(node);
        node.v.extend(items);
        node.depth = node.depth.max(d);
        self.charge(copies)
    }

    fn set_items(&mut self, items: Vec<Obj>) -> Res<()> {
        if !items.len().is_multiple_of(2) {
            return Err("SETITEMS with an odd number of objects".into());
        }
        let d = Obj::seq_depth(&items) + 1;
        if d > MAX_DEPTH {
            return Err(format!("objects nested more than {MAX_DEPTH} deep"));
        }
        let top = self.top()?;
        let Obj::Dict(node) = top else {
            return Err("SETITEM on something that is not a dict".into());
        };
        let copies = if Rc::strong_count(node) > 1 {
            node.v.len()
        } else {
            0
        };
        let node = Rc::make_mut(node);
        let mut it = items.into_iter();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            node.v.push((k, v));
        }
        node.depth = node.depth.max(d);
        self.charge(copies)
    }

    fn push_str(&mut self, n: usize) -> Res<()> {
        let b = self.take(n)?;
        let s = std::str::from_utf8(b).map_err(|_| "a string that is not UTF-8".to_string())?;
        self.stack.push(Obj::Str(Rc::from(s)));
        Ok(())
    }

    fn len_u32(&mut self) -> Res<usize> {
        Ok(u32::from_le_bytes(self.le()?) as usize)
    }

    fn len_u64(&mut self) -> Res<usize> {
        usize::try_from(u64::from_le_bytes(self.le()?)).map_err(|_| "a huge length".into())
    }

    /// Run one opcode; `Ok(true)` at STOP.
    fn step(&mut self) -> Res<bool> {
        let at = self.pos;
        let op = self.u8()?;
        match op {
            0x80 => {
                self.u8()?; // PROTO n
            }
            0x95 => {
                self.le::<8>()?; // FRAME length: framing only
            }
            b'.' => return Ok(true),
            b'(' => self.marks.push(self.stack.len()),
            b'N' => self.stack.push(Obj::None),
            0x88 => self.stack.push(Obj::Bool(true)),
            0x89 => self.stack.push(Obj::Bool(false)),
            b'K' => {
                let v = self.u8()?;
                self.stack.push(Obj::Int(v.into()))
            }
            b'M' => {
                let v = u16::from_le_bytes(self.le()?);
                self.stack.push(Obj::Int(v.into()))
            }
            b'J' => {
                let v = i32::from_le_bytes(self.le()?);
                self.stack.push(Obj::Int(v.into()))
            }
            0x8a => {
                let n = self.u8()? as usize;
                let b = self.take(n)?;
                if n > 8 {
                    return Err(format!("a {n}-byte integer"));
                }
                let mut v: i64 = 0;
                for (i, &x) in b.iter().enumerate() {
                    v |= (x as i64) << (8 * i);
                }
                if n > 0 && n < 8 && b[n - 1] & 0x80 != 0 {
                    v -= 1i64 << (8 * n); // two's complement sign
                }
                self.stack.push(Obj::Int(v))
            }
            b'G' => {
                let v = f64::from_be_bytes(self.le()?);
                self.stack.push(Obj::Float(v))
            }
            b'X' => {
                let n = self.len_u32()?;
                self.push_str(n)?
            }
            0x8c => {
                let n = self.u8()? as usize;
                self.push_str(n)?
            }
            0x8d => {
                let n = self.len_u64()?;
                self.push_str(n)?
            }
            b'C' | b'B' | 0x8e => {
                let n = match op {
                    b'C' => self.u8()? as usize,
                    b'B' => self.len_u32()?,
                    _ => self.len_u64()?,
                };
                let b = self.take(n)?;
                self.stack.push(Obj::Bytes(Rc::from(b)))
            }
            b'c' => {
                let module = self.line()?;
                let name = self.line()?;
                self.stack.push(Obj::Global(Rc::new((module, name))))
            }
            0x93 => {
                let name = self.pop()?;
                let module = self.pop()?;
                match (module.as_str(), name.as_str()) {
                    (Some(m), Some(n)) => self
                        .stack
                        .push(Obj::Global(Rc::new((m.to_string(), n.to_string())))),
                    _ => return Err("STACK_GLOBAL without two strings".into()),
                }
            }
            b')' => self.stack.push(Obj::tuple(Vec::new())?),
            0x85..=0x87 => {
                let n = (op - 0x84) as usize;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.pop()?);
                }
                items.reverse();
                self.stack.push(Obj::tuple(items)?)
            }
            b't' => {
                let items = self.pop_mark()?;
                self.stack.push(Obj::tuple(items)?)
            }
            b']' => self.stack.push(Obj::List(Obj::node(Vec::new(), 0)?)),
            b'l' => {
                let items = self.pop_mark()?;
                let d = Obj::seq_depth(&items);
                self.stack.push(Obj::List(Obj::node(items, d)?))
            }
            b'a' => {
                let v = self.pop()?;
                self.append(vec![v])?
            }
            b'e' => {
                let items = self.pop_mark()?;
                self.append(items)?
            }
            b'}' => self.stack.push(Obj::Dict(Obj::node(Vec::new(), 0)?)),
            b'd' => {
                let items = self.pop_mark()?;
                self.stack.push(Obj::Dict(Obj::node(Vec::new(), 0)?));
                self.set_items(items)?
            }
            b's' => {
                let v = self.pop()?;
                let k = self.pop()?;
                self.set_items(vec![k, v])?
            }
            b'u' => {
                let items = self.pop_mark()?;
                self.set_items(items)?
            }
            b'Q' => {
                let id = self.pop()?;
                let d = id.depth();
                self.stack.push(Obj::PersId(Obj::node(id, d)?))
            }
            b'R' | 0x81 => {
                let args = self.pop()?;
                let callable = self.pop()?;
                let ordered = matches!(
                    callable.as_global(),
                    Some(("collections", "OrderedDict" | "defaultdict"))
                );
                if ordered {
                    self.stack.push(Obj::Dict(Obj::node(Vec::new(), 0)?))
                } else {
                    self.stack.push(Obj::Reduce(Obj::pair(callable, args)?))
                }
            }
            b'b' => {
                let state = self.pop()?;
                let obj = self.pop()?;
                match (obj, state) {
                    // A dict's state (torch: `_metadata`) merges into it.
                    (Obj::Dict(d), Obj::Dict(s)) => {
                        self.stack.push(Obj::Dict(d));
                        let items: Vec<Obj> =
                            s.v.iter()
                                .flat_map(|(k, v)| [k.clone(), v.clone()])
                                .collect();
                        self.charge(items.len())?;
                        self.set_items(items)?
                    }
                    (obj, state) => self.stack.push(Obj::Build(Obj::pair(obj, state)?)),
                }
            }
            b'q' | b'r' | 0x94 => {
                let id = match op {
                    b'q' => self.u8()? as u32,
                    b'r' => u32::from_le_bytes(self.le()?),
                    _ => self.memo.len() as u32,
                };
                let v = self.top()?.clone();
                self.memo.insert(id, v);
            }
            b'h' | b'j' => {
                let id = if op == b'h' {
                    self.u8()? as u32
                } else {
                    u32::from_le_bytes(self.le()?)
                };
                let v = self
                    .memo
                    .get(&id)
                    .cloned()
                    .ok_or_else(|| format!("memo entry {id} read before it is written"))?;
                self.stack.push(v)
            }
            b'0' => {
                self.pop()?;
            }
            b'2' => {
                let v = self.top()?.clone();
                self.stack.push(v)
            }
            op => {
                return Err(format!(
                    "pickle opcode 0x{op:02x} at offset {at} is not one a state dict uses"
                ))
            }
        }
        Ok(false)
    }
}

/// Run the pickle `data` and return the object it builds.
pub fn load(data: &[u8]) -> Res<Obj> {
    let mut m = Machine {
        data,
        pos: 0,
        stack: Vec::new(),
        marks: Vec::new(),
        memo: std::collections::HashMap::new(),
        // Real state dicts copy nothing; allow generous sharing, never quadratic work.
        budget: 64 * data.len() as u64 + 1_000_000,
    };
    loop {
        if m.pos >= data.len() {
            return Err("the pickle ends without STOP".into());
        }
        if m.step()? {
            break;
        }
    }
    let obj = m.pop()?;
    // Drop the rest explicitly: depth is bounded, so this recursion is too.
    drop(m);
    Ok(obj)
}

/// A tensor as the state dict describes it (storage not read yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PickledTensor {
    /// State-dict key.
    pub name: String,
    /// Storage class (`FloatStorage`, `HalfStorage`, ...).
    pub storage: String,
    /// Storage key: the data lives in `{archive}/data/{key}`.
    pub key: String,
    /// Elements in the storage.
    pub storage_len: u64,
    /// Offset of the first element, in elements.
    pub offset: u64,
    pub shape: Vec<usize>,
    pub stride: Vec<usize>,
}

impl PickledTensor {
    /// The number of storage elements the view reaches (`offset + 1 +
    /// sum((size - 1) * stride)`, 0 for an empty tensor), checked for overflow.
    pub fn extent(&self) -> Option<u64> {
        if self.shape.contains(&0) {
            return Some(0);
        }
        let mut last = self.offset;
        for (&n, &s) in self.shape.iter().zip(&self.stride) {
            last = last.checked_add((n as u64 - 1).checked_mul(s as u64)?)?;
        }
        last.checked_add(1)
    }
}

fn usizes(o: &Obj, what: &str) -> Res<Vec<usize>> {
    o.as_tuple()
        .ok_or_else(|| format!("{what} is not a tuple"))?
        .iter()
        .map(|v| {
            v.as_int()
                .and_then(|i| usize::try_from(i).ok())
                .ok_or_else(|| format!("{what} holds a non-count"))
        })
        .collect()
}

/// The `_rebuild_tensor_v2(storage, offset, size, stride, ...)` call a state-dict value
/// makes, unwrapped from `_rebuild_parameter` / `_rebuild_from_type_v2`; `None` when the
/// value is not a tensor.
fn rebuild_call(v: &Obj) -> Option<(Obj, Obj)> {
    let Obj::Reduce(r) = v else { return None };
    let (callable, args) = (&r.v.0, &r.v.1);
    match callable.as_global()? {
        ("torch._utils", "_rebuild_tensor_v2") => Some((callable.clone(), args.clone())),
        ("torch._utils", "_rebuild_parameter") => rebuild_call(args.as_tuple()?.first()?),
        ("torch._tensor", "_rebuild_from_type_v2") => {
            // (func, type, args, state)
            let a = args.as_tuple()?;
            let inner = Obj::Reduce(Obj::pair(a.first()?.clone(), a.get(2)?.clone()).ok()?);
            rebuild_call(&inner)
        }
        _ => None,
    }
}

fn tensor(name: &str, args: &Obj) -> Res<PickledTensor> {
    let a = args
        .as_tuple()
        .filter(|a| a.len() >= 4)
        .ok_or("_rebuild_tensor_v2 without (storage, offset, size, stride)")?;
    let Obj::PersId(p) = &a[0] else {
        return Err("the storage is not a persistent reference".into());
    };
    let s =
        p.v.as_tuple()
            .filter(|s| s.len() >= 5 && s[0].as_str() == Some("storage"))
            .ok_or("the storage reference is not ('storage', class, key, location, size)")?;
    let storage = s[1]
        .as_global()
        .map(|(_, c)| c.to_string())
        .ok_or("the storage class is not a global")?;
    let key = match &s[2] {
        Obj::Str(k) => k.to_string(),
        Obj::Int(i) => i.to_string(),
        _ => return Err("the storage key is not a string".into()),
    };
    if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!("storage key '{key}' is not a plain name"));
    }
    let storage_len = s[4]
        .as_int()
        .and_then(|i| u64::try_from(i).ok())
        .ok_or("the storage size is not a count")?;
    let offset = a[1]
        .as_int()
        .and_then(|i| u64::try_from(i).ok())
        .ok_or("the storage offset is not a count")?;
    let shape = usizes(&a[2], "the size")?;
    let stride = usizes(&a[3], "the stride")?;
    if shape.len() != stride.len() {
        return Err(format!(
            "{} sizes but {} strides",
            shape.len(),
            stride.len()
        ));
    }
    let t = PickledTensor {
        name: name.to_string(),
        storage,
        key,
        storage_len,
        offset,
        shape,
        stride,
    };
    let extent = t.extent().ok_or("its size overflows")?;
    if extent > t.storage_len {
        return Err(format!(
            "shape {:?} (stride {:?}, offset {}) reaches element {extent} of a {}-element storage",
            t.shape, t.stride, t.offset, t.storage_len
        ));
    }
    Ok(t)
}

/// The tensors of a state dict: the top object is the dict (or a TorchScript module
/// wrapping it). Entries that are not tensors are skipped; a tensor entry that is
/// malformed is `Err` with its name, for the caller to skip or refuse.
pub fn state_dict_tensors(top: &Obj) -> Vec<Res<PickledTensor>> {
    let dict = match top {
        Obj::Dict(d) => d,
        Obj::Build(b) => match (&b.v.0, &b.v.1) {
            (Obj::Reduce(r), Obj::Dict(d))
                if r.v.0.as_global() == Some(("__torch__", "Module")) =>
            {
                d
            }
            _ => return Vec::new(),
        },
        _ => return Vec::new(),
    };
    dict.v
        .iter()
        .filter_map(|(k, v)| {
            let name = k.as_str()?;
            let (_, args) = rebuild_call(v)?;
            Some(tensor(name, &args).map_err(|e| format!("tensor {name}: {e}")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Build a pickle from opcodes: a tiny assembler for the tests.
    fn unicode(s: &str) -> Vec<u8> {
        let mut v = vec![b'X'];
        v.extend((s.len() as u32).to_le_bytes());
        v.extend(s.as_bytes());
        v
    }

    fn global(m: &str, n: &str) -> Vec<u8> {
        format!("c{m}\n{n}\n").into_bytes()
    }

    fn int(i: u32) -> Vec<u8> {
        let mut v = vec![b'J'];
        v.extend((i as i32).to_le_bytes());
        v
    }

    /// A state dict `{name: tensor}` as torch.save writes it (protocol 2).
    fn state_dict(name: &str, shape: &[u32], stride: &[u32], numel: u32) -> Vec<u8> {
        let mut p = vec![0x80, 2];
        p.extend(global("collections", "OrderedDict"));
        p.extend([b')', b'R', b'q', 0, b'(']);
        p.extend(unicode(name));
        p.extend(global("torch._utils", "_rebuild_tensor_v2"));
        p.push(b'(');
        p.push(b'(');
        p.extend(unicode("storage"));
        p.extend(global("torch", "FloatStorage"));
        p.extend(unicode("0"));
        p.extend(unicode("cpu"));
        p.extend(int(numel));
        p.extend([b't', b'Q']);
        p.extend(int(0));
        p.push(b'(');
        for &s in shape {
            p.extend(int(s));
        }
        p.push(b't');
        p.push(b'(');
        for &s in stride {
            p.extend(int(s));
        }
        p.push(b't');
        p.extend([0x89, b')', b't', b'R', b'u', b'.']);
        p
    }

    #[test]
    fn reads_a_state_dict() {
        let top = load(&state_dict("w", &[2, 3], &[3, 1], 6)).unwrap();
        let ts = state_dict_tensors(&top);
        assert_eq!(ts.len(), 1);
        let t = ts[0].as_ref().unwrap();
        assert_eq!(
            (t.name.as_str(), t.storage.as_str(), t.key.as_str()),
            ("w", "FloatStorage", "0")
        );
        assert_eq!(
            (t.shape.clone(), t.stride.clone(), t.storage_len),
            (vec![2, 3], vec![3, 1], 6)
        );
    }

    #[test]
    fn a_shape_larger_than_its_storage_is_refused() {
        let top = load(&state_dict("w", &[1 << 30, 1 << 30], &[1 << 30, 1], 16)).unwrap();
        let e = state_dict_tensors(&top)[0].clone().unwrap_err();
        assert!(e.contains("16-element storage"), "{e}");
    }

    #[test]
    fn memo_references_are_shared_not_copied() {
        // t0 = (); t_{i+1} = (t_i, t_i); 60 levels would be 2^60 nodes as deep copies.
        let mut p = vec![0x80, 2, b')', b'q', 0];
        for i in 0..60u8 {
            p.extend([b'h', i, b'h', i, 0x86, b'q', i + 1]);
        }
        p.push(b'.');
        let t = std::time::Instant::now();
        let top = load(&p).unwrap();
        assert_eq!(top.depth(), 61);
        assert!(t.elapsed().as_secs() < 2);
        // Past the depth limit: refused.
        let mut p = vec![0x80, 2, b')', b'q', 0];
        for i in 0..70u8 {
            p.extend([b'h', i, 0x85, b'q', i + 1]);
        }
        p.push(b'.');
        assert!(load(&p).unwrap_err().contains("nested"));
    }

    #[test]
    fn lengths_past_the_end_and_unknown_opcodes_are_refused() {
        let mut p = vec![b'X'];
        p.extend(u32::MAX.to_le_bytes());
        assert!(load(&p).unwrap_err().contains("past the end"));
        assert!(load(b"\x80\x02i__builtin__\neval\n.")
            .unwrap_err()
            .contains("0x69"));
        assert!(load(b"\x80\x02N").unwrap_err().contains("without STOP"));
        assert!(load(b"0").unwrap_err().contains("empty stack"));
    }

    #[test]
    fn repeated_copies_of_a_shared_list_exhaust_the_budget() {
        // A list memoized after every append: each append copies it (quadratic work).
        let mut p = vec![0x80, 2, b']'];
        for _ in 0..20_000 {
            p.extend([b'q', 0, b'N', b'a']);
        }
        p.push(b'.');
        assert!(load(&p).unwrap_err().contains("too often"));
    }
}
