# e2e_lib.sh - what the end-to-end scripts share (sourced, not run): a scratch
# directory $tmp removed on exit, pass/fail counting, `check NAME COMMAND...`
# and the closing tally.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
check() { # check NAME COMMAND... : passes if the command succeeds, else shows its output
  local name=$1
  shift
  if "$@" >"$tmp/check.out" 2>&1; then
    ok
  else
    bad "$name"
    sed 's/^/  /' "$tmp/check.out" | head -20
  fi
}
finish() { # finish LABEL : prints the tally; fails if any check failed
  echo "$1: $pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}
