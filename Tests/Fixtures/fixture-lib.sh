# Shared by make-fixtures.sh and make-stranger-print.sh (sourced): run the
# old build's commands and record each in the transcript. The caller sets
# T (the touchstone binary), WORK, LOG, PASSCODE, N=0 and FAILED=0.

passline() { printf '%s\n' "$PASSCODE"; }

# record EXPECTED_CODE DESCRIPTION CODE OUTFILE ERRFILE
record() {
    local expected=$1 what=$2 code=$3 out=$4 err=$5 mark=ok
    LAST_CODE=$code
    [ "$code" = "$expected" ] || { mark="UNEXPECTED (wanted $expected)"; FAILED=1; }
    {
        printf '$ %s\n' "$what"
        printf 'exit %s %s\n' "$code" "$mark"
        printf 'stdout: '; cat "$out"; printf '\n'
        [ "$mark" = ok ] || { printf 'stderr: '; cat "$err"; printf '\n'; }
    } >>"$LOG"
    [ "$mark" = ok ] || { echo "FAILED: $what: exit $code, wanted $expected" >&2; cat "$err" >&2; }
}

# run EXPECTED DESCRIPTION -- ARGS...   (stdin/fds as redirected by the caller)
run() {
    local expected=$1 what=$2; shift 3
    N=$((N + 1))
    local out="$WORK/run$N.out" err="$WORK/run$N.err" code=0
    "$T" "$@" >"$out" 2>"$err" || code=$?
    record "$expected" "$what" "$code" "$out" "$err"
}

# touched EXPECTED FINGER_ID TOUCHES DESCRIPTION -- ARGS...
# Starts ARGS in the background, waits until it asks for a touch (or for
# enrol: has the reader open), touches with FINGER_ID TOUCHES times.
touched() {
    local expected=$1 id=$2 count=$3 what=$4; shift 5
    N=$((N + 1))
    local out="$WORK/run$N.out" err="$WORK/run$N.err" code=0 pid
    "$T" "$@" <&0 >"$out" 2>"$err" &  # <&0: a background job would get /dev/null
    pid=$!
    if [ "$count" = 1 ]; then
        # as the CLI tests do: touch once the prompt is on stderr
        for _ in $(seq 1 600); do
            grep -q 'touch the reader' "$err" 2>/dev/null && break
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
    fi
    "$T" sim touch "$id" --count "$count" --wait 60 >"$out.touch" 2>"$err.touch" \
        || echo "sim touch $id failed: $(cat "$err.touch")" >>"$err"
    wait "$pid" || code=$?
    record "$expected" "$what (touch $id x$count)" "$code" "$out" "$err"
}
