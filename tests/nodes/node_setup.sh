#!/bin/sh
# node_setup.sh K RUN - the first process of node K (under node_init, PID 1
# of the node's pid namespace; its own UTS and mount namespaces, its network
# namespace made by nodes_lib.sh): host name nodeK, its own /tmp and /run
# (tmpfs), RUN/hosts as /etc/hosts, then Debian's sshd on the node's address
# in the foreground (its log in RUN/nodeK/sshd.log).  The rest of the file
# system is the machine's: the build tree and RUN are the nodes' shared
# folder, at the same path on every node.
set -e
k=$1
run=$2
hostname "node$k"
mount -t tmpfs -o mode=1777,size=512m tmpfs /tmp
mount -t tmpfs -o mode=755,size=64m tmpfs /run
mkdir -p /run/sshd
mount --bind "$run/hosts" /etc/hosts
exec /usr/sbin/sshd -D -E "$run/node$k/sshd.log" -f "$run/node$k/sshd_config"
