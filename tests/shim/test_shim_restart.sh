#!/bin/sh
# Restart from the code's own files (issue 28 item 4): examples/shim_stencil
# (C) and examples/shim_stencil_f.f90 (Fortran, built here with mpifort),
# plain MPI codes with a halo exchange, an allreduce of the residual and a
# restart file every 20 iterations, run as
#     ftmpi-run --replica-id stencil --max-restarts 3 -- \
#         mpirun [--enable-recovery] -np 4 -x LD_PRELOAD=libftmpi_pmpi.so CODE 300 20 DIR
# World rank 2 is SIGKILLed, and in another run SIGSTOPped, once both of
# its restart slots exist (after iteration 40): the drop-in ends the job
# with a non-zero status naming rank 2 (a SIGKILL under plain mpirun: Open
# MPI ends it), ftmpi-run starts it again, the code resumes from its files
# (it prints "stencil resume it=N" with N > 0) and its final line is
# bitwise the one of a failure-free run under the shim, itself the same as
# without it.  With the test hooks, world rank 2 of the C code's first run
# dies before MPI's own start-up (FTMPI_TEST_SHIM_INIT_DIE): under
# --enable-recovery the others would wait in MPI_Init for good; the rank's
# early mark lets ftmpi-run see the death, end the job and start it again.
# After the SIGSTOP ftmpi-run's first line about a lost rank names world
# rank 2 (the drop-in's note, base/agent_mark.h), and no other rank is
# named lost (the ranks the job's end takes are logged as ended with it).
. "$top_srcdir/tests/integration/common.sh"
need_mpirun
need_kill_recovery "the drop-in's restart after a lost rank (and its Fortran part, built with Open MPI's mpifort)"
FTMPI_TIMEOUT_MS=3000
lib_test_env
SHIM="$top_builddir/.libs/libftmpi_pmpi.so"
[ -f "$SHIM" ] || skip "no $SHIM (shared libraries disabled?)"
PRELOAD=$(san_preload "$SHIM")
RUN="$top_builddir/ftmpi-run"
[ -x "$RUN" ] || skip "no $RUN"
NP=4

progs="$top_builddir/examples/shim_stencil"
MPIFORT=$(mpi_fort)
if [ -n "$MPIFORT" ]; then
    "$MPIFORT" -Wall -O2 -o "$TEST_TMPDIR/shim_stencil_f" "$top_srcdir/examples/shim_stencil_f.f90" \
        > "$TEST_TMPDIR/fc.log" 2>&1 || { cat "$TEST_TMPDIR/fc.log"; die "mpifort failed on shim_stencil_f.f90"; }
    progs="$progs $TEST_TMPDIR/shim_stencil_f"
else
    echo "no mpifort: the Fortran stencil is not run"
fi

done_line() { grep '^stencil done' "$1"; }

# PROG: the pid of its world rank 2 in this test
rank2() {
    for _p in $(pgrep -f "^$1 "); do
        tr '\0' '\n' < /proc/$_p/environ 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=2" &&
            tr '\0' '\n' < /proc/$_p/environ 2>/dev/null | grep -qx "FTI_TEST_TAG=$FTI_TEST_TAG" &&
            { echo $_p; return 0; }
    done
    return 1
}

