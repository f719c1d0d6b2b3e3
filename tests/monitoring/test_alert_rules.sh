#!/bin/sh
# test_alert_rules.sh - the shipped alert rules (doc/prometheus-ftmpi-alerts.yml)
# under promtool test rules (issue 36 item 6): a finished job (every group
# finalized: ftmpi_group_finished, ftmpi_job_finished) raises neither
# FtmpiGroupDown nor FtmpiGoodputLow; a lost group and a slow running job
# raise both.  Skips without promtool (Debian's package prometheus).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"
need_cmd promtool
T=$TEST_TMPDIR
cp "$top_srcdir/doc/prometheus-ftmpi-alerts.yml" "$T/rules.yml"
sed "s|RULES|$T/rules.yml|" "$top_srcdir/tests/monitoring/alerts_test.yml" >"$T/test.yml"
promtool check rules "$T/rules.yml" >"$T/check.out" 2>&1 || die "promtool check rules: $(cat "$T/check.out")"
timeout 120 promtool test rules "$T/test.yml" >"$T/test.out" 2>&1 ||
    { cat "$T/test.out"; die "the alert rules failed their tests"; }
cat "$T/test.out"
echo "PASS ($TEST_NAME)"
