#!/usr/bin/env bash
# Checks model/lease.pml with spin (make model): the protocol as built must
# verify with no errors (also with on_expiry reconcile: -DRECONCILE), and
# each variant with a guard removed (-DNOFENCE: workgraph's fence
# predicate; -DNOGATE: the destination's mark; -DRECONCILE -DSPLIT: the
# uncertain_outcome hold opened outside the expiry's transaction) must find
# its counterexample, so the model cannot silently stop checking anything.
# Needs spin and a C compiler (Debian: apt-get install spin gcc).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
command -v spin >/dev/null 2>&1 || { echo "model: spin is not installed (apt-get install spin)" >&2; exit 1; }
cc="${CC:-cc}"
command -v "$cc" >/dev/null 2>&1 || { echo "model: no C compiler ($cc) to build the verifier" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# run NAME FLAGS...: generates, compiles and runs the verifier (exhaustive
# search, assertions and invalid end states) and leaves its report in
# $work/NAME.out.
run() {
  local name=$1; shift
  mkdir -p "$work/$name"
  cp "$here/lease.pml" "$work/$name/"
  (cd "$work/$name" && spin -a "$@" lease.pml >/dev/null &&
    # -O0: the searches take well under a second, the compile dominates.
    # -w: the generated verifier trips gcc's -Wstringop-overflow on its
    # undo buffers; the warnings are about spin's code, not the model.
    "$cc" -O0 -w -o pan pan.c &&
    ./pan -m1000000 >"$work/$name.out" 2>&1) || { echo "model: $name: spin or the verifier failed" >&2; cat "$work/$name.out" >&2 2>/dev/null; exit 1; }
}

run fenced
run fenced-wide -DW=3 -DNL=4
run reconcile -DRECONCILE
run reconcile-wide -DRECONCILE -DW=3 -DNL=4
for name in fenced fenced-wide reconcile reconcile-wide; do
  grep -q 'errors: 0' "$work/$name.out" && ! grep -q 'Search not completed' "$work/$name.out" || {
    echo "model: $name: the protocol does not verify:" >&2; cat "$work/$name.out" >&2; exit 1; }
  echo "model: $name: verified ($(grep -o '[0-9]* states, stored' "$work/$name.out"))"
done

# expect NAME ASSERTION: the variant's search must stop on that assertion.
expect() {
  grep -q "assertion violated.*$2" "$work/$1.out" || {
    echo "model: $1: no counterexample violating $2 (the model no longer checks it):" >&2; cat "$work/$1.out" >&2; exit 1; }
  echo "model: $1: counterexample found ($(grep -o 'assertion violated.*' "$work/$1.out"))"
}
run nofence -DNOFENCE
expect nofence 'stale_wg'
run nogate -DNOGATE
expect nogate 'stale_gate'
run reconcile-split -DRECONCILE -DSPLIT
expect reconcile-split 'granted_undecided'
