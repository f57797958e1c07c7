#!/usr/bin/env bash
# Time and peak resident memory of the syntax layer (parse, roles, every graph) on the hostile
# shapes of tests/it/syntax_worst_case.rs (about 1 MB each), release build. Issue #16's target:
# under 2 s and under 1 GB per file.
#
#   tools/syntax_worst_case.sh            # every shape
#   tools/syntax_worst_case.sh NAME...    # some (py_attribute_chain, java_flat_array, ...)
#
# Each shape runs in its own process (the test binary's ignored child test), timed by
# /usr/bin/time. Check `uptime` first: the machine's other load is in the wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
exe=$(cargo test --release --test it --no-run 2>&1 | grep -o "$CARGO_TARGET_DIR/release/deps/it-[0-9a-f]*" | tail -1)
[ -x "$exe" ] || { echo "could not build the release test binary" >&2; exit 1; }
shapes=("$@")
if [ ${#shapes[@]} -eq 0 ]; then
  shapes=(py_attribute_chain py_binary_operators py_nested_parens py_nested_lists py_nested_calls
          py_flat_list py_many_ifs py_long_elif java_field_chain java_binary_operators java_nested_parens java_flat_array)
fi
printf '%-24s %8s %10s  %s\n' shape seconds "peak MB" "what the child printed"
for s in "${shapes[@]}"; do
  out=$(CODESCOPE_WORST_CASE=$s /usr/bin/time -f 'TIME %e %M' "$exe" \
        syntax_worst_case::worst_case_child --exact --ignored --nocapture --test-threads 1 2>&1)
  t=$(echo "$out" | awk '/^TIME/ {print $2}')
  kb=$(echo "$out" | awk '/^TIME/ {print $3}')
  line=$(echo "$out" | grep -o "$s: .*" || echo "FAILED: $(echo "$out" | tail -3)")
  printf '%-24s %8s %10d  %s\n' "$s" "$t" "$((kb / 1024))" "${line#"$s": }"
done
