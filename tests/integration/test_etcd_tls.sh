#!/bin/sh
# test_etcd_tls.sh - the lighthouse's etcd over TLS with client
# certificates (etcd --client-cert-auth; a CA, server and client
# certificates made here with openssl): the client with the certificate
# works, one without is refused; ftmpi-lighthouse --etcd https://...
# --etcd-ca --etcd-cert --etcd-key is elected and issues a quorum.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"
. "$top_srcdir/tests/integration/lh_common.sh"
. "$top_srcdir/tests/integration/etcd_lib.sh"
need_cmd openssl
T=$TEST_TMPDIR

# a CA, the server's certificate for 127.0.0.1 and a client certificate
cert() { # cert NAME CN EXT
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$T/$1.key" \
        -out "$T/$1.csr" -subj "/CN=$2" 2>"$T/openssl.err" &&
        printf '%s\n' "$3" >"$T/$1.ext" &&
        openssl x509 -req -in "$T/$1.csr" -CA "$T/ca.crt" -CAkey "$T/ca.key" -CAcreateserial \
            -out "$T/$1.crt" -days 1 -extfile "$T/$1.ext" 2>>"$T/openssl.err" ||
        die "openssl ($1): $(cat "$T/openssl.err")"
}
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$T/ca.key" \
    -out "$T/ca.crt" -days 1 -subj /CN=ftmpi-test-ca 2>"$T/openssl.err" ||
    die "openssl (ca): $(cat "$T/openssl.err")"
cert server 127.0.0.1 "subjectAltName=IP:127.0.0.1
extendedKeyUsage=serverAuth,clientAuth"
cert client lighthouse "extendedKeyUsage=clientAuth"

ETCD_SCHEME=https
ETCD_ARGS="--cert-file $T/server.crt --key-file $T/server.key --client-cert-auth --trusted-ca-file $T/ca.crt --peer-cert-file $T/server.crt --peer-key-file $T/server.key --peer-trusted-ca-file $T/ca.crt"
ETCD_PROBE_CA=$T/ca.crt ETCD_PROBE_CERT=$T/client.crt ETCD_PROBE_KEY=$T/client.key
export ETCD_PROBE_CA ETCD_PROBE_CERT ETCD_PROBE_KEY
start_etcd e1
case $ETCD_URL in https://*) ;; *) die "etcd is not on https: $ETCD_URL" ;; esac

# without a client certificate etcd refuses the connection
ETCD_PROBE_CERT= ETCD_PROBE_KEY= timeout 60 "$ETCD_PROBE" get "$ETCD_URL" /x >"$T/nocert.out" 2>&1
[ $? -eq 2 ] || die "a client without a certificate was served: $(cat "$T/nocert.out")"

start_lighthouse lh --min-replicas 1 --join-timeout-ms 0 --initial-quorum-id 0 \
    --etcd "$ETCD_URL" --etcd-prefix /ftmpi/tls --etcd-ca "$T/ca.crt" \
    --etcd-cert "$T/client.crt" --etcd-key "$T/client.key" --log-level info
wait_until 60 file_has "$T/lh.err" 'etcd: elected leader' ||
    die "the lighthouse was not elected over TLS: $(cat "$T/lh.err")"
timeout 60 "$PROBE" quorum "$LH_ADDR" g1 0 20000 >"$T/q.out" 2>&1 || die "quorum: $(cat "$T/q.out")"
[ "$(etcd_get /ftmpi/tls/quorum_id)" = 1 ] || die "etcd over TLS holds quorum id '$(etcd_get /ftmpi/tls/quorum_id)'"
echo "PASS ($TEST_NAME)"
