# tests/cli/tap.sh: the check helpers that the providerctl shell tests share,
# sourced by them after they set $PCTL (the binary), $PROV_WRAP (a command to
# run it under, or empty) and $tmp (a scratch directory). Each check prints
# one TAP line ("ok N - ..." / "not ok N - ..." with the outcome); $fails
# counts the failures.

have_node=0
command -v node >/dev/null 2>&1 && have_node=1

n=0
fails=0
rc=0

# run ARGS...: runs providerctl; $rc, $tmp/out, $tmp/err hold the outcome.
run() {
    $PROV_WRAP "$PCTL" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
}
pass() { n=$((n + 1)); echo "ok $n - $1"; }
fail() {
    n=$((n + 1)); fails=$((fails + 1))
    echo "not ok $n - $1"
    echo "#   exit status $rc"
    sed 's/^/#   stdout: /' "$tmp/out"
    sed 's/^/#   stderr: /' "$tmp/err"
}
# exits DESC CODE
exits() { if [ "$rc" = "$2" ]; then pass "$1: exit $2"; else fail "$1: exit $2 expected"; fi; }
# says DESC TEXT: stdout contains TEXT
says() { if grep -qF -- "$2" "$tmp/out"; then pass "$1"; else fail "$1: stdout lacks '$2'"; fi; }
# complains DESC TEXT: stderr contains TEXT
complains() { if grep -qF -- "$2" "$tmp/err"; then pass "$1"; else fail "$1: stderr lacks '$2'"; fi; }
# lacks DESC TEXT: neither stdout nor stderr contains TEXT
lacks() {
    if grep -qF -- "$2" "$tmp/out" "$tmp/err"; then fail "$1: output has '$2'"; else pass "$1"; fi
}
# json DESC EXPR FALLBACK: stdout is JSON j for which the JS expression EXPR
# holds (without node: stdout contains FALLBACK).
json() {
    if [ "$have_node" = 1 ]; then
        if node -e "const j = JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8'));
                    process.exit((${2}) ? 0 : 1);" "$tmp/out" 2>>"$tmp/err"; then
            pass "$1"
        else
            fail "$1: JSON does not satisfy: $2"
        fi
    else
        says "$1" "$3"
    fi
}
