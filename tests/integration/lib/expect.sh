# Sourced by the CLI tests of hostile input (after common.sh, with $gattn set).
# expect CODE PATTERN ARGS...: `gattn ARGS...` exits CODE within 10 s and 4 GB of address space (a
# hang or a read of /dev/zero fails the test instead of stalling the suite or the machine) with one
# stderr line that matches PATTERN and is no "internal error".
expect() {
  local code=$1 pattern=$2
  shift 2
  local err rc
  err=$(ulimit -v 4000000; timeout 10 "$gattn" "$@" 2>&1 >/dev/null); rc=$?
  [[ $rc -ne 124 ]] || fail "gattn $*: still running after 10 s (a hang)"
  [[ $rc -eq $code ]] || fail "gattn $*: exit $rc, expected $code ($err)"
  [[ $(wc -l <<<"$err") -eq 1 ]] || fail "gattn $*: more than one line: $err"
  grep -q -- "$pattern" <<<"$err" || fail "gattn $*: '$err' does not mention '$pattern'"
  ! grep -q "internal error" <<<"$err" || fail "gattn $*: $err"
}
