//! codescope's hot numeric loops, in a crate of their own so that they are compiled
//! optimised in every build profile.
//!
//! codescope's debug and test builds compile its own code at opt-level 0 (fast to
//! build) and its dependencies at opt-level 3. Code like the kernels below is then
//! 10–50x slower than in a release build: SIMD intrinsics become function calls, and
//! iterator adapters are not inlined. A profile of the test suite found more than
//! half of its CPU time in such loops (softmax, entropy logarithms, aggregation, counts;
//! the LM head's log-sum-exp over a 262,144-entry vocabulary; AST-Probe's pairwise loss;
//! listing the motif graph's O(tokens²) edges; the study's graph edit distance).
//! As a separate package they get opt-level 3 (`[profile.dev.package.codescope-kernels]`
//! in the workspace manifest), like the dependencies, and cost seconds to build.
//!
//! Only loops over slices live here: no codescope types. The meaning and the tests
//! are codescope's (`model::kernels`, `analysis::{relations, entropy, attention}`),
//! which call or re-export these functions.

pub mod amx;
pub mod analysis;
pub mod ged;
pub mod graph;
pub mod head;
pub mod isa;
pub mod lm;
pub mod nn;
pub mod probe;
pub mod t5;
