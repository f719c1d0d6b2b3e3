# tests/nodes/nodes_lib.sh - N nodes on this machine (issue 34; ../shared
# DESIGN section 1).  Source after tests/integration/common.sh (or
# e2e_lib.sh), as root:
#
#     nodes_init                 skip (77) with the reason where the kernel or
#                                the machine refuses; installs openssh-server
#     nodes_up 3                 node0..node2, each with sshd listening
#     nodes_up 2 RATE            the same with a second, slow network (below)
#     on_node 0 CMD...           CMD inside node 0 (its namespaces), cwd kept
#     node_procs 1               the machine's pids of node 1's processes
#     node_ranks 1 g0            those of them that are MPI ranks of group g0
#     node_kill 1                SIGKILL to node 1's init: the node is lost
#     nodes_down                 every node and namespace ended (register it
#                                with at_cleanup before nodes_init)
#
# A node is a network, UTS, mount and pid namespace: host name nodeK, its
# own /tmp and /run (tmpfs), pids from 1 (its init is node_init, which
# reaps), one veth "eth0" at $NODES_NET.(K+1)/24 to a bridge in a namespace
# of its own, and Debian's sshd on that address (host key per node and a
# user key made per run, UsePAM no, StrictModes no).  The nodes' shared
# folder (a cluster file system) is the machine's file system as each mount
# namespace starts as a copy of it: the build tree and the run folder
# NODES_RUN (TMPDIR of the test, so TEST_TMPDIR and every agent's folder lie
# there) are at the same path on every node; /tmp is each node's own.
# NODES_RUN/hosts (node names and addresses) is every node's /etc/hosts;
# mpirun reaches the nodes by ssh with NODES_RUN/ssh_config
# (OMPI_MCA_plm_rsh_agent, exported), Open MPI's traffic on eth0.
#
# With RATE (tc's words: 200mbit) each node also has "eth1" at
# $NODES_NET2.(K+1)/24 on a second bridge: the slow "management" network,
# both directions limited to RATE with tbf (no netem needed), while eth0
# stays the fast unshaped "fabric".  The hosts file then maps the node
# names to eth1, as a cluster's DNS names the Ethernet NIC: a naive
# FTMPI_BIND_HOST=hostname takes the slow network; sshd listens on both.
# node_bytes K IF: rx + tx bytes of interface IF of node K so far.
#
# The run folder must be made before common.sh (it is TMPDIR):
#     NODES_RUN=$(nodes_run_dir) && TMPDIR=$NODES_RUN && export TMPDIR

NODES_PREFIX=ftn$$
NODES_NET=10.78.$(($$ % 250 + 1))
NODES_NET2=10.79.$(($$ % 250 + 1))
NODES_N=0
NODES_RATE=

# nodes_run_dir: makes the run folder under the build tree (shared by the
# nodes; under /tmp, which each node mounts its own over, the tree is bound
# back at its path inside every node: nodes_shared)
nodes_run_dir() {
    _b=${top_builddir:-$(pwd)}
    mkdir -p "$_b/tests/nodes" && mktemp -d "$_b/tests/nodes/run.XXXXXX"
}

_nodes_log() { echo "nodes: $*"; }

