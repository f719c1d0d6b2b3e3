#!/bin/sh
# mpirun_prte.sh - the tests' launcher under Open MPI 5 (common.sh sets
# MPIRUN to it when the launcher is PRRTE's, Open MPI 5's mpirun, and
# FTI_REAL_MPIRUN to that mpirun).  The tests write their mpirun lines in
# Open MPI 4.1's words; this execs 5.0's mpirun (same pid: setsid, timeout
# and the tests' kills still reach the job) with each said in its words:
#
#   --enable-recovery          kept; with FTI_PRTE_RECOVERY=ulfm (the mode B
#                              tests: modeb_lib.sh) --with-ft ulfm --mca pml
#                              ob1 --runtime-options error-nonzero-status=false
#                              instead (ULFM: the survivors of a dead rank go
#                              on and see it as MPIX_ERR_PROC_FAILED; ob1:
#                              ULFM does not support UCX, see
#                              ../shared/ompi5/README.md; the runtime option:
#                              4.1's mpirun --enable-recovery exits 0 when a
#                              lost group's ranks finalize and exit non-zero,
#                              ft_sgd's 4, 5.0's with that status unless told)
#   (always)                   --map-by :OVERSUBSCRIBE unless the line maps:
#                              5.0 ignores OMPI_MCA_rmaps_base_oversubscribe
#   --output-filename DIR      each rank's stdout and stderr into 4.1's
#                              layout DIR/1/rank.N/stdout and stderr (5.0
#                              writes DIR.<nspace>.<rank>.out): the program
#                              starts through "sh -c ... exec PROG" with its
#                              output redirected (same pid as the program)
#   anything else              kept (-np, -x, --mca, --bind-to, ":")
#
# Whole lines: 5.0's mpirun forwards each rank's output as it reads it, so
# pieces of two ranks' lines can meet in one line when a rank writes a line
# in several pieces; the tests that read lines of several ranks from one
# stream read per-rank files instead (--output-filename), as under hydra.
#
# Everything from the program on (up to a ":" section break) is the
# program's and kept as is.
set -eu
real=${FTI_REAL_MPIRUN:?FTI_REAL_MPIRUN is not set (tests/integration/common.sh sets it)}
n=$#
i=0
in_prog=0
outdir=
mapped=0
# the per-rank redirect (OMPI_COMM_WORLD_RANK: set by 5.0 in every rank)
redir='d=$0/1/rank.$OMPI_COMM_WORLD_RANK; mkdir -p "$d" && exec "$@" >"$d/stdout" 2>"$d/stderr"'
while [ "$i" -lt "$n" ]; do
    a=$1
    shift
    i=$((i + 1))
    if [ "$in_prog" = 1 ]; then
        [ "$a" = : ] && in_prog=0
        set -- "$@" "$a"
        continue
    fi
    case $a in
    --enable-recovery | -enable-recovery)
        if [ "${FTI_PRTE_RECOVERY:-}" = ulfm ]; then
            set -- "$@" --with-ft ulfm --mca pml ob1 --runtime-options error-nonzero-status=false
        else
            set -- "$@" --enable-recovery
        fi
        ;;
    --output-filename | -output-filename)
        outdir=$1
        shift
        i=$((i + 1))
        ;;
    --map-by | -map-by)
        mapped=1
        set -- "$@" "$a" "$1"
        shift
        i=$((i + 1))
        ;;
    -np | -n | --np | --bind-to | -bind-to | -x | --mca | -mca | --with-ft | -H | --host | -host)
        if [ "$a" = --mca ] || [ "$a" = -mca ]; then
            set -- "$@" "$a" "$1" "$2"
            shift 2
            i=$((i + 2))
        else
            set -- "$@" "$a" "$1"
            shift
            i=$((i + 1))
        fi
        ;;
    :)
        set -- "$@" "$a" ;;
    -*)
        set -- "$@" "$a" ;;
    *)
        in_prog=1
        [ -n "$outdir" ] && set -- "$@" sh -c "$redir" "$outdir"
        set -- "$@" "$a"
        ;;
    esac
done
if [ "$mapped" = 0 ]; then
    PRTE_MCA_rmaps_default_mapping_policy=${PRTE_MCA_rmaps_default_mapping_policy:-:oversubscribe}
    export PRTE_MCA_rmaps_default_mapping_policy
fi
exec "$real" "$@"
