# tests/chaos/chaos_drive.sh - the fault driver of the chaos soak (POSIX sh,
# sourced by tests/chaos/chaos.sh after chaos_lib.sh).
#
#   chaos_drive SECS STOP_AT   faults for SECS seconds, or until a group
#                              printed step STOP_AT; sets GOODPUT_* figures
#   chaos_report               prints the goodput and the fault counts and
#                              asserts (b) and (d)
#
# The first four faults are the four kinds in a seeded order (so a short
# run sees each); then each kind is drawn with the same odds.  A fault that
# cannot be applied now (fewer than two groups up) stays pending and is
# tried again after the next gap, so the draws of a seed do not depend on
# timing, only when they land does.

# shellcheck disable=SC2086 # lists of kinds split on purpose
# CHAOS_ORDER: the four kinds in a seeded order (Fisher-Yates)
_chaos_shuffle() {
    set -- $CHAOS_KINDS
    CHAOS_ORDER=
    while [ $# -gt 0 ]; do
        chaos_rand $#
        _i=0
        _rest=
        for _k in "$@"; do
            if [ $_i -eq "$R" ]; then
                CHAOS_ORDER="$CHAOS_ORDER $_k"
            else
                _rest="$_rest $_k"
            fi
            _i=$((_i + 1))
        done
        # shellcheck disable=SC2086
        set -- $_rest
    done
}

# KIND = the next kind to apply: the seeded order first, then random draws
_chaos_next_kind() {
    if [ -n "$CHAOS_ORDER" ]; then
        # shellcheck disable=SC2086
        set -- $CHAOS_ORDER
        KIND=$1
        shift
        CHAOS_ORDER="$*"
        return 0
    fi
    # shellcheck disable=SC2086
    set -- $CHAOS_KINDS
    chaos_rand $#
    shift "$R"
    KIND=$1
}

# true while the faults go on: before END_MS and below step STOP_AT
_chaos_going() {
    [ "$(chaos_now_ms)" -lt "$1" ] || return 1
    chaos_leader
    [ "$L" -lt "$2" ]
}

chaos_drive() {
    # global names of their own: the helpers called below (wait_until...)
    # set _end and the like, and sh has no local variables
    CHAOS_END_MS=$(($(chaos_now_ms) + $1 * 1000))
    CHAOS_STOP_AT=$2
    GOODPUT_T0=$(chaos_now_ms)
    chaos_leader
    GOODPUT_S0=$L
    _chaos_shuffle
    KIND=
    while _chaos_going "$CHAOS_END_MS" "$CHAOS_STOP_AT"; do
        chaos_rand_range "$CHAOS_GAP_MIN_MS" "$CHAOS_GAP_MAX_MS"
        CHAOS_AT_MS=$(($(chaos_now_ms) + R))
        while [ "$(chaos_now_ms)" -lt "$CHAOS_AT_MS" ] && _chaos_going "$CHAOS_END_MS" "$CHAOS_STOP_AT"; do
            sleep 0.2
        done
        _chaos_going "$CHAOS_END_MS" "$CHAOS_STOP_AT" || break
        [ -n "$KIND" ] || _chaos_next_kind
        if chaos_fault "$KIND"; then
            KIND=
        else
            CHAOS_N_skipped=$((CHAOS_N_skipped + 1))
            e2e_log "fault $KIND put off: fewer than two groups up (${UP_LIST:- none})"
        fi
    done
    GOODPUT_T1=$(chaos_now_ms)
    chaos_leader
    GOODPUT_S1=$L
    e2e_log "faults stop at step $L after $((GOODPUT_T1 - GOODPUT_T0)) ms"
}

# (b) the goodput: steps committed per second between the first fault's
# gap and the end of the faults, over the healthy run's rate; (d) each kind
# of fault happened in a run of 60 s or more.  Why the floor is loose
# (0.2): each fault costs the survivors a collective deadline
# (FTMPI_TIMEOUT_MS, 2 s) or the heartbeat timeout (1 s) plus a quorum,
# and a lighthouse restart stops every group for its down time plus a
# reconnect; at one fault every 5.5 s on average that leaves about half of
# the healthy rate, and a loaded 2-core machine (8 builds and tests at
# once) moves both runs' rates by tens of percent.  The floor catches a
# run that stalls (a group or the lighthouse that never comes back, a
# hang) rather than measuring the library's efficiency; the soak's own
# figure is printed.
chaos_report() {
    _secs=$(((GOODPUT_T1 - GOODPUT_T0) / 1000))
    GOODPUT=$(awk -v d=$((GOODPUT_S1 - GOODPUT_S0)) -v ms=$((GOODPUT_T1 - GOODPUT_T0)) \
        -v r="$RATE" 'BEGIN { printf "%.2f", d * 1000 / ms / r }')
    e2e_log "goodput: steps $GOODPUT_S0 -> $GOODPUT_S1 in ${_secs} s of faults:" \
        "$(awk -v d=$((GOODPUT_S1 - GOODPUT_S0)) -v ms=$((GOODPUT_T1 - GOODPUT_T0)) \
            'BEGIN { printf "%.2f", d * 1000 / ms }') steps/s vs healthy $RATE: ratio $GOODPUT" \
        "(floor $CHAOS_GOODPUT_FLOOR)"
    _counts=
    _total=0
    for _k in $CHAOS_KINDS; do
        _n=$(eval "echo \$CHAOS_N_$_k")
        _counts="$_counts $_k=$_n"
        _total=$((_total + _n))
    done
    e2e_log "faults: $_total ($_counts; put off $CHAOS_N_skipped), seed $CHAOS_SEED"
    awk -v g="$GOODPUT" -v f="$CHAOS_GOODPUT_FLOOR" 'BEGIN { exit !(g >= f) }' ||
        e2e_fail "goodput $GOODPUT below the floor $CHAOS_GOODPUT_FLOOR"
    [ "$CHAOS_SECONDS" -lt 60 ] && return 0
    for _k in $CHAOS_KINDS; do
        [ "$(eval "echo \$CHAOS_N_$_k")" -gt 0 ] || e2e_fail "no fault of kind $_k in $_secs s"
    done
}
