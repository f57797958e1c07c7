//! Tensors served straight from a memory-mapped file, without a copy (issue #18: a
//! cached GGUF model opens in a fraction of a second instead of reading 1.1 GB).
//!
//! candle's CPU tensors own a `Vec<f32>`, which the global allocator frees. So the mapped
//! bytes are handed to candle as `Vec`s *the global allocator knows about*: [`Alloc`]
//! wraps the system allocator and keeps a small registry of mappings. A `Vec` made by
//! [`Mapping::tensor`] points into a registered mapping; when candle frees it (or grows
//! it), [`Alloc`] sees the address inside a mapping and drops one reference instead of
//! calling `free`; the last reference unmaps the file. Everything else goes to the system
//! allocator unchanged (one atomic load per `free` while nothing is mapped, a bounds
//! check and at worst a scan of 16 slots while something is).
//!
//! The mapping is private and writable (copy-on-write): the file is never written, and a
//! tensor written in place (codescope's model code never does) would only get its own
//! copy of the touched pages. Several tensors may view one range (a fused projection and
//! its parts: [`cat_rows`]); none is ever mutated.
//!
//! Only a binary that installs [`Alloc`] as its `#[global_allocator]` (codescope's does,
//! as does the integration-test binary) can use this: [`available`] checks that it is
//! installed, and the callers fall back to reading into owned buffers otherwise.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use candle_core::{Device, Shape, Tensor};

use crate::error::{Error, Result};

/// The global allocator that lets mapped tensors be freed (see the module docs).
pub struct Alloc;

const SLOTS: usize = 16;

struct Slot {
    start: AtomicUsize,
    end: AtomicUsize,
    /// Live `Vec`s over the mapping, plus one held by its [`Mapping`] handle.
    refs: AtomicUsize,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    start: AtomicUsize::new(0),
    end: AtomicUsize::new(0),
    refs: AtomicUsize::new(0),
};
static SLOT: [Slot; SLOTS] = [EMPTY; SLOTS];
/// Bounds over all registered mappings (a quick reject for ordinary pointers).
static LOW: AtomicUsize = AtomicUsize::new(usize::MAX);
/// Registered mappings (0: every pointer is the system allocator's, no look-up at all).
static LIVE: AtomicUsize = AtomicUsize::new(0);
static HIGH: AtomicUsize = AtomicUsize::new(0);
static PROBING: AtomicBool = AtomicBool::new(false);
static SEEN: AtomicBool = AtomicBool::new(false);
/// Serialises registering and unregistering (never taken on the allocation paths).
static REGISTER: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The slot whose mapping holds `p`, if any.
fn slot_of(p: usize) -> Option<&'static Slot> {
    if LIVE.load(Ordering::Acquire) == 0 {
        return None;
    }
    if p < LOW.load(Ordering::Acquire) || p >= HIGH.load(Ordering::Acquire) {
        return None;
    }
    SLOT.iter().find(|s| {
        let start = s.start.load(Ordering::Acquire);
        start != 0 && p >= start && p < s.end.load(Ordering::Acquire)
    })
}

/// Drop one reference to the mapping in `s`; the last one unmaps it.
fn release(s: &'static Slot) {
    if s.refs.fetch_sub(1, Ordering::AcqRel) != 1 {
        return;
    }
    // Not racing a registration that reuses the slot (the mutex never allocates).
    let _guard = REGISTER.lock().unwrap_or_else(|e| e.into_inner());
    let (start, end) = (
        s.start.load(Ordering::Acquire),
        s.end.load(Ordering::Acquire),
    );
    s.start.store(0, Ordering::Release);
    s.end.store(0, Ordering::Release);
    LIVE.fetch_sub(1, Ordering::AcqRel);
    // SAFETY: the range was mapped by `Mapping::open` and no `Vec` points into it any
    // more (its reference count reached zero).
    unsafe {
        libc::munmap(start as *mut libc::c_void, end - start);
    }
}

// SAFETY: every request is served by `System`; pointers inside a registered mapping were
// never `System`'s and are released to their mapping instead (see the module docs).
unsafe impl GlobalAlloc for Alloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if PROBING.load(Ordering::Relaxed) {
            SEEN.store(true, Ordering::Relaxed);
        }
        // SAFETY: forwarded as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        match slot_of(ptr as usize) {
            Some(s) => release(s),
            // SAFETY: not a mapped pointer, so `System` allocated it.
            None => unsafe { System.dealloc(ptr, layout) },
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let Some(s) = slot_of(ptr as usize) else {
            // SAFETY: not a mapped pointer, so `System` allocated it.
            return unsafe { System.realloc(ptr, layout, new_size) };
        };
        // A mapped Vec asked to grow or shrink: move it to the heap.
        // SAFETY: a valid layout (same alignment, the size asked for).
        let new =
            unsafe { System.alloc(Layout::from_size_align_unchecked(new_size, layout.align())) };
        if !new.is_null() {
            // SAFETY: both ranges are valid for the smaller size and do not overlap.
            unsafe { std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size)) };
            release(s);
        }
        new
    }
}

/// Whether [`Alloc`] is this process's global allocator (checked once by allocating).
pub fn available() -> bool {
    static CHECKED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *CHECKED.get_or_init(|| {
        PROBING.store(true, Ordering::Relaxed);
        let probe = std::hint::black_box(Box::new(0u64));
        drop(probe);
        PROBING.store(false, Ordering::Relaxed);
        SEEN.load(Ordering::Relaxed)
    })
}

/// Mappings alive now (tests: dropping every tensor unmaps).
pub fn live_mappings() -> usize {
    SLOT.iter()
        .filter(|s| s.start.load(Ordering::Acquire) != 0)
        .count()
}