for prog in $progs; do
    name=$(basename "$prog")
    case $name in *_f) slot=stencil_f ;; *) slot=stencil ;; esac
    # ---- failure-free, without and with the shim
    for pre in "" "$PRELOAD"; do
        d="$TEST_TMPDIR/ff_$name${pre:+_shim}"
        mkdir -p "$d"
        if [ -n "$pre" ]; then
            timeout 120 "$MPIRUN" -np $NP -x LD_PRELOAD="$pre" "$prog" 300 20 "$d" > "$d.log" 2>&1
        else
            timeout 120 "$MPIRUN" -np $NP "$prog" 300 20 "$d" > "$d.log" 2>&1
        fi || { cat "$d.log"; die "$name: the failure-free run failed"; }
    done
    ref=$(done_line "$TEST_TMPDIR/ff_$name.log")
    [ -n "$ref" ] || die "$name: no final line"
    [ "$ref" = "$(done_line "$TEST_TMPDIR/ff_${name}_shim.log")" ] ||
        { done_line "$TEST_TMPDIR/ff_${name}_shim.log"; die "$name: not bitwise the native result under the shim: $ref"; }
    echo "$name failure-free: $ref (the same without the shim)"

    for case in KILL:recovery STOP:recovery KILL:plain STOP:plain; do
        sig=${case%%:*} launch=${case#*:}
        rec=
        [ $launch = recovery ] && rec=--enable-recovery
        d="$TEST_TMPDIR/${name}_${sig}_$launch"
        mkdir -p "$d"
        setsid "$RUN" --replica-id stencil --max-restarts 3 --backoff-ms 200 --events "$d.events" -- \
            "$MPIRUN" $rec -np $NP -x LD_PRELOAD="$PRELOAD" -x SHIM_STENCIL_SLEEP_MS=10 \
            "$prog" 300 20 "$d" > "$d.log" 2>&1 &
        job=$!
        register_pgid $job
        wait_until 120 sh -c "[ -f '$d/$slot.2.0' ] && [ -f '$d/$slot.2.1' ]" ||
            { cat "$d.log"; die "$name $sig: rank 2 wrote no second restart file"; }
        victim=$(rank2 "$prog") || { cat "$d.log"; die "$name $sig: no rank 2 to signal"; }
        kill -$sig "$victim" || die "$name $sig: kill failed"
        wait_pid_timeout $job 180 || { cat "$d.log"; die "$name $sig $launch: ftmpi-run did not end"; }
        wait $job
        rc=$?
        [ $rc -eq 0 ] || { cat "$d.log"; die "$name $sig $launch: ftmpi-run exited $rc"; }
        grep -q '"event":"restart"' "$d.events" || { cat "$d.events" "$d.log"; die "$name $sig $launch: no restart"; }
        resumed=$(sed -n 's/^stencil resume it=\([1-9][0-9]*\)$/\1/p' "$d.log" | head -n 1)
        [ -n "$resumed" ] || { cat "$d.log"; die "$name $sig $launch: the restarted job did not resume from a file"; }
        if [ $sig = STOP ] || [ $launch = recovery ]; then
            # the drop-in's watchdog names it, or (a SIGKILL) ftmpi-run's rank
            # watch may end the job first and name it itself
            file_has "$d.log" 'world rank\(s\) 2 lost; aborting the job' ||
                { [ $sig = KILL ] && file_has "$d.log" 'world rank 2 lost: rank pid'; } ||
                { cat "$d.log"; die "$name $sig $launch: no line naming world rank 2"; }
        fi
        if [ $sig = STOP ]; then
            # ftmpi-run names the stopped rank first (the drop-in's note),
            # and no other rank as lost (issue 36 item 3)
            first=$(grep 'ftmpi-run warn.* lost' "$d.log" | head -n 1)
            echo "$first" | grep -Eq 'world rank(\(s\))? 2 lost' ||
                { cat "$d.log"; die "$name $sig $launch: ftmpi-run named another rank first: $first"; }
            ! grep -Eq 'ftmpi-run warn.* world rank [013] lost' "$d.log" ||
                { cat "$d.log"; die "$name $sig $launch: ftmpi-run took a rank the job's end took for lost"; }
        fi
        got=$(done_line "$d.log")
        [ "$got" = "$ref" ] || { cat "$d.log"; die "$name $sig $launch: '$got' is not the failure-free '$ref'"; }
        echo "$name $sig ($launch mpirun): restarted, resumed at iteration $resumed, final line bitwise the failure-free one"
    done
done

# ---- a rank lost before MPI_Init returns (test hook), under ftmpi-run
if have_test_hooks; then
    prog="$top_builddir/examples/shim_stencil"
    d="$TEST_TMPDIR/init_die"
    mkdir -p "$d"
    setsid "$RUN" --replica-id stencil --max-restarts 2 --backoff-ms 200 --events "$d.events" -- \
        "$MPIRUN" --enable-recovery -np $NP -x LD_PRELOAD="$PRELOAD" -x FTMPI_TEST_SHIM_INIT_DIE=2 \
        "$prog" 300 20 "$d" > "$d.log" 2>&1 &
    job=$!
    register_pgid $job
    wait_pid_timeout $job 180 || { cat "$d.log"; die "init: ftmpi-run did not end (the ranks wait in MPI_Init?)"; }
    wait $job
    rc=$?
    [ $rc -eq 0 ] || { cat "$d.log"; die "init: ftmpi-run exited $rc"; }
    file_has "$d.log" 'world rank 2 lost: rank pid [0-9]+ ended without FT_Finalize' ||
        { cat "$d.log"; die "init: ftmpi-run did not name world rank 2"; }
    grep -q '"event":"restart"' "$d.events" || { cat "$d.events" "$d.log"; die "init: no restart"; }
    got=$(done_line "$d.log")
    ref=$(done_line "$TEST_TMPDIR/ff_shim_stencil.log")
    [ "$got" = "$ref" ] || { cat "$d.log"; die "init: '$got' is not the failure-free '$ref'"; }
    echo "init: world rank 2 died before MPI_Init returned; ftmpi-run restarted the job, final line bitwise the failure-free one"
else
    echo "init: skipped (built without --enable-test-hooks)"
fi
