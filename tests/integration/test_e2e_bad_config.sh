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
echo "PASS ($TEST_NAME)"
