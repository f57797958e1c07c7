//! The vector instruction set the kernels run at, chosen at run time: the widest the CPU
//! has (AVX-512 with AMX tiles, AVX-512, AVX2 + FMA, the portable code last), or a
//! narrower one named by `CODESCOPE_ISA` (`amx`, `avx512`, `avx2`, `portable`; `auto` or
//! unset: the widest). AMX differs from AVX-512 only in LM heads' products
//! ([`crate::amx`]). The same choice caps the matrix products of the `gemm` crate (candle's
//! included), through the patched `gemm-common` in `vendor/`: one variable runs every
//! kernel of the process on one path, so tests on any CPU can run every path it has.
//!
//! Every kernel with SIMD variants is defined once, as a portable body, and compiled per
//! level by [`simd_kernel!`](crate::simd_kernel): the AVX2 variant with eight f32 lanes, the
//! AVX-512 variant with sixteen. Elementwise kernels give the same bits on every path;
//! reductions sum in a different order on sixteen lanes (differences of a few ulps,
//! bounded in codescope's tests).

use std::sync::atomic::{AtomicU8, Ordering};

/// The environment variable that names a narrower instruction set than the widest.
pub const ENV: &str = "CODESCOPE_ISA";

/// A vector instruction-set level, narrowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Isa {
    /// No SIMD intrinsics or target features: what the compiler makes of the portable code.
    Portable,
    /// AVX2 + FMA (x86-64-v3): 8 f32 lanes.
    Avx2,
    /// AVX-512 F/BW/VL/DQ with AVX2 + FMA (x86-64-v4): 16 f32 lanes.
    Avx512,
    /// AVX-512 and AMX tiles (bf16): as AVX-512, but for the products of LM heads, on
    /// tiles to f32 accuracy ([`crate::amx`]).
    Amx,
}

impl Isa {
    /// Every level, narrowest first.
    pub const ALL: [Isa; 4] = [Isa::Portable, Isa::Avx2, Isa::Avx512, Isa::Amx];

    /// The name `CODESCOPE_ISA` takes.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Portable => "portable",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
            Isa::Amx => "amx",
        }
    }

    /// The level `CODESCOPE_ISA` names.
    pub fn parse(s: &str) -> Option<Isa> {
        Isa::ALL.into_iter().find(|i| i.name() == s)
    }

    /// f32 lanes of one vector register.
    pub fn lanes(self) -> usize {
        match self {
            Isa::Portable => 1,
            Isa::Avx2 => 8,
            Isa::Avx512 | Isa::Amx => 16,
        }
    }

    /// The level as `gemm-common`'s cap counts it (x86-64-v4 = 4).
    fn x86_level(self) -> u8 {
        match self {
            Isa::Portable => 1,
            Isa::Avx2 => 3,
            Isa::Avx512 | Isa::Amx => 4,
        }
    }
}

impl std::fmt::Display for Isa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The widest level this CPU runs.
pub fn detected() -> Isa {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx2") && has!("fma") {
            if has!("avx512f") && has!("avx512bw") && has!("avx512vl") && has!("avx512dq") {
                if crate::amx::available() {
                    return Isa::Amx;
                }
                return Isa::Avx512;
            }
            return Isa::Avx2;
        }
    }
    Isa::Portable
}

/// Every level this CPU runs, narrowest first (what a test of every path iterates).
pub fn available() -> Vec<Isa> {
    let top = detected();
    Isa::ALL.into_iter().filter(|&i| i <= top).collect()
}

/// The level `CODESCOPE_ISA` asks for: `Ok(None)` when it is unset, empty or `auto`; an
/// error, in one line, for a name it does not know or a level this CPU lacks.
pub fn requested() -> Result<Option<Isa>, String> {
    let Some(raw) = std::env::var_os(ENV) else {
        return Ok(None);
    };
    let value = raw.to_string_lossy();
    let value = value.trim();
    if value.is_empty() || value == "auto" {
        return Ok(None);
    }
    let Some(isa) = Isa::parse(value) else {
        let shown: String = value
            .chars()
            .take(40)
            .map(|c| if c.is_control() { '?' } else { c })
            .collect();
        return Err(format!(
            "{ENV}={shown}: not an instruction set (amx, avx512, avx2, portable or auto)"
        ));
    };
    let top = detected();
    if isa > top {
        return Err(format!(
            "{ENV}={isa}: this CPU does not run it (the widest it runs: {top})"
        ));
    }
    Ok(Some(isa))
}

