#!/usr/bin/env bash
# Checks model/lease.pml with spin (make model): the protocol as built must
# verify with no errors (also with on_expiry reconcile: -DRECONCILE), and
# each variant with a guard removed (-DNOFENCE: workgraph's fence
# predicate; -DNOGATE: the destination's mark; -DRECONCILE -DSPLIT: the
# uncertain_outcome hold opened outside the expiry's transaction;
# -DNOBLOCK and -DRECONCILE -DNOBLOCKDECIDE: a completion, or a person's
# done decision, that ignores work added while the item waited) must find
# its counterexample, so the model cannot silently stop checking anything.
# Needs spin and a C compiler (Debian: apt-get install spin gcc).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
command -v spin >/dev/null 2>&1 || { echo "model: spin is not installed (apt-get install spin)" >&2; exit 1; }
cc="${CC:-cc}"
command -v "$cc" >/dev/null 2>&1 || { echo "model: no C compiler ($cc) to build the verifier" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Compiled verifiers are kept here, each under the digest of what it was
# compiled from (spin's output, the compiler's version, the flags), and
# reused while that is the same: the compile is most of a check's CPU, and
# spin's output for an unchanged model is the same bytes. The search runs
# every time. Without a writable cache the verifiers are compiled each run.
cache="${XDG_CACHE_HOME:-$HOME/.cache}/workgraph/model"
# -O0: the searches take well under a second, the compile dominates.
# -w: the generated verifier trips gcc's -Wstringop-overflow on its undo
# buffers; the warnings are about spin's code, not the model.
ccflags="-O0 -w"

# build: in the current directory, makes ./pan from spin's pan.* files,
# from the cache when it holds the same build.
build() {
  local key
  key="$({ cat pan.b pan.c pan.h pan.m pan.p pan.t; "$cc" --version; echo "$ccflags"; } | sha256sum | cut -c1-32)"
  if [ -x "$cache/$key" ] && cp "$cache/$key" pan 2>/dev/null; then
    return 0
  fi
  # shellcheck disable=SC2086 # ccflags is a list of flags
  "$cc" $ccflags -o pan pan.c || return 1
  mkdir -p "$cache" 2>/dev/null && cp pan "$cache/$key.$$" 2>/dev/null && mv "$cache/$key.$$" "$cache/$key" 2>/dev/null
  return 0
}

# run NAME FLAGS...: generates, builds and runs the verifier (exhaustive
# search, assertions and invalid end states) and leaves its report in
# $work/NAME.out.
run() {
  local name=$1; shift
  mkdir -p "$work/$name"
  cp "$here/lease.pml" "$work/$name/"
  (cd "$work/$name" && spin -a "$@" lease.pml >/dev/null && build &&
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
run noblock -DNOBLOCK
expect noblock 'done_early'
run reconcile-noblock -DRECONCILE -DNOBLOCKDECIDE
expect reconcile-noblock 'done_early'
