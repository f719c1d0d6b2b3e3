#!/bin/sh
# The drop-in's watchdog hub believes only the job (issue 35 item 2;
# mpi_shim/hub.h): 4 ranks of an unmodified program (shim_patterns barrier)
# under libftmpi_pmpi wait at a gate (a file, outside MPI) after 100
# iterations; while they wait, a real process (shim_hub_forge) connects to
# the hub's real port and sends a forged HELLO claiming world rank 1, 2
# and 3 in turn, each followed by a close (before the fix: "world rank(s)
# 1 lost; aborting the job", exit 70).  Then the gate opens:
#  - with a job secret (FTMPI_TOKEN_FILE): the hub refuses each forged
#    connection (no handshake), and an insider that proves the secret and
#    claims the live world rank 1 gets REFUSED; the job ends 0 with the
#    results of the same program without the shim, bit for bit, no rank
#    lost;
#  - without a secret, after the hub said every rank joined: the forged
#    claims are second claims of live ranks, refused alike; the same end.
# The hub listens on FTMPI_BIND_HOST (the address the ranks advertise),
# "hostname" included (the node's name, when it resolves here).
. "$top_srcdir/tests/integration/common.sh"
need_mpirun
need_cmd timeout
FTMPI_LOG_LEVEL=info # the hub's address and its "joined" line
lib_test_env
SHIM="$top_builddir/.libs/libftmpi_pmpi.so"
[ -f "$SHIM" ] || skip "no $SHIM (shared libraries disabled?)"
PRELOAD=$(san_preload "$SHIM")
PAT="$top_builddir/tests/shim/shim_patterns"
FORGE="$top_builddir/tests/shim/shim_hub_forge"
[ -x "$FORGE" ] || skip "$FORGE not built"
NP=4
T=$TEST_TMPDIR
FTMPI_BIND_HOST=127.0.0.1
export FTMPI_BIND_HOST
(umask 077 && printf 'hub-job-secret-5d1f0c7a93e24b68a0c2e9f17b4d3a86\n' > "$T/token")

results() { grep -E "^patterns barrier rank=[0-9]+ iters=" "$1" | sort; }

# LOG: runs the job in the background, in its own process group ($JOB)
start() {
    setsid "$MPIRUN" -np $NP -x LD_PRELOAD="$PRELOAD" -x SHIM_P_GATE="$T/go-$1:100" \
        "$PAT" barrier > "$T/$1.log" 2>&1 &
    JOB=$!
    register_pgid $JOB
}

hub_addr() { sed -n 's/.*libftmpi_pmpi: watchdog on (hub \([^ ,]*\).*/\1/p' "$1" | head -n 1; }

# NAME: the job ends 0 with the reference results, no rank lost
finish() {
    touch "$T/go-$1"
    wait_pid_timeout $JOB 120 || { cat "$T/$1.log"; die "$1: the job did not end"; }
    wait $JOB
    rc=$?
    if [ $rc -ne 0 ] || file_has "$T/$1.log" 'lost; aborting|lost and maybe still there'; then
        grep -E 'lost|refused|forge|hub' "$T/$1.log"
        die "$1: the job ended with status $rc after the forged hellos"
    fi
    results "$T/$1.log" > "$T/$1.res"
    [ "$(wc -l < "$T/$1.res")" -eq $NP ] || { cat "$T/$1.log"; die "$1: not every rank finished"; }
    cmp -s "$T/ref.res" "$T/$1.res" ||
        { diff "$T/ref.res" "$T/$1.res"; die "$1: results differ from plain MPI's"; }
}

# ---- reference: the same program without the shim
timeout 120 "$MPIRUN" -np $NP "$PAT" barrier > "$T/ref.log" 2>&1 || { cat "$T/ref.log"; die "the plain run failed"; }
results "$T/ref.log" > "$T/ref.res"
[ "$(wc -l < "$T/ref.res")" -eq $NP ] || { cat "$T/ref.log"; die "the plain run printed no results"; }

# ---- with a job secret
FTMPI_TOKEN_FILE=$T/token
export FTMPI_TOKEN_FILE
start secret
wait_until 120 sh -c "[ \$(grep -c '^patterns gate' '$T/secret.log') -eq $NP ]" ||
    { cat "$T/secret.log"; die "secret: the ranks did not reach the gate"; }