/// A file mapped and registered with [`Alloc`]; tensors made from it keep it mapped
/// after this handle is dropped.
pub struct Mapping {
    slot: &'static Slot,
    start: usize,
    len: usize,
}

impl Mapping {
    /// Map `path` (private, copy-on-write) and register it. Fails when [`Alloc`] is not
    /// installed, the registry is full or the mapping fails.
    pub fn open(path: &Path) -> Result<Self> {
        if !available() {
            return Err(Error::Compute(
                "mapped tensors need codescope's global allocator".into(),
            ));
        }
        let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let len = f.metadata().map_err(|e| Error::io(path, e))?.len() as usize;
        if len == 0 {
            return Err(Error::io(path, std::io::Error::other("empty file")));
        }
        use std::os::fd::AsRawFd;
        // SAFETY: a fresh private mapping of a file we opened; checked for failure below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE,
                f.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::io(path, std::io::Error::last_os_error()));
        }
        let start = p as usize;
        let guard = REGISTER.lock().unwrap_or_else(|e| e.into_inner());
        let Some(slot) = SLOT
            .iter()
            .find(|s| s.start.load(Ordering::Acquire) == 0 && s.refs.load(Ordering::Acquire) == 0)
        else {
            drop(guard);
            // SAFETY: unmapping what we just mapped; nothing points into it.
            unsafe { libc::munmap(p, len) };
            return Err(Error::Compute(format!(
                "more than {SLOTS} mapped weight files at once"
            )));
        };
        slot.refs.store(1, Ordering::Release);
        slot.end.store(start + len, Ordering::Release);
        slot.start.store(start, Ordering::Release);
        LOW.fetch_min(start, Ordering::AcqRel);
        HIGH.fetch_max(start + len, Ordering::AcqRel);
        LIVE.fetch_add(1, Ordering::AcqRel);
        drop(guard);
        Ok(Mapping { slot, start, len })
    }

    /// The mapped bytes.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the mapping is alive while this handle holds its reference.
        unsafe { std::slice::from_raw_parts(self.start as *const u8, self.len) }
    }

    /// The `count` f32 values at byte `offset` (4-byte aligned, in bounds) as a `Vec`
    /// that views the mapping: no copy; freeing it releases the mapping, growing it moves
    /// it to the heap, writing to it touches only this process's copy of the pages.
    pub fn values(&self, offset: usize, count: usize) -> Result<Vec<f32>> {
        let bad = |why: &str| Error::Compute(format!("mapped values at {offset}: {why}"));
        if !(self.start + offset).is_multiple_of(4) {
            return Err(bad("not 4-byte aligned"));
        }
        if count == 0 || offset.checked_add(count * 4).is_none_or(|e| e > self.len) {
            return Err(bad("outside the file or empty"));
        }
        self.slot.refs.fetch_add(1, Ordering::AcqRel);
        // SAFETY: [offset, offset + 4 count) lies inside the live, writable mapping and
        // is 4-byte aligned; `Alloc` treats the pointer as allocated with exactly this
        // layout and releases it to the mapping (module docs). Any bytes are valid f32s.
        Ok(unsafe { Vec::from_raw_parts((self.start + offset) as *mut f32, count, count) })
    }

    /// [`Mapping::values`] as a tensor of `shape`.
    pub fn tensor(&self, offset: usize, count: usize, shape: impl Into<Shape>) -> Result<Tensor> {
        let v = self.values(offset, count)?;
        Tensor::from_vec(v, shape, &Device::Cpu).map_err(|e| {
            Error::Compute(format!(
                "mapped tensor at {offset}: {}",
                crate::error::candle_message(&e)
            ))
        })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        release(self.slot);
    }
}

/// `Tensor::cat(parts, 0)` — but when the parts are contiguous mapped tensors lying back
/// to back in one mapping (the cache writes fused projections' parts in that order), a
/// view of the whole range instead of a copy.
pub fn cat_rows(parts: &[Tensor]) -> candle_core::Result<Tensor> {
    if let Some(t) = adjacent(parts) {
        return Ok(t);
    }
    Tensor::cat(parts, 0)
}

fn adjacent(parts: &[Tensor]) -> Option<Tensor> {
    if parts.len() < 2 {
        return None;
    }
    let mut spans = Vec::with_capacity(parts.len());
    for p in parts {
        let (storage, layout) = p.storage_and_layout();
        let candle_core::Storage::Cpu(candle_core::CpuStorage::F32(data)) = &*storage else {
            return None;
        };
        if layout.contiguous_offsets() != Some((0, data.len())) {
            return None;
        }
        spans.push((data.as_ptr() as usize, data.len()));
    }
    let cols = parts[0].dims().get(1..)?.to_vec();
    if parts
        .iter()
        .any(|p| p.dims().get(1..) != Some(cols.as_slice()))
    {
        return None;
    }
    if spans.windows(2).any(|w| w[0].0 + w[0].1 * 4 != w[1].0) {
        return None;
    }
    let (first, _) = spans[0];
    let count: usize = spans.iter().map(|s| s.1).sum();
    let slot = slot_of(first)?;
    if first + count * 4 > slot.end.load(Ordering::Acquire) {
        return None;
    }
    slot.refs.fetch_add(1, Ordering::AcqRel);
    // SAFETY: the range lies inside one live mapping (the parts hold references to it),
    // 4-byte aligned as its first part; released to the mapping like any mapped Vec.
    let v = unsafe { Vec::from_raw_parts(first as *mut f32, count, count) };
    let rows: usize = parts.iter().map(|p| p.dims()[0]).sum();
    let mut dims = vec![rows];
    dims.extend(cols);
    Tensor::from_vec(v, dims, &Device::Cpu).ok()
}