# nodes_shared: NODES_SHARED, the folders of the source and build trees that
# lie under /tmp (a fresh clone in a temporary folder): each node mounts its
# own /tmp, and node_setup.sh binds these back at the same path inside it
nodes_shared() {
    NODES_SHARED=
    for _d in "$top_srcdir" "$top_builddir"; do
        _d=$(cd "$_d" && pwd -P) || die "cannot enter $_d"
        case $_d/ in /tmp/*) ;; *) continue ;; esac
        _in=0
        for _s in $NODES_SHARED; do
            case $_d/ in "$_s"/*) _in=1 ;; esac
        done
        [ $_in = 1 ] || NODES_SHARED="$NODES_SHARED $_d"
    done
    [ -z "$NODES_SHARED" ] || _nodes_log "bound back under each node's /tmp:$NODES_SHARED"
}

nodes_init() {
    [ "$(id -u)" -eq 0 ] || skip "not root: nodes are namespaces, veth and a bridge"
    for _c in ip unshare nsenter ssh-keygen ssh; do
        command -v "$_c" >/dev/null 2>&1 || skip "no $_c"
    done
    nodes_shared
    NODES_INIT_BIN=$top_builddir/tests/nodes/node_init
    [ -x "$NODES_INIT_BIN" ] || die "$NODES_INIT_BIN is not built"
    if [ ! -x /usr/sbin/sshd ]; then
        command -v apt-get >/dev/null 2>&1 || skip "no /usr/sbin/sshd and no apt-get"
        _nodes_log "installing openssh-server (apt-get; its service not started)"
        # no service start at install (an sshd on the machine's port 22):
        # a policy-rc.d of our own, only where there is none
        _prc=
        [ -e /usr/sbin/policy-rc.d ] || {
            printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && _prc=1
        }
        { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y \
            --no-install-recommends openssh-server; } >"$NODES_RUN/apt.log" 2>&1
        _arc=$?
        [ -z "$_prc" ] || rm -f /usr/sbin/policy-rc.d
        [ $_arc -eq 0 ] || { tail -n 20 "$NODES_RUN/apt.log"; skip "apt-get install openssh-server failed"; }
    fi
    [ -x /usr/sbin/sshd ] || skip "openssh-server installed but no /usr/sbin/sshd"
    unshare --uts --mount --pid --fork --mount-proc true 2>"$NODES_RUN/ns.err" ||
        skip "the kernel refuses namespaces: $(cat "$NODES_RUN/ns.err")"
    ip netns add "${NODES_PREFIX}br" 2>"$NODES_RUN/ns.err" ||
        skip "cannot make a network namespace: $(cat "$NODES_RUN/ns.err")"
    ip -n "${NODES_PREFIX}br" link set lo up
    ip -n "${NODES_PREFIX}br" link add br0 type bridge 2>"$NODES_RUN/ns.err" ||
        skip "no bridge: $(cat "$NODES_RUN/ns.err")"
    ip -n "${NODES_PREFIX}br" link set br0 up
    ip -n "${NODES_PREFIX}br" link add br1 type bridge && ip -n "${NODES_PREFIX}br" link set br1 up ||
        die "cannot make the second bridge"
    ssh-keygen -q -t ed25519 -N '' -C "nodes-user" -f "$NODES_RUN/id_ed25519" ||
        die "ssh-keygen (user key) failed"
    cp "$NODES_RUN/id_ed25519.pub" "$NODES_RUN/authorized_keys"
    : >"$NODES_RUN/hosts"
    printf '127.0.0.1 localhost\n' >>"$NODES_RUN/hosts"
    cat >"$NODES_RUN/ssh_config" <<EOS
Host node*
    User root
    IdentityFile $NODES_RUN/id_ed25519
    IdentitiesOnly yes
    StrictHostKeyChecking no
    UserKnownHostsFile /dev/null
    GlobalKnownHostsFile /dev/null
    BatchMode yes
    LogLevel ERROR
    ConnectTimeout 30
EOS
    # Open MPI across the nodes: its daemons by ssh, its traffic on eth0
    OMPI_MCA_plm_rsh_agent="ssh -F $NODES_RUN/ssh_config"
    OMPI_MCA_btl_tcp_if_include=eth0
    OMPI_MCA_oob_tcp_if_include=eth0
    export OMPI_MCA_plm_rsh_agent OMPI_MCA_btl_tcp_if_include OMPI_MCA_oob_tcp_if_include
}

# node_pid K: the machine's pid of node K's init (PID 1 of the node)
node_pid() { cat "$NODES_RUN/node$1/init.pid" 2>/dev/null; }

# nodes_up N: makes node0..node(N-1) and waits until each one's sshd answers
nodes_up() {
    NODES_N=$1
    NODES_RATE=${2:-}
    _net=$NODES_NET
    [ -z "$NODES_RATE" ] || _net=$NODES_NET2
    _k=0
    while [ $_k -lt "$NODES_N" ]; do
        echo "$_net.$((_k + 1)) node$_k" >>"$NODES_RUN/hosts"
        _k=$((_k + 1))
    done
    _k=0
    while [ $_k -lt "$NODES_N" ]; do
        _ns=${NODES_PREFIX}n$_k
        _d=$NODES_RUN/node$_k
        mkdir -p "$_d"
        ip netns add "$_ns" || die "ip netns add $_ns failed"
        ip -n "$_ns" link set lo up
        ip link add "${_ns}a" type veth peer name "${_ns}b" 2>"$NODES_RUN/ns.err" ||
            skip "no veth: $(cat "$NODES_RUN/ns.err")"
        ip link set "${_ns}a" netns "$_ns" && ip -n "$_ns" link set "${_ns}a" name eth0 &&
            ip link set "${_ns}b" netns "${NODES_PREFIX}br" &&
            ip -n "${NODES_PREFIX}br" link set "${_ns}b" master br0 up &&
            ip -n "$_ns" addr add "$NODES_NET.$((_k + 1))/24" dev eth0 &&
            ip -n "$_ns" link set eth0 up || die "cannot link node$_k to the bridge"
        [ -z "$NODES_RATE" ] || _nodes_slow_link "$_k"
        ssh-keygen -q -t ed25519 -N '' -C "node$_k" -f "$_d/host_key" || die "ssh-keygen (node$_k) failed"
        cat >"$_d/sshd_config" <<EOS
ListenAddress $NODES_NET.$((_k + 1))
$([ -z "$NODES_RATE" ] || echo "ListenAddress $NODES_NET2.$((_k + 1))")
Port 22
HostKey $_d/host_key
PidFile /run/sshd.pid
UsePAM no
StrictModes no
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
AuthorizedKeysFile $NODES_RUN/authorized_keys
UseDNS no
PrintMotd no
MaxStartups 100
LogLevel ERROR
EOS
        # the node: its network namespace, then UTS, mount and pid
        # namespaces with node_init as PID 1 (unshare forks it)
        ip netns exec "$_ns" unshare --uts --mount --pid --fork --mount-proc \
            "$NODES_INIT_BIN" sh "$top_srcdir/tests/nodes/node_setup.sh" "$_k" "$NODES_RUN" $NODES_SHARED \
            >"$_d/init.log" 2>&1 </dev/null &
        echo $! >"$_d/unshare.pid"
        _k=$((_k + 1))
    done
    _k=0
    while [ $_k -lt "$NODES_N" ]; do
        _u=$(cat "$NODES_RUN/node$_k/unshare.pid")
        _init_up() { _i=$(pgrep -P "$1" | head -n 1) && [ -n "$_i" ] && echo "$_i" >"$2"; }
        wait_until 30 _init_up "$_u" "$NODES_RUN/node$_k/init.pid" ||
            die "node$_k: no init under unshare $_u: $(cat "$NODES_RUN/node$_k/init.log")"
        # the namespaces of the node, to count what is left at the end
        readlink "/proc/$(node_pid $_k)/ns/pid" >"$NODES_RUN/node$_k/pidns"
        wait_until 60 on_node $_k ssh -F "$NODES_RUN/ssh_config" "node$_k" true 2>/dev/null ||
            die "node$_k: sshd does not answer: $(cat "$NODES_RUN/node$_k/sshd.log" "$NODES_RUN/node$_k/init.log" 2>/dev/null)"
        _k=$((_k + 1))
    done
    _nodes_log "$NODES_N nodes up on $NODES_NET.0/24${NODES_RATE:+ (fast eth0) and $NODES_NET2.0/24 (eth1 at $NODES_RATE, where the names point)} (run folder $NODES_RUN)"
}

# _nodes_slow_link K: node K's eth1 on br1, both ends shaped to NODES_RATE
# (tbf on each end's egress: the node's sends and what the bridge sends it)
_nodes_slow_link() {
    _ns=${NODES_PREFIX}n$1
    command -v tc >/dev/null 2>&1 || skip "no tc (iproute2) to shape the slow network"
    ip link add "${_ns}c" type veth peer name "${_ns}d" &&
        ip link set "${_ns}c" netns "$_ns" && ip -n "$_ns" link set "${_ns}c" name eth1 &&
        ip link set "${_ns}d" netns "${NODES_PREFIX}br" &&
        ip -n "${NODES_PREFIX}br" link set "${_ns}d" master br1 up &&
        ip -n "$_ns" addr add "$NODES_NET2.$(($1 + 1))/24" dev eth1 &&
        ip -n "$_ns" link set eth1 up || die "cannot link node$1 to the second bridge"
    for _end in "$_ns eth1" "${NODES_PREFIX}br ${_ns}d"; do
        # shellcheck disable=SC2086
        set -- $_end
        ip netns exec "$1" tc qdisc add dev "$2" root tbf rate "$NODES_RATE" burst 256kb \
            latency 400ms 2>"$NODES_RUN/ns.err" || skip "tc tbf refused: $(cat "$NODES_RUN/ns.err")"
    done
}

node_bytes() {
    _sd=/sys/class/net/$2/statistics
    # shellcheck disable=SC2046
    set -- $(on_node "$1" cat "$_sd/rx_bytes" "$_sd/tx_bytes")
    echo $(($1 + $2))
}

# on_node K CMD...: runs CMD in node K's namespaces, in the current folder,
# with this environment
on_node() {
    _on=$1
    shift
    nsenter --target "$(node_pid "$_on")" --net --uts --mount --pid --wd="$(pwd)" -- "$@"
}

# node_procs K: the machine's pids of the processes in node K's pid namespace
node_procs() {
    _want=$(cat "$NODES_RUN/node$1/pidns" 2>/dev/null)
    [ -n "$_want" ] || return 0
    # one find for all (a readlink a process is slow on a loaded machine)
    find /proc -mindepth 3 -maxdepth 3 -path '/proc/[0-9]*/ns/pid' -printf '%h %l\n' 2>/dev/null |
        awk -v w="$_want" '$2 == w { split($1, a, "/"); print a[3] }'
    return 0
}

