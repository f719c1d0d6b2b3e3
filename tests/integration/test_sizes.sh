#!/bin/sh
# test_sizes.sh - nothing too large to read (issue 22 item 7): no C file of
# src/, lighthouse/, mpi_shim/ or tools/ over SIZES_MAX_LINES (750, issue 39; 900 before) lines,
# and no function over SIZES_MAX_FUNC (80) lines, except a state machine
# whose comment just above it says "state machine".
#
# A function is what this project's style writes: its head in column 0, its
# "{" alone on a line in column 0, its "}" alone in column 0; its length is
# the line of its "}" less the line of its "{".
#
# The test first runs the checker on made-up files (a file one line too
# long, a function one line too long, the same function marked as a state
# machine) so that it cannot pass by finding nothing.  SIZES_SRCDIR checks
# another tree (the note's failing case: main before the splits).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"

need_cmd awk wc find sort
S=${SIZES_SRCDIR:-$top_srcdir}
MAX_LINES=${SIZES_MAX_LINES:-750}
MAX_FUNC=${SIZES_MAX_FUNC:-80}

awk_prog='
FNR == 1 { incmt = 0; cmt_end = -1; insig = 0; open = 0 }
open {
    if ($0 ~ /^\}[ \t]*$/) {
        n = FNR - open
        if (n > max && tolower(sigcmt) !~ /state machine/)
            printf "%s:%d: function %s is %d lines (at most %d)\n", FILENAME, sigline, name, n, max
        open = 0
    }
    next
}
incmt { cmt = cmt " " $0; if ($0 ~ /\*\//) { incmt = 0; cmt_end = FNR }; next }
/^\/\*/ { cmt = $0; if ($0 ~ /\*\//) cmt_end = FNR; else incmt = 1; next }
/^[A-Za-z_]/ && /\(/ && !insig {
    insig = 1; sigline = FNR; sigcmt = cmt_end == FNR - 1 ? cmt : ""
    s = $0; sub(/\(.*/, "", s); k = split(s, w, /[ \t*]+/); name = w[k]
}
/^\{[ \t]*$/ && insig { open = FNR; insig = 0; next }
/[;}][ \t]*$/ { insig = 0 }
'

# check FILE...: prints one line per offender
check() {
    for f in "$@"; do
        n=$(wc -l < "$f")
        [ "$n" -le "$MAX_LINES" ] || echo "$f: $n lines (at most $MAX_LINES)"
    done
    awk -v max="$MAX_FUNC" "$awk_prog" "$@"
}

# ---- the checker finds what it must --------------------------------------
t=$TEST_TMPDIR
{
    echo '/* a function one line too long */'
    echo 'static int too_long(int x)'
    echo '{'
    i=1
    while [ "$i" -lt "$MAX_FUNC" ]; do echo '    x++;'; i=$((i + 1)); done
    echo '    return x;'
    echo '}'
} > "$t/long.c"
sed 's|^/\* a function one line too long \*/$|/* the connection'"'"'s state machine: one case per state */|' \
    "$t/long.c" > "$t/machine.c"
awk -v n="$MAX_LINES" 'BEGIN { for (i = 0; i <= n; i++) print "/* filler */" }' > "$t/big.h"
out=$(check "$t/long.c")
echo "$out" | grep -q "function too_long is $((MAX_FUNC + 1)) lines" ||
    die "the checker missed a function of $((MAX_FUNC + 1)) lines: '$out'"
out=$(check "$t/machine.c")
[ -z "$out" ] || die "the checker did not exempt a marked state machine: '$out'"
out=$(check "$t/big.h")
echo "$out" | grep -q "big.h: $((MAX_LINES + 1)) lines" ||
    die "the checker missed a file of $((MAX_LINES + 1)) lines: '$out'"

# ---- the tree --------------------------------------------------------------
# Generated files are not read by people: the drop-in's wrappers (from
# wrappers.txt and fortran.txt) and protobuf-c's code (from ftmpi.proto).  A
# build in the source folder, or make dist's tarball, puts them beside the
# sources.
generated='^(mpi_shim/wrappers\.c|src/control/proto/[^/]*\.pb-c\.[ch])$'
files=$(cd "$S" && find src lighthouse mpi_shim tools -name '*.[ch]' | grep -Ev "$generated" | sort)
[ -n "$files" ] || die "no sources under $S"
nfunc=$(cd "$S" && awk -v max=0 "$awk_prog" $files | wc -l)
[ "$nfunc" -gt 500 ] || die "the checker found only $nfunc functions in $S"
bad=$(cd "$S" && check $files)
if [ -n "$bad" ]; then
    echo "$bad"
    die "$(echo "$bad" | wc -l) file(s) or function(s) too large to read (split them by what the parts do)"
fi
echo "ok: $(echo "$files" | wc -w) files of at most $MAX_LINES lines, $nfunc functions of at most $MAX_FUNC lines (or marked state machines)"
