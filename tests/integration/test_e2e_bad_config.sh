#!/bin/sh
# A bad FTMPI_* value makes FT_Init fail (ft_sgd exits 2) with a message that
# names the variable and the value, before anything is started.
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
# nothing listens here: FT_Init must refuse the value before connecting
FTMPI_LIGHTHOUSE=127.0.0.1:1
export FTMPI_LIGHTHOUSE

check_bad() {
    var=$1
    val=$2
    out=$TEST_TMPDIR/bad_$var.out
    env "$var=$val" timeout -s KILL 30 "$MPIRUN" -np 1 --bind-to none "$E2E_SGD_BIN" --steps 1 \
        >"$out" 2>&1 </dev/null
    rc=$?
    [ $rc -eq 2 ] || { cat "$out" >&2; die "$var='$val': exit status $rc, want 2 (FT_Init failed)"; }
    grep -q "$var" "$out" || { cat "$out" >&2; die "$var='$val': no message names $var"; }
    grep -q "FT_Init failed" "$out" || { cat "$out" >&2; die "$var='$val': FT_Init did not fail"; }
    echo "ok: $var='$val' refused: $(grep "$var" "$out" | head -n 1)"
}

check_bad FTMPI_TIMEOUT_MS abc
check_bad FTMPI_TIMEOUT_MS 0
check_bad FTMPI_MIN_REPLICAS -3
check_bad FTMPI_BACKEND carrier-pigeon
check_bad FTMPI_INIT_SYNC maybe
check_bad FTMPI_LOG_LEVEL loud
check_bad FTMPI_CHUNK_BYTES 12q
# a backend that cannot run on this node: FT_Init refuses it, naming the
# backend and why (where a GPU and NCCL are present nccl runs: skipped)
out=$TEST_TMPDIR/nccl.out
FTMPI_BACKEND=nccl timeout -s KILL 30 "$MPIRUN" -np 1 --bind-to none "$E2E_SGD_BIN" --steps 1 \
    >"$out" 2>&1 </dev/null
rc=$?
if grep -q 'FTMPI_BACKEND=nccl cannot run on this node: ' "$out" ||
    grep -q 'FTMPI_BACKEND=nccl: no such backend in this build' "$out"; then
    [ $rc -eq 2 ] || { cat "$out" >&2; die "FTMPI_BACKEND=nccl refused, but exit status $rc, want 2"; }
    echo "ok: FTMPI_BACKEND=nccl refused: $(grep 'FTMPI_BACKEND=nccl' "$out" | head -n 1)"
elif grep -q 'FT_Init: .*backend nccl' "$out"; then
    echo "note: nccl runs on this node (a GPU is here): its refusal is not tested"
else
    cat "$out" >&2
    die "FTMPI_BACKEND=nccl neither refused with a reason nor started (exit $rc)"
fi

# misspelled names: warned about once each, with the nearest setting
out=$TEST_TMPDIR/misspelled.out
FTMPI_LOG_LEVL=debug FTMPI_TIMEOUT=5 FTMPI_BIN=/nowhere timeout -s KILL 30 "$MPIRUN" -np 1 \
    --bind-to none "$E2E_SGD_BIN" --steps 1 >"$out" 2>&1 </dev/null
for pair in FTMPI_LOG_LEVL:FTMPI_LOG_LEVEL FTMPI_TIMEOUT:FTMPI_TIMEOUT_MS; do
    bad=${pair%%:*} good=${pair#*:}
    n=$(grep -c "$bad is not a libftmpi setting and is ignored; did you mean $good?" "$out")
    [ "$n" -eq 1 ] || { cat "$out" >&2; die "$bad: $n warnings naming $good, want 1"; }
done
! grep -q 'FTMPI_BIN is not' "$out" || { cat "$out" >&2; die "FTMPI_BIN (a script's name) was warned about"; }
echo "ok: misspelled names warned about: $(grep -c 'is not a libftmpi setting' "$out")"
# a lighthouse that is down, a host name that does not resolve: the first
# failure is a warning at once that names the address and the system's or
# the resolver's error (one attempt at a step, a short quorum timeout)
for lh in 127.0.0.1:1 no-such-host.invalid:29510; do
    out=$TEST_TMPDIR/lh_down.out
    FTMPI_LIGHTHOUSE=$lh FTMPI_QUORUM_TIMEOUT_MS=1000 timeout -s KILL 60 "$MPIRUN" -np 1 \
        --bind-to none "$E2E_SGD_BIN" --steps 1 --max-attempts 1 >"$out" 2>&1 </dev/null
    case $lh in
    127.*) want="$lh: Connection refused" ;;
    *) want="$lh: cannot resolve 'no-such-host.invalid': " ;;
    esac
    grep -q "warn.*lighthouse.*$want" "$out" || { cat "$out" >&2; die "FTMPI_LIGHTHOUSE=$lh: no warning naming '$want'"; }
    echo "ok: FTMPI_LIGHTHOUSE=$lh: $(grep "$want" "$out" | head -n 1)"
done
echo "PASS ($TEST_NAME)"