ADDR=$(hub_addr "$T/secret.log")
[ -n "$ADDR" ] || { cat "$T/secret.log"; die "secret: no hub address in the log"; }
case $ADDR in
"$FTMPI_BIND_HOST":*) ;;
*) die "secret: the hub listens on $ADDR, not on FTMPI_BIND_HOST=$FTMPI_BIND_HOST" ;;
esac
(unset FTMPI_TOKEN_FILE && "$FORGE" "$ADDR" 30 hello 1 2 3) > "$T/forge-secret.out" 2>&1 ||
    { cat "$T/forge-secret.out"; die "secret: shim_hub_forge failed"; }
"$FORGE" "$ADDR" 30 claim 1 >> "$T/forge-secret.out" 2>&1
cat "$T/forge-secret.out"
finish secret
[ "$(grep -c 'closed by the hub' "$T/forge-secret.out")" -eq 3 ] || die "secret: the hub kept a forged connection"
grep -q '^claim 1: refused' "$T/forge-secret.out" || die "secret: the hub took a second claim of the live world rank 1"
file_has "$T/secret.log" 'watchdog hub refused the connection from 127\.0\.0\.1:[0-9]+: no job-secret handshake' ||
    { cat "$T/secret.log"; die "secret: no refusal logged"; }
file_has "$T/secret.log" 'refused the connection .*: a second claim of world rank 1 \(it is live\)' ||
    { cat "$T/secret.log"; die "secret: the insider's claim was not refused as a second claim"; }
echo "secret: 3 forged hellos and a second claim refused, the job ended 0 with plain MPI's results ($(head -n 1 "$T/secret.res"))"

# ---- without a job secret: the forged claims come after every rank joined
unset FTMPI_TOKEN_FILE
start open
wait_until 120 sh -c "[ \$(grep -c '^patterns gate' '$T/open.log') -eq $NP ]" ||
    { cat "$T/open.log"; die "open: the ranks did not reach the gate"; }
wait_until 60 file_has "$T/open.log" 'watchdog hub: the 3 other rank\(s\) joined \(no job secret\)' ||
    { cat "$T/open.log"; die "open: the hub did not say every rank joined"; }
ADDR=$(hub_addr "$T/open.log")
"$FORGE" "$ADDR" 30 hello 1 2 3 > "$T/forge-open.out" 2>&1 ||
    { cat "$T/forge-open.out"; die "open: shim_hub_forge failed"; }
cat "$T/forge-open.out"
finish open
[ "$(grep -c 'closed by the hub' "$T/forge-open.out")" -eq 3 ] || die "open: the hub kept a forged connection"
file_has "$T/open.log" 'refused the connection from .*: a second claim of world rank 1 \(it is live\)' ||
    { cat "$T/open.log"; die "open: no refusal logged"; }
echo "open: 3 forged second claims refused, the job ended 0 with plain MPI's results"

# ---- FTMPI_BIND_HOST=hostname (multi-node jobs): the hub binds the node's
# name, as the ranks' servers do (before: "hostname" taken as a host name,
# no watchdog at all)
H=$(hostname)
ADDRS=$(getent ahosts "$H" 2>/dev/null | awk '{ print $1 }' | sort -u)
if [ -z "$ADDRS" ]; then
    echo "hostname: skipped ('$H' does not resolve here)"
    exit 0
fi
FTMPI_TOKEN_FILE=$T/token FTMPI_BIND_HOST=hostname SHIM_P_ITERS=20 \
    timeout 120 "$MPIRUN" -np $NP -x LD_PRELOAD="$PRELOAD" "$PAT" barrier > "$T/host.log" 2>&1 ||
    { cat "$T/host.log"; die "hostname: the job failed"; }
! file_has "$T/host.log" 'runs without its watchdog' || { cat "$T/host.log"; die "hostname: a rank ran without its watchdog"; }
ADDR=$(hub_addr "$T/host.log")
HOST=${ADDR%:*}
HOST=${HOST#[}
HOST=${HOST%]}
echo "$ADDRS" | grep -qxF "$HOST" || die "hostname: the hub listens on $ADDR, not on an address of '$H' ($ADDRS)"
echo "hostname: the hub listens on $ADDR, an address of '$H'"
