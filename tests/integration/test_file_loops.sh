#!/bin/sh
# test_file_loops.sh - no two C files of one folder lean on each other
# (issue 39 item 3): within each folder of src/, lighthouse/, mpi_shim/ and
# tools/, file A leans on file B when A names a function that B defines
# with external linkage (comments and string literals are not read); a
# loop is a set of files that lean on one another, round.  Such files are
# one unit cut in two: the piece both need goes into a file of its own that
# both use (src/heal/source.c under fetch.c and verify.c).
#
# A function is what this project's style writes: its head in column 0,
# not static, with "(" and no ";" at the end of the line; main is left out.
#
# LOOPS_KNOWN lists the loops of today's tree that others are taking apart,
# one a line, their files separated by spaces: a loop whose files all stand
# on one known line passes, with a note; any other loop fails.
# The test first runs the checker on made-up folders (a loop of two, one
# of three, a use only in a comment or a string, a static namesake) so
# that it cannot pass by finding nothing.  LOOPS_SRCDIR checks another
# tree (the failing case: main before the heal split, src/heal/fetch.c and
# verify.c).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"

need_cmd awk find sort
S=${LOOPS_SRCDIR:-$top_srcdir}
LOOPS_KNOWN=''

# loops FILE...: one line per loop, its files sorted, separated by spaces;
# every file must be a path with its folder ("dir/name.c")
loops() {
    awk '
    function strip(s,    out, i, c, n) {   # drops comments and literals
        out = ""; n = length(s)
        for (i = 1; i <= n; i++) {
            c = substr(s, i, 1)
            if (incmt) {
                if (c == "*" && substr(s, i + 1, 1) == "/") { incmt = 0; i++ }
                continue
            }
            if (inq != "") {
                if (c == "\\") { i++; continue }
                if (c == inq) inq = ""
                continue
            }
            if (c == "/" && substr(s, i + 1, 1) == "*") { incmt = 1; i++; continue }
            if (c == "/" && substr(s, i + 1, 1) == "/") break
            if (c == "\"" || c == "'\''") { inq = c; out = out " "; continue }
            out = out c
        }
        return out
    }
    FNR == 1 {
        nf++; file[nf] = FILENAME; incmt = 0; inq = ""
        d = FILENAME; sub(/\/[^\/]*$/, "", d); dir[nf] = d
    }
    {
        line = strip($0); inq = ""
        text[nf] = text[nf] " " line
        if (line ~ /^[A-Za-z_]/ && line !~ /^(typedef|extern)[ \t]/ && line ~ /\(/ &&
            line !~ /;[ \t]*$/) {
            s = line; sub(/[ \t]*\(.*/, "", s); k = split(s, w, /[ \t*]+/); name = w[k]
            if (name !~ /^[A-Za-z_][A-Za-z0-9_]*$/ || name == "main")
                next
            if (line ~ /^static[ \t]/)
                own[nf, name] = 1   # its uses in this file are its own
            else
                def[name] = def[name] " " nf
        }
    }
    END {
        # A -> B: A names a function of B (same folder, word boundaries)
        for (a = 1; a <= nf; a++) {
            t = text[a]; gsub(/[^A-Za-z0-9_]+/, " ", t)
            m = split(t, tok, " ")
            delete seen
            for (i = 1; i <= m; i++) {
                if (!(tok[i] in def) || (tok[i] in seen) || ((a, tok[i]) in own)) continue
                seen[tok[i]] = 1
                k = split(def[tok[i]], owners, " ")
                for (j = 1; j <= k; j++) {
                    b = owners[j] + 0
                    if (b != a && dir[b] == dir[a]) reach[a, b] = 1
                }
            }
        }
        for (k = 1; k <= nf; k++)       # every path (Warshall)
            for (a = 1; a <= nf; a++)
                if ((a, k) in reach)
                    for (b = 1; b <= nf; b++)
                        if ((k, b) in reach) reach[a, b] = 1
        for (a = 1; a <= nf; a++) {
            if (done[a]) continue
            lp = file[a]; n = 1
            for (b = a + 1; b <= nf; b++)
                if (((a, b) in reach) && ((b, a) in reach)) { lp = lp "\n" file[b]; done[b] = 1; n++ }
            if (n > 1) print lp "\n--"
        }
    }' "$@" | awk '/^--$/ { print l; l = ""; next } { l = l (l == "" ? "" : " ") $0 }' |
        while read -r l; do echo "$l" | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//'; echo; done |
        sort
}

# ---- the checker finds what it must --------------------------------------
t=$TEST_TMPDIR/tree
mkdir -p "$t/two" "$t/three" "$t/none"
printf 'int fti_a(void)\n{\n    return fti_b();\n}\n' > "$t/two/a.c"
printf 'int fti_b(void)\n{\n    return fti_a() + 1;\n}\n' > "$t/two/b.c"
printf 'int x(void)\n{\n    return y();\n}\n' > "$t/three/x.c"
printf 'int y(void)\n{\n    return z();\n}\n' > "$t/three/y.c"
printf 'int z(void)\n{\n    return x();\n}\n' > "$t/three/z.c"
# p -> q only: q names p in a comment and a string, and calls a static p
# of its own
printf 'int p(void)\n{\n    return q();\n}\n' > "$t/none/p.c"
printf '/* p() */\nstatic int p(void)\n{\n    return 0;\n}\nconst char *s = "p()";\nint q(void)\n{\n    return p(); // p\n}\n' > "$t/none/q.c"
out=$(cd "$t" && loops two/a.c two/b.c three/x.c three/y.c three/z.c none/p.c none/q.c)
want='three/x.c three/y.c three/z.c
two/a.c two/b.c'
[ "$out" = "$want" ] || die "the checker found '$out' in the made-up folders, not '$want'"
# the same files in two folders are no loop
mkdir -p "$t/other" && cp "$t/two/b.c" "$t/other/b.c"
out=$(cd "$t" && loops two/a.c other/b.c)
[ -z "$out" ] || die "files of two folders made a loop: '$out'"

# ---- the tree --------------------------------------------------------------
generated='^(mpi_shim/wrappers\.c|src/control/proto/[^/]*\.pb-c\.c)$'
files=$(cd "$S" && find src lighthouse mpi_shim tools -name '*.c' | grep -Ev "$generated" | sort)
[ -n "$files" ] || die "no sources under $S"
found=$(cd "$S" && loops $files)
bad=
for l in $(echo "$found" | tr ' ' '+'); do
    l=$(echo "$l" | tr '+' ' ')
    if echo "$LOOPS_KNOWN" | awk -v l="$l" '
        BEGIN { n = split(l, f, " ") }
        { k = 0; for (i = 1; i <= n; i++) k += index(" " $0 " ", " " f[i] " ") > 0 }
        k == n { found = 1 } END { exit !found }'; then
        echo "note: a known loop, still to take apart: $l"
    else
        bad="$bad$l
"
    fi
done
if [ -n "$bad" ]; then
    printf '%s' "$bad"
    die "$(printf '%s' "$bad" | wc -l) loop(s) between files of one folder (move what both need into a file of its own)"
fi
echo "ok: $(echo "$files" | wc -w) files, no loop between files of one folder but the known ones"
