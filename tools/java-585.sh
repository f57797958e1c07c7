#!/usr/bin/env bash
# The ~585-code-token Java file of docs/performance.md's streaming figures: the three
# bundled Java samples (assets/samples/java) as static members of one class, their
# imports hoisted. Writes it to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=assets/samples/java
grep -h '^import ' "$dir"/*.java | sort -u
echo
echo "public class Samples {"
for f in "$dir"/BinarySearch.java "$dir"/Inventory.java "$dir"/Shapes.java; do
    grep -v '^import ' "$f" | sed -e '/./,$!d' \
        -e 's/^public class /static class /' \
        -e 's/^final class /static final class /' \
        -e 's/^sealed interface /sealed interface /' \
        -e 's/^/    /' -e 's/^    $//'
    echo
done
echo "}"