/// 0: not chosen yet; otherwise the chosen level's index in [`Isa::ALL`] + 1.
static ACTIVE: AtomicU8 = AtomicU8::new(0);

/// Choose the level for the process, from `CODESCOPE_ISA` or the CPU, and cap `gemm`'s
/// products to it. Call at start-up, before the first matrix product (`gemm` chooses its
/// kernels at its first product); an invalid `CODESCOPE_ISA` is returned as the one-line
/// error (the level is then the widest the CPU runs).
pub fn init() -> Result<Isa, String> {
    let (isa, err) = match requested() {
        Ok(r) => (r.unwrap_or_else(detected), None),
        Err(e) => (detected(), Some(e)),
    };
    set_active(isa);
    match err {
        Some(e) => Err(e),
        None => Ok(isa),
    }
}

fn set_active(isa: Isa) {
    #[cfg(target_arch = "x86_64")]
    gemm_common::set_x86_level_cap(isa.x86_level());
    let idx = Isa::ALL.iter().position(|&i| i == isa).unwrap_or(0);
    ACTIVE.store(idx as u8 + 1, Ordering::Relaxed);
}

/// The level the kernels run at ([`init`]'s choice; chosen on first use if nothing
/// called it).
#[inline]
pub fn active() -> Isa {
    match ACTIVE.load(Ordering::Relaxed) {
        0 => {
            let _ = init();
            active()
        }
        k => Isa::ALL[(k - 1) as usize],
    }
}

/// Define a kernel from a portable body, compiled at every [`Isa`] level.
///
/// `simd_kernel!(pub fn name(a: A, b: B) -> R = body);` defines `name(isa, a, b)`, which
/// runs `body(a, b)` compiled with AVX-512 (F/BW/VL/DQ + AVX2 + FMA), with AVX2 + FMA, or
/// with neither, as `isa` says (capped at the CPU's own level, so any `isa` is safe). With
/// `lanes`, `body` is generic over its number of f32 accumulator lanes (`body::<L>`): 16
/// on AVX-512, 8 otherwise. The body must be `#[inline(always)]` so that the target
/// features reach its loops.
#[macro_export]
macro_rules! simd_kernel {
    ($(#[$m:meta])* $vis:vis fn $name:ident($($a:ident: $t:ty),* $(,)?) $(-> $r:ty)? = $body:ident $(, $lanes:ident)?;) => {
        $(#[$m])*
        #[inline]
        $vis fn $name(isa: $crate::isa::Isa, $($a: $t),*) $(-> $r)? {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")]
                unsafe fn wide($($a: $t),*) $(-> $r)? {
                    $crate::simd_kernel!(@call $body, 16, $($lanes)?; $($a),*)
                }
                #[target_feature(enable = "avx2,fma")]
                unsafe fn avx2($($a: $t),*) $(-> $r)? {
                    $crate::simd_kernel!(@call $body, 8, $($lanes)?; $($a),*)
                }
                match isa.min($crate::isa::detected_cached()) {
                    // SAFETY: capped at the CPU's own level: it has the features.
                    $crate::isa::Isa::Amx | $crate::isa::Isa::Avx512 => return unsafe { wide($($a),*) },
                    // SAFETY: as above.
                    $crate::isa::Isa::Avx2 => return unsafe { avx2($($a),*) },
                    $crate::isa::Isa::Portable => {}
                }
            }
            let _ = isa;
            $crate::simd_kernel!(@call $body, 8, $($lanes)?; $($a),*)
        }
    };
    (@call $body:ident, $n:literal, lanes; $($a:ident),*) => { $body::<$n>($($a),*) };
    (@call $body:ident, $n:literal, ; $($a:ident),*) => { $body($($a),*) };
}

/// 0: not detected yet; otherwise [`detected`]'s index in [`Isa::ALL`] + 1.
static DETECTED: AtomicU8 = AtomicU8::new(0);

/// [`detected`], remembered (a load per call).
#[doc(hidden)]
#[inline]
pub fn detected_cached() -> Isa {
    match DETECTED.load(Ordering::Relaxed) {
        0 => {
            let d = detected();
            let idx = Isa::ALL.iter().position(|&i| i == d).unwrap_or(0);
            DETECTED.store(idx as u8 + 1, Ordering::Relaxed);
            d
        }
        k => Isa::ALL[(k - 1) as usize],
    }
}
