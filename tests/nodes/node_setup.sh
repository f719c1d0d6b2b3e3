#!/bin/sh
# node_setup.sh K RUN [DIR...] - the first process of node K (under node_init, PID 1
# of the node's pid namespace; its own UTS and mount namespaces, its network
# namespace made by nodes_lib.sh): host name nodeK, its own /tmp and /run
# (tmpfs), RUN/hosts as /etc/hosts, then Debian's sshd on the node's address
# in the foreground (its log in RUN/nodeK/sshd.log).  The rest of the file
# system is the machine's: the build tree and RUN are the nodes' shared
# folder, at the same path on every node; each DIR (a tree under /tmp) is
# bound back at its path inside the node's own /tmp.
set -e
k=$1
run=$2
shift 2
hostname "node$k"
mount -t tmpfs -o mode=755,size=64m tmpfs /run
i=0
for d in "$@"; do
    mkdir -p "/run/shared$i"
    mount --bind "$d" "/run/shared$i"
    i=$((i + 1))
done
mount -t tmpfs -o mode=1777,size=512m tmpfs /tmp
i=0
for d in "$@"; do
    mkdir -p "$d"
    mount --bind "/run/shared$i" "$d"
    i=$((i + 1))
done
mkdir -p /run/sshd
mount --bind "$run/hosts" /etc/hosts
exec /usr/sbin/sshd -D -E "$run/node$k/sshd.log" -f "$run/node$k/sshd_config"
