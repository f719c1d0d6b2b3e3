#!/bin/sh
# test_rank_watch_nodes.sh - ftmpi-run judges only its own node's rank marks
# (tools/rank_watch.h, base/agent_mark.h).  Its command makes a mark in the
# agent's folder (FTMPI_AGENT_DIR) through agent_mark_helper, a stand-in rank
# that exits without removing it (a rank dead without FT_Finalize):
#   1. on the agent's own node: the agent names the dead rank, ends the group
#      and starts it again (the watch still works);
#   2. from "another node": the helper in its own UTS and pid namespaces
#      (host name othernode, a pid that is no process here), as a rank on
#      another node sharing the folder (a cluster file system, srun passing
#      FTMPI_AGENT_DIR): never judged, no restart;
#   3. the same host name but another pid space (a container sharing the
#      node's host name): never judged either;
#   4. a bare "<pid>" mark (a libftmpi older than the agent): not watched,
#      said once.
# In the order 2, 3, 1, 4.  The agent looks at the marks once more when its
# command ends, so a foreign mark judged by pid is always seen: without the
# fix 2 fails with "rank pid P ended without FT_Finalize".  2 and 3 need
# root and unshare (exit 77 otherwise, after 1 and 4).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"

RUN=$top_builddir/ftmpi-run
HELPER=$top_builddir/tests/integration/agent_mark_helper
[ -x "$RUN" ] || skip "$RUN not built"
[ -x "$HELPER" ] || skip "$HELPER not built"
need_cmd timeout
T=$TEST_TMPDIR
unset FTMPI_REPLICA_ID FTMPI_RESTART_COUNT FTMPI_AGENT_DIR

# agent NAME SCRIPT: runs the agent on `sh SCRIPT` (first run: the script's
# case; a restart exits 0 at once); sets $rc
agent() {
    cat >"$T/$1.sh" <<EOS
[ "\$FTMPI_RESTART_COUNT" = 0 ] || exit 0
$2
EOS
    timeout -k 2 60 "$RUN" --replica-id g0 --max-restarts 2 --backoff-ms 10 \
        --events "$T/$1.ev" -- sh "$T/$1.sh" >"$T/$1.out" 2>"$T/$1.err" </dev/null
    rc=$?
}
# judged NAME: whether the agent took a mark for a dead rank of its node
judged() { file_has "$T/$1.ev" '"event":"rank_died"' || file_has "$T/$1.err" 'without FT_Finalize'; }
not_judged() { # NAME WHAT
    [ "$rc" -eq 0 ] || die "$2: the agent exited $rc: $(cat "$T/$1.err")"
    ! judged "$1" || die "$2: the agent judged a mark not of its node: $(grep -h 'FT_Finalize\|restart' "$T/$1.err")"
    [ "$(count_lines "$T/$1.ev" '"event":"start"')" -eq 1 ] || die "$2: the agent restarted its command"
}

# 2, 3. marks from other namespaces
ns_no=
if [ "$(id -u)" -ne 0 ]; then
    ns_no="not root: 2 and 3 need namespaces"
elif ! command -v unshare >/dev/null 2>&1; then
    ns_no="no unshare: 2 and 3 need it"
elif ! unshare --uts --pid --fork --mount-proc true 2>"$T/ns.err"; then
    ns_no="the kernel refuses namespaces: $(cat "$T/ns.err")"
fi
# a pid that is no process here: the helper's pid in its namespace
free=$(($(cat /proc/sys/kernel/pid_max) - 2000))
while kill -0 $((free + 1)) 2>/dev/null || kill -0 $((free + 2)) 2>/dev/null; do free=$((free - 7)); done
for c in node:--uts pidns:; do
    [ -z "$ns_no" ] || break
    name=${c%%:*}
    opt=${c#*:}
    agent "$name" "unshare $opt --pid --fork --mount-proc sh -c '
        [ -z \"$opt\" ] || hostname othernode
        echo $free >/proc/sys/kernel/ns_last_pid
        \"$HELPER\" \"\$FTMPI_AGENT_DIR\" 1 >\"$T/$name.mark\"'
        exit 0"
    m=$(cat "$T/$name.mark" 2>/dev/null)
    case $m in
    "$((free + 1))@"* | "$((free + 2))@"*) ;;
    *) die "$name: the stand-in rank's mark is '$m' (its pid not set: $(cat "$T/$name.err"))" ;;
    esac
    not_judged "$name" "a mark from another $name"
    echo "$name: mark $m (no process $((free + 1)) here) not judged, no restart"
done

# 1. a dead rank of this node: named, group ended (the command sleeps until
# killed) and started again
agent own "$HELPER \"\$FTMPI_AGENT_DIR\" 3 >\"$T/own.mark\"; sleep 50; exit 1"
[ "$rc" -eq 0 ] || die "own node: the agent exited $rc: $(cat "$T/own.err")"
file_has "$T/own.err" "world rank 3 lost: rank pid [0-9]+ ended without FT_Finalize: ending the group now" ||
    die "own node: the dead rank was not named: $(cat "$T/own.err")"
[ "$(count_lines "$T/own.ev" '"event":"restart"')" -eq 1 ] || die "own node: no restart: $(cat "$T/own.ev")"
echo "own node: mark $(cat "$T/own.mark"), the rank's death named and the group restarted"

# a rank that left (its mark removed) is no death
agent left "$HELPER \"\$FTMPI_AGENT_DIR\" 1 leave >/dev/null; exit 0"
not_judged left "a rank that left"

# 4. a bare pid (an older library's mark) of a process that is gone
agent old "p=\$(sh -c 'echo \$\$'); echo 1 >\"\$FTMPI_AGENT_DIR/\$p\"; exit 0"
not_judged old "an old-format mark"
file_has "$T/old.err" "names no host .*not watched" || die "the old-format mark was not reported: $(cat "$T/old.err")"
echo "old-format mark: not watched, said once"

[ -z "$ns_no" ] || skip "$ns_no (1 and 4 passed)"