# node_ranks K ID: the machine's pids of group ID's ranks on node K (started by
# mpirun or by srun's pmix plugin, which set one of the two)
node_ranks() {
    for _p in $(node_procs "$1"); do
        tr '\0' '\n' <"/proc/$_p/environ" 2>/dev/null | grep -qx "FTMPI_REPLICA_ID=$2" &&
            tr '\0' '\n' <"/proc/$_p/environ" 2>/dev/null | grep -Eq '^(OMPI_COMM_WORLD_RANK|PMIX_RANK)=' &&
            echo "$_p"
    done
    return 0
}
# node_kill K: the loss of node K (every process of its pid namespace at once)
node_kill() {
    _i=$(node_pid "$1")
    [ -n "$_i" ] && kill -KILL "$_i" 2>/dev/null
    wait_until 30 _nodes_none "$1" || die "node$1: processes left after its init was killed: $(node_procs "$1")"
}
_nodes_none() { [ -z "$(node_procs "$1")" ]; }

# nodes_left: what is left of the nodes (processes of their pid namespaces,
# network namespaces of this run), one line each; nothing when all ended
nodes_left() {
    _k=0
    while [ $_k -lt "$NODES_N" ]; do
        for _p in $(node_procs $_k); do echo "node$_k process $_p"; done
        _k=$((_k + 1))
    done
    ip netns list 2>/dev/null | sed -n "s/^\\(${NODES_PREFIX}[a-z0-9]*\\).*/netns \\1/p"
}

# nodes_down: ends every node (SIGKILL to each init), deletes the network
# namespaces; once (the EXIT trap calls it again)
nodes_down() {
    [ -z "$_nodes_down_done" ] || return 0
    _nodes_down_done=1
    _k=0
    while [ $_k -lt "$NODES_N" ]; do
        _i=$(node_pid $_k)
        [ -n "$_i" ] && kill -KILL "$_i" 2>/dev/null
        _k=$((_k + 1))
    done
    _k=0
    while [ $_k -lt "$NODES_N" ]; do
        wait_until 30 _nodes_none $_k
        _u=$(cat "$NODES_RUN/node$_k/unshare.pid" 2>/dev/null)
        [ -n "$_u" ] && { wait "$_u"; } 2>/dev/null
        ip netns del "${NODES_PREFIX}n$_k" 2>/dev/null
        _k=$((_k + 1))
    done
    ip netns del "${NODES_PREFIX}br" 2>/dev/null
    return 0
}
