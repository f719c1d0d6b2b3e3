# tests/integration/etcd_lib.sh - a real etcd for the tests (POSIX sh).
# Source it after common.sh:
#
#     . "$top_srcdir/tests/integration/common.sh"
#     . "$top_srcdir/tests/integration/etcd_lib.sh"
#
# Skips (77) when the build has no etcd support (configure --with-etcd:
# libcurl and json-c) or when Debian's etcd-server is not installed.
#
#   ETCD_PROBE                 path of tests/integration/etcd_probe
#   start_etcd NAME            starts a one-member etcd on 127.0.0.1 with free
#                              ports (random, tried again when taken) and its
#                              own data dir under $TEST_TMPDIR; waits for it to
#                              serve (60 s); sets ETCD_PID and ETCD_URL.
#                              ETCD_SCHEME=https and ETCD_ARGS (etcd's TLS
#                              flags) for TLS, with ETCD_PROBE_CA/_CERT/_KEY
#                              exported for etcd_probe
#   start_etcd_cluster NAME    the same with three members; sets ETCD_URLS,
#                              ETCD_URL1..3, ETCD_PID1..3 (and ETCD_URL=$ETCD_URL1)
#   etcd_get KEY               KEY's value on stdout; false when absent

ETCD_PROBE=$top_builddir/tests/integration/etcd_probe
[ -x "$ETCD_PROBE" ] || skip "$ETCD_PROBE not built (make check builds it)"
"$ETCD_PROBE" built 2>/dev/null ||
    skip "built without etcd support (configure --with-etcd: libcurl and json-c)"
command -v etcd >/dev/null 2>&1 || skip "etcd not installed (Debian: etcd-server)"

_etcd_port() {
    _r=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
    echo $((20000 + _r % 40000))
}

_etcd_ready() {
    "$ETCD_PROBE" get "$ETCD_URL" /ftmpi-test/ready >/dev/null 2>&1
    [ $? -ne 2 ] # 0: found, 3: absent; 2: not serving
}

start_etcd() {
    _en=$1
    for _try in 1 2 3 4 5 6 7 8; do
        _cp=$(_etcd_port)
        _pp=$(_etcd_port)
        [ "$_cp" = "$_pp" ] && continue
        ETCD_URL=${ETCD_SCHEME:-http}://127.0.0.1:$_cp
        _dir=$TEST_TMPDIR/$_en.etcd.$_try
        # shellcheck disable=SC2086 # ETCD_ARGS: words on purpose
        etcd --name "$_en" --data-dir "$_dir" $ETCD_ARGS \
            --listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
            --listen-peer-urls "http://127.0.0.1:$_pp" \
            --initial-advertise-peer-urls "http://127.0.0.1:$_pp" \
            --initial-cluster "$_en=http://127.0.0.1:$_pp" \
            --initial-cluster-state new >"$TEST_TMPDIR/$_en.etcd.log" 2>&1 </dev/null &
        ETCD_PID=$!
        register_pid $ETCD_PID
        # serving, or gone (a port taken: try other ports)
        wait_until 60 sh -c "! kill -0 $ETCD_PID 2>/dev/null || \"$ETCD_PROBE\" get $ETCD_URL /ftmpi-test/ready >/dev/null 2>&1; [ \$? -ne 2 ]" ||
            die "etcd $_en did not serve within 60 s: $(tail -5 "$TEST_TMPDIR/$_en.etcd.log")"
        _etcd_ready && return 0
        grep -q 'address already in use' "$TEST_TMPDIR/$_en.etcd.log" ||
            die "etcd $_en ended: $(tail -5 "$TEST_TMPDIR/$_en.etcd.log")"
    done
    die "etcd $_en: no free ports in 8 tries"
}

etcd_get() {
    "$ETCD_PROBE" get "$ETCD_URL" "$1"
}

# start_etcd_cluster NAME: a three-member etcd on 127.0.0.1 (free ports,
# tried again when one is taken); sets ETCD_URLS (the three client URLs,
# comma-separated), ETCD_URL1..3 and ETCD_PID1..3.
start_etcd_cluster() {
    _en=$1
    for _try in 1 2 3 4 5 6; do
        _cl= _urls=
        for _m in 1 2 3; do
            eval "_cp$_m=$(_etcd_port) _pp$_m=$(_etcd_port)"
            eval "_cl=\${_cl:+\$_cl,}$_en$_m=http://127.0.0.1:\$_pp$_m"
            eval "_urls=\${_urls:+\$_urls,}http://127.0.0.1:\$_cp$_m"
        done
        for _m in 1 2 3; do
            eval "_c=\$_cp$_m _p=\$_pp$_m"
            etcd --name "$_en$_m" --data-dir "$TEST_TMPDIR/$_en$_m.etcd.$_try" \
                --listen-client-urls "http://127.0.0.1:$_c" --advertise-client-urls "http://127.0.0.1:$_c" \
                --listen-peer-urls "http://127.0.0.1:$_p" --initial-advertise-peer-urls "http://127.0.0.1:$_p" \
                --initial-cluster "$_cl" --initial-cluster-token "$_en-$_try" \
                --initial-cluster-state new >"$TEST_TMPDIR/$_en$_m.etcd.log" 2>&1 </dev/null &
            eval "ETCD_PID$_m=$! ETCD_URL$_m=http://127.0.0.1:$_c"
            register_pid $!
        done
        ETCD_URLS=$_urls
        ETCD_URL=$ETCD_URL1
        _all_up() {
            for _m in 1 2 3; do
                eval "_pid=\$ETCD_PID$_m"
                kill -0 "$_pid" 2>/dev/null || return 0 # one died: stop waiting
            done
            "$ETCD_PROBE" get "$ETCD_URLS" /ftmpi-test/ready >/dev/null 2>&1
            [ $? -ne 2 ]
        }
        wait_until 90 _all_up || die "etcd cluster $_en did not serve within 90 s"
        _dead=0
        for _m in 1 2 3; do
            eval "_pid=\$ETCD_PID$_m"
            kill -0 "$_pid" 2>/dev/null || _dead=1
        done
        [ $_dead = 0 ] && return 0
        grep -q 'address already in use' "$TEST_TMPDIR/$_en"?.etcd.log ||
            die "etcd cluster $_en: a member ended: $(tail -3 "$TEST_TMPDIR/$_en"?.etcd.log)"
        for _m in 1 2 3; do eval "kill -KILL \$ETCD_PID$_m 2>/dev/null"; done
    done
    die "etcd cluster $_en: no free ports in 6 tries"
}
