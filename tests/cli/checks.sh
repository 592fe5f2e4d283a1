# checks.sh: the assertions the CLI suites share, sourced after they set
# $tmp (their scratch directory); they count into $pass and $fails.  A
# suite that sets one_line_errors=any (every failing exit) or =2 (usage
# errors) also requires the error on stderr to be one line.
check() {  # check DESCRIPTION EXPECTED_RC PATTERN -- command...
  desc=$1 want=$2 pat=$3
  shift 4
  out=$("$@" 2>"$tmp/stderr")
  rc=$?
  err=$(cat "$tmp/stderr")
  if [ "$rc" != "$want" ]; then
    echo "FAIL $desc: exit $rc, wanted $want"; echo "$out" | head -5; echo "$err"
    fails=$((fails + 1)); return
  fi
  if [ -n "$pat" ] && ! printf '%s\n%s\n' "$out" "$err" | grep -q -- "$pat"; then
    echo "FAIL $desc: no '$pat' in output"; echo "$out" | head -20; echo "$err"
    fails=$((fails + 1)); return
  fi
  if [ "$want" != 0 ] && { [ "${one_line_errors:-}" = any ] || [ "${one_line_errors:-}" = "$want" ]; } &&
     [ "$(printf '%s' "$err" | wc -l)" -gt 0 ]; then
    echo "FAIL $desc: error is not one line:"; echo "$err"
    fails=$((fails + 1)); return
  fi
  pass=$((pass + 1))
}
nocheck() {  # nocheck DESCRIPTION PATTERN -- command...: PATTERN must not appear
  desc=$1 pat=$2
  shift 3
  if "$@" 2>&1 | grep -q -- "$pat"; then
    echo "FAIL $desc: '$pat' in output"; fails=$((fails + 1)); return
  fi
  pass=$((pass + 1))
}
