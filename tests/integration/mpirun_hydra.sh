#!/bin/sh
# mpirun_hydra.sh - the tests' launcher under MPICH (common.sh sets MPIRUN
# to it when configure chose MPICH's hydra, and FTI_REAL_MPIRUN to hydra).
# The tests write their mpirun lines in Open MPI's words; this execs hydra
# (same pid: setsid, timeout and the tests' kills still reach the job) with
# each option said in hydra's:
#
#   --enable-recovery          -disable-auto-cleanup (survivors of a killed
#                              rank go on; mode B, the drop-in)
#   -x VAR=VAL                 -env VAR VAL (per section, as Open MPI's is)
#   -x VAR                     dropped: hydra passes the whole environment
#   --mca NAME VALUE           dropped (Open MPI's MCA parameters)
#   --oversubscribe,           dropped: hydra oversubscribes and does not
#   --allow-run-as-root        mind root
#   --output-filename DIR      -outfile-pattern/-errfile-pattern writing
#                              Open MPI's layout, DIR/1/rank.N/stdout and
#                              stderr (the folders made here: hydra does not)
#   --bind-to X, -np N, -n N,  kept (hydra knows them)
#   --version, :               kept
#
# hydra forwards each rank's output in the pieces the rank wrote, so two
# ranks' pieces can mix within one line ("sfinal replica=..."): a program
# must write whole lines.  No stdbuf here: MPICH's MPI_Init makes stdout
# unbuffered anyway (setbuf(stdout, NULL)), which is what split ft_sgd's
# lines (its setvbuf with a NULL buffer after it kept glibc's 1-byte
# buffer; test_stdout_lines.sh).
#
# Everything from the program on (up to a ":" section break) is the
# program's and kept as is.  An option hydra does not know fails in hydra.
set -eu
real=${FTI_REAL_MPIRUN:?FTI_REAL_MPIRUN is not set (tests/integration/common.sh sets it)}
n=$#
i=0
in_prog=0
outdir=
total=0
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
    --enable-recovery)
        set -- "$@" -disable-auto-cleanup ;;
    --oversubscribe | --allow-run-as-root)
        ;;
    -x)
        v=$1
        shift
        i=$((i + 1))
        case $v in
        *=*) set -- "$@" -env "${v%%=*}" "${v#*=}" ;;
        esac
        ;;
    --output-filename | -output-filename)
        outdir=$1
        shift
        i=$((i + 1))
        ;;
    --mca | -mca)
        shift 2
        i=$((i + 2))
        ;;
    -np | -n | --np | --bind-to | -bind-to | -env | -genv | -host | --host | -hosts | -ppn)
        v=$1
        shift
        i=$((i + 1))
        if [ "$a" = -env ] || [ "$a" = -genv ]; then
            v2=$1
            shift
            i=$((i + 1))
            set -- "$@" "$a" "$v" "$v2"
        else
            case $a in -np | -n | --np) total=$((total + v)) ;; esac
            set -- "$@" "$a" "$v"
        fi
        ;;
    :)
        set -- "$@" "$a" ;;
    -*)
        set -- "$@" "$a" ;;
    *)
        in_prog=1
        set -- "$@" "$a"
        ;;
    esac
done
if [ -n "$outdir" ]; then
    r=0
    while [ "$r" -lt "$total" ]; do
        mkdir -p "$outdir/1/rank.$r"
        r=$((r + 1))
    done
    exec "$real" -outfile-pattern "$outdir/1/rank.%r/stdout" \
        -errfile-pattern "$outdir/1/rank.%r/stderr" "$@"
fi
exec "$real" "$@"
