#!/bin/sh
# test_man.sh - the man pages of doc/man render without a warning (man -l,
# groff -ww), each tool's page names every option of its --help, and
# ftmpi(3) names every exported function of src/ftmpi.h and every error
# code of src/ftmpi_errors.h; each FT_ function has its ftmpi(3) alias page;
# libftmpi_pmpi(7) names every FTMPI_SHIM_* setting.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"

command -v groff >/dev/null 2>&1 || skip "no groff: cannot render man pages"
need_cmd timeout
M=$top_srcdir/doc/man
T=$TEST_TMPDIR
BS=$(printf '\b')

# render PAGE OUT: plain text, long lines (no hyphenation breaks an option),
# no overstriking; fails on any groff warning
render() {
    LC_ALL=C groff -man -Tascii -ww -rLL=2000n "$1" 2>"$T/groff.err" | sed "s/.$BS//g" >"$2"
    [ ! -s "$T/groff.err" ] || die "groff -ww $(basename "$1"): $(cat "$T/groff.err")"
    [ -s "$2" ] || die "$(basename "$1") renders empty"
}

for page in ftmpi-lighthouse.1 ftmpi-run.1 ftmpi-info.1 ftmpi-ckpt.1 ftmpi.3 libftmpi_pmpi.7; do
    [ -f "$M/$page" ] || die "no $M/$page"
    if command -v man >/dev/null 2>&1; then
        # man-db: --warnings=w passes -ww (every warning) to groff; any warning lands on stderr
        LC_ALL=C MANWIDTH=80 timeout 30 man --warnings=w -l "$M/$page" >"$T/man.out" 2>"$T/man.err" ||
            die "man -l $page failed: $(cat "$T/man.err")"
        [ ! -s "$T/man.err" ] || die "man -l $page: $(cat "$T/man.err")"
        grep -q . "$T/man.out" || die "man -l $page printed nothing"
    fi
    render "$M/$page" "$T/$page.txt"
done

# libftmpi_pmpi(7): every setting of the drop-in (FTMPI_SHIM_*, from the
# settings table) and the exit status of a job that lost a rank (70)
grep -ho '{"FTMPI_SHIM_[A-Z_]*"' "$top_srcdir"/src/base/settings*.c | tr -d '{"' | sort -u >"$T/shimset"
[ "$(wc -l <"$T/shimset")" -ge 3 ] || die "found only $(wc -l <"$T/shimset") FTMPI_SHIM_* settings"
while read -r name; do
    grep -q "$name" "$T/libftmpi_pmpi.7.txt" || die "libftmpi_pmpi.7 does not mention $name"
done <"$T/shimset"
grep -q "exits with 70" "$T/libftmpi_pmpi.7.txt" || die "libftmpi_pmpi.7 does not give the exit status 70"

# every option of a tool's --help is in its page
for tool in ftmpi-lighthouse ftmpi-run ftmpi-info; do
    [ -x "$top_builddir/$tool" ] || skip "$top_builddir/$tool not built"
    timeout 10 "$top_builddir/$tool" --help >"$T/$tool.help" 2>&1 || die "$tool --help failed"
    grep -o -- '--[a-z][a-z-]*' "$T/$tool.help" | sort -u >"$T/$tool.opts"
    [ "$(wc -l <"$T/$tool.opts")" -ge 2 ] || die "$tool --help shows no options"
    while read -r opt; do
        grep -q -- "$opt\\([^a-z-]\\|\$\\)" "$T/$tool.1.txt" || die "$tool.1 does not mention $opt (from $tool --help)"
    done <"$T/$tool.opts"
    grep -q "^NAME" "$T/$tool.1.txt" || die "$tool.1 has no NAME section"
done

# ftmpi(3): every exported function and macro of the API, every error code
sed -n 's/^FTMPI_EXPORT [^(]*[ *]\([A-Za-z_][A-Za-z0-9_]*\)(.*/\1/p' "$top_srcdir/src/ftmpi.h" \
    "$top_srcdir/src/ftmpi_errors.h" | sort -u >"$T/funcs"
[ "$(wc -l <"$T/funcs")" -ge 15 ] || die "found only $(wc -l <"$T/funcs") functions in src/ftmpi.h"
sed -n 's/^#define \(FT_[A-Z_]*\) .*/\1/p' "$top_srcdir/src/ftmpi.h" >>"$T/funcs"
grep -o 'FT_ERR_[A-Z_]*' "$top_srcdir/src/ftmpi_errors.h" | sort -u >"$T/codes"
[ "$(wc -l <"$T/codes")" -ge 15 ] || die "found only $(wc -l <"$T/codes") error codes"
while read -r name; do
    grep -q "$name\\([^A-Za-z0-9_]\\|\$\\)" "$T/ftmpi.3.txt" || die "ftmpi.3 does not mention $name"
done <"$T/funcs"
while read -r code; do
    grep -q "^ *$code\$" "$T/ftmpi.3.txt" || die "ftmpi.3 does not describe $code (ERRORS)"
done <"$T/codes"
# `man FT_Allreduce` etc.: an alias page per FT_ function
grep '^FT_' "$T/funcs" | grep -v '^FT_[A-Z_]*$' | while read -r f; do
    [ "$(cat "$M/$f.3" 2>/dev/null)" = ".so man3/ftmpi.3" ] || die "no alias page $M/$f.3"
done || exit 1
echo "PASS ($TEST_NAME)"
