#!/bin/sh
# test_env_doc.sh - doc/ENVIRONMENT.md is what `ftmpi-info --env-markdown`
# prints now, i.e. the committed page matches the FTMPI_* table of
# src/base/settings.c.  The page must not depend on the environment: it is
# generated here with a bad FTMPI_* value set.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"

INFO=$top_builddir/ftmpi-info
DOC=$top_srcdir/doc/ENVIRONMENT.md
[ -x "$INFO" ] || skip "$INFO not built"
[ -f "$DOC" ] || die "$DOC is missing; regenerate with: ftmpi-info --env-markdown > doc/ENVIRONMENT.md"

FTMPI_TIMEOUT_MS=abc FTMPI_LOG_LEVEL=debug timeout 10 "$INFO" --env-markdown >"$TEST_TMPDIR/env.md" ||
    die "ftmpi-info --env-markdown failed (exit $?)"
[ -s "$TEST_TMPDIR/env.md" ] || die "ftmpi-info --env-markdown printed nothing"
if ! diff -u "$DOC" "$TEST_TMPDIR/env.md" >&2; then
    die "doc/ENVIRONMENT.md is out of date; regenerate with: ftmpi-info --env-markdown > doc/ENVIRONMENT.md (or make env-doc)"
fi
echo "PASS ($TEST_NAME)"
