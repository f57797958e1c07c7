#![cfg_attr(not(feature = "std"), no_std)]

use core::sync::atomic::{AtomicBool, Ordering::Relaxed};

#[cfg(feature = "wasm-simd128-enable")]
pub const DEFAULT_WASM_SIMD128: bool = true;

#[cfg(not(feature = "wasm-simd128-enable"))]
pub const DEFAULT_WASM_SIMD128: bool = false;

static WASM_SIMD128: AtomicBool = AtomicBool::new(DEFAULT_WASM_SIMD128);

#[inline]
pub fn get_wasm_simd128() -> bool {
    WASM_SIMD128.load(Relaxed)
}
#[inline]
pub fn set_wasm_simd128(enable: bool) {
    WASM_SIMD128.store(enable, Relaxed)
}

extern crate alloc;

pub mod cache;

pub mod gemm;
pub mod gemv;
pub mod gevv;

pub mod horizontal_microkernel;
pub mod microkernel;

pub mod pack_operands;
pub mod simd;

pub use pulp;

#[derive(Copy, Clone, Debug)]
pub enum Parallelism {
    None,
    #[cfg(feature = "rayon")]
    Rayon(usize),
}

pub struct Ptr<T: ?Sized>(pub *mut T);

impl<T: ?Sized> Clone for Ptr<T> {
    #[inline]
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: ?Sized> Copy for Ptr<T> {}

unsafe impl<T: ?Sized> Send for Ptr<T> {}
unsafe impl<T: ?Sized> Sync for Ptr<T> {}

impl<T> Ptr<T> {
    #[inline(always)]
    pub fn wrapping_offset(self, offset: isize) -> Self {
        Ptr::<T>(self.0.wrapping_offset(offset))
    }
    #[inline(always)]
    pub fn wrapping_add(self, offset: usize) -> Self {
        Ptr::<T>(self.0.wrapping_add(offset))
    }
}

#[cfg(not(feature = "std"))]
#[macro_export]
macro_rules! feature_detected {
    ($tt: tt) => {
        cfg!(feature = $tt)
    };
}

// codescope's patch (vendor/gemm-common/PATCH.md): a cap on the x86 level the kernels
// are chosen for, so that one process can be made to run the AVX2+FMA or scalar products
// on a CPU with AVX-512. The functions are chosen once per type, at the first product:
// set the cap before it.
#[cfg(all(feature = "std", any(target_arch = "x86", target_arch = "x86_64")))]
static X86_LEVEL_CAP: core::sync::atomic::AtomicU8 = core::sync::atomic::AtomicU8::new(u8::MAX);

/// The widest x86 level the products may use from now on: 4 (AVX-512, x86-64-v4), 3
/// (AVX2 + FMA) or anything lower (the scalar kernels). Only products whose kernel has
/// not been chosen yet (the first product of each type) follow it.
#[cfg(all(feature = "std", any(target_arch = "x86", target_arch = "x86_64")))]
pub fn set_x86_level_cap(level: u8) {
    X86_LEVEL_CAP.store(level, core::sync::atomic::Ordering::Relaxed);
}

/// May the kernels for `feature` be chosen under the cap? (`avx512*` needs level 4,
/// `avx*`/`fma`/`f16c` level 3; other features are not capped.)
#[cfg(all(feature = "std", any(target_arch = "x86", target_arch = "x86_64")))]
#[doc(hidden)]
pub fn x86_level_allows(feature: &str) -> bool {
    let cap = X86_LEVEL_CAP.load(core::sync::atomic::Ordering::Relaxed);
    if feature.starts_with("avx512") {
        cap >= 4
    } else if feature.starts_with("avx") || feature == "fma" || feature == "f16c" {
        cap >= 3
    } else {
        true
    }
}

#[cfg(all(feature = "std", any(target_arch = "x86", target_arch = "x86_64")))]
#[macro_export]
macro_rules! feature_detected {
    ($tt: tt) => {
        $crate::x86_level_allows($tt) && ::std::arch::is_x86_feature_detected!($tt)
    };
}
#[cfg(all(feature = "std", target_arch = "aarch64"))]
#[macro_export]
macro_rules! feature_detected {
    ($tt: tt) => {
        ::std::arch::is_aarch64_feature_detected!($tt)
    };
}
#[cfg(all(feature = "std", target_family = "wasm"))]
#[macro_export]
macro_rules! feature_detected {
    ("simd128") => {
        $crate::get_wasm_simd128()
    };
}
