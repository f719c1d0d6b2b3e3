#!/bin/sh
# test_layering.sh - the layers of README "Layout" hold, in the sources and in
# the built libraries.  The README's table is the rule: each row names its
# files (a folder, or single files that are their own library), its library
# and what it "May use" (the short names of rows above it, API for ftmpi.h,
# outside libraries by name, single headers in backticks; bold words are not
# read).  This test
#  1. reads the table, and refuses a row that names a layer below itself;
#  2. reads every #include of src/, lighthouse/, mpi_shim/ and tools/: a
#     header of another folder must be named with its folder ("base/log.h"),
#     and its layer (or that very header) must be in the row's "May use";
#     system headers of MPI, protobuf-c, libevent, OpenSSL, xxhash, hwloc,
#     CUDA, NCCL and UCX count as those libraries;
#  3. reads every convenience library's undefined symbols (nm): each one that
#     another of our libraries defines must come from a layer the row may use
#     (a single root header in the cell allows the object of that name), each
#     MPI, protobuf-c, libevent, OpenSSL, xxhash, hwloc, CUDA, NCCL or UCX symbol
#     from a library the row names;
#  4. as before: the MPI-free libraries and programs carry no MPI symbol and
#     ftmpi-baby links no control plane;
#  6. (see below) a library built without configure --enable-test-hooks
#     holds no FTMPI_TEST_* name: no production build reads a test hook;
#  7. (see below) no code outside src/mode/ asks which mode runs: no
#     `mode_b` and no `->shim`/`.shim` in src/ but in src/mode/ (the step
#     reads the mode table, mode/mode.h);
#  8. (see below) DESIGN.md's layer table is the README's, copied by
#     scripts/design-layers;
#  9. (see below) every file DESIGN.md names with its folder exists;
#  5. every "DESIGN section N" (or "DESIGN.md sections N and M", "DESIGN §N")
#     cited in the code, the build files and the tests is a heading
#     "## N." of doc/DESIGN.md.
# Set LAYERING_README to check another copy of the table (the test's own
# failing case does).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"

need_cmd nm awk
S=$top_srcdir
B=$top_builddir
README=${LAYERING_README:-$S/README.md}
[ -f "$README" ] || die "no $README"
rules=$TEST_TMPDIR/rules

# ---- 1. the table: one line per row: index, short name, paths, libraries, may-use tokens
awk -F'|' '
/^## Layout/ { on = 1; next }
on && /^## / { on = 0 }
on && /^\| `/ {
    paths = $2; libs = $3; may = $5
    gsub(/\*\*[^*]*\*\*/, "", may)              # bold words are not read
    np = 0; out = ""
    while (match(paths, /`[^`]+`/)) {
        p = substr(paths, RSTART + 1, RLENGTH - 2); paths = substr(paths, RSTART + RLENGTH)
        out = out (np++ ? "," : "") p
    }
    first = out; sub(/,.*/, "", first)
    short = first
    if (short ~ /^src\/[a-z_]+\/?/) { sub(/^src\//, "", short); sub(/\/.*/, "", short) }
    else if (short == "src/") short = "step"
    else sub(/\/.*/, "", short)
    ls = ""; nl = 0
    while (match(libs, /`lib[a-z_]+\.la`/)) {
        ls = ls (nl++ ? "," : "") substr(libs, RSTART + 1, RLENGTH - 5); libs = substr(libs, RSTART + RLENGTH)
    }
    toks = ""; n = split(may, parts, /[,;(]/)
    for (i = 1; i <= n; i++) {
        t = parts[i]; gsub(/^ +| +$/, "", t)
        if (t ~ /^`[^`]+`/) { t = substr(t, 2); sub(/`.*/, "", t) }
        else if (t ~ /^everything above/) t = "ALL"
        else sub(/ .*/, "", t)
        if (t != "") toks = toks " " t
    }
    printf "%d\t%s\t%s\t%s\t%s\n", ++row, short, out, ls, toks
}' "$README" > "$rules"
[ "$(wc -l < "$rules")" -ge 10 ] || die "README $README: the Layout table has $(wc -l < "$rules") rows"

# a row may only name layers of rows above it
bad=$(awk -F'\t' '
{ if (!($2 in idx)) idx[$2] = $1 + 0; row[NR] = $0 }
END {
    for (r = 1; r <= NR; r++) {
        split(row[r], f, "\t"); n = split(f[5], t, " ")
        for (i = 1; i <= n; i++)
            if ((t[i] in idx) && idx[t[i]] >= f[1] + 0 && t[i] != f[2])
                printf "row %s (%s) may use %s, which is not above it\n", f[1], f[2], t[i]
    }
}' "$rules")
[ -z "$bad" ] || die "README Layout: $bad"

# ---- 2. includes
files=$(cd "$S" && ls src/*.[ch] src/*/*.[ch] lighthouse/*.[ch] mpi_shim/*.[ch] tools/*.c 2>/dev/null)
[ -n "$files" ] || die "no sources under $S"
viol=$TEST_TMPDIR/includes
: > "$viol"
for f in $files; do
    grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]' "$S/$f" | sed "s|^|$f:|"
done | awk -F'\t' -v S="$S" -v B="$B" -v rules="$rules" '
function exists(p) { return (system("test -f \"" p "\"") == 0) }
function row_of(file,   r, n, p, i, dir, best) {
    best = ""
    for (r = 1; r <= nrows; r++) {
        n = split(rpaths[r], p, ",")
        for (i = 1; i <= n; i++) if (p[i] == file) return r
    }
    dir = file; sub(/[^\/]*$/, "", dir)
    for (r = 1; r <= nrows; r++) {
        n = split(rpaths[r], p, ",")
        for (i = 1; i <= n; i++) if (p[i] == dir && best == "") best = r
    }
    return best
}
function may(r, what,   n, t, i) {
    n = split(rtoks[r], t, " ")
    for (i = 1; i <= n; i++) {
        if (t[i] == what) return 1
        if (t[i] == "ALL" && (!(what in idx) || idx[what] < r + 0)) return 1
    }
    return 0
}
BEGIN {
    while ((getline line < rules) > 0) {
        split(line, f, "\t"); nrows++
        rshort[f[1]] = f[2]; rpaths[f[1]] = f[3]; rtoks[f[1]] = f[5]
        if (!(f[2] in idx)) idx[f[2]] = f[1] + 0
    }
}
{
    # file:line:#include ...
    split($0, c, ":"); file = c[1]; ln = c[2]
    text = substr($0, length(file) + length(ln) + 3)
    r = row_of(file)
    if (r == "") { printf "%s: no row of README Layout holds it\n", file; next }
    me = rshort[r]; dir = file; sub(/[^\/]*$/, "", dir)
    if (match(text, /<[^>]+>/)) {
        h = substr(text, RSTART + 1, RLENGTH - 2); lib = ""
        if (h == "mpi.h" || h == "mpi-ext.h") lib = "MPI"
        else if (h ~ /^protobuf-c\//) lib = "protobuf-c"
        else if (h ~ /^event2\//) lib = "libevent"
        else if (h ~ /^openssl\//) lib = "OpenSSL"
        else if (h == "xxhash.h") lib = "xxhash"
        else if (h ~ /^hwloc/) lib = "hwloc"
        else if (h ~ /^cuda/) lib = "CUDA"
        else if (h ~ /^nccl/) lib = "NCCL"
        else if (h ~ /^(ucp|ucs)\//) lib = "UCX"
        if (lib != "" && !may(r, lib))
            printf "%s:%s: includes <%s>, but %s (%s) may not use %s\n", file, ln, h, me, rpaths[r], lib
        next
    }
    if (!match(text, /"[^"]+"/)) next
    h = substr(text, RSTART + 1, RLENGTH - 2)
    if (h ~ /^src\// || h ~ /^\.\./) { printf "%s:%s: \"%s\": name a header from src/ (or lighthouse/, mpi_shim/) down\n", file, ln, h; next }
    if (h !~ /\//) {
        if (exists(S "/" dir h)) next                    # its own folder
        if (h == "ftmpi_errors.h" || h == "ftmpi_config.h") next
        if (!exists(S "/src/" h)) { printf "%s:%s: bare include \"%s\" of another folder: name its folder\n", file, ln, h; next }
        if (h == "ftmpi.h") { if (!may(r, "API")) printf "%s:%s: includes ftmpi.h, but %s may not use API\n", file, ln, me; next }
        if (!may(r, "step") && !may(r, h))
            printf "%s:%s: includes \"%s\" of the step (src/), which %s (%s) may not use\n", file, ln, h, me, rpaths[r]
        next
    }
    layer = h; sub(/\/.*/, "", layer)
    if (layer == me || h == file) next
    if (!(layer in idx)) { printf "%s:%s: \"%s\": %s is no layer of README Layout\n", file, ln, h, layer; next }
    if (!may(r, layer) && !may(r, h))
        printf "%s:%s: includes \"%s\", but %s (%s) may not use %s\n", file, ln, h, me, rpaths[r], layer
}' > "$viol"
if [ -s "$viol" ]; then
    cat "$viol"
    die "$(wc -l < "$viol") include(s) break README Layout"
fi

# ---- 3. link dependencies of the convenience libraries
libs=$(awk -F'\t' '$4 != "" { n = split($4, l, ","); for (i = 1; i <= n; i++) if (l[i] ~ /^libfti_/) print l[i] }' "$rules")
[ -n "$libs" ] || die "README Layout names no libfti_ library"
syms=$TEST_TMPDIR/syms
: > "$syms"
for lib in $libs; do
    a=$B/.libs/$lib.a
    [ -f "$a" ] || die "$a not built"
    nm -A "$a" 2>/dev/null | awk -v lib="$lib" '
        { n = split($1, p, ":"); obj = p[n - 1] }
        NF == 3 && $2 ~ /^[TDBRV]$/ { print "D", lib, obj, $3 }
        NF == 2 && $2 == "U" { print "U", lib, obj, $3 }
        NF == 3 && $2 == "U" { print "U", lib, obj, $3 }' >> "$syms"
done
link_bad=$(awk -v rules="$rules" '
function may(r, what,   n, t, i) {
    n = split(rtoks[r], t, " ")
    for (i = 1; i <= n; i++) {
        if (t[i] == what) return 1
        if (t[i] == "ALL" && (!(what in idx) || idx[what] < r + 0)) return 1
    }
    return 0
}
BEGIN {
    while ((getline line < rules) > 0) {
        split(line, f, "\t")
        rshort[f[1]] = f[2]; rtoks[f[1]] = f[5]
        if (!(f[2] in idx)) idx[f[2]] = f[1] + 0
        n = split(f[4], l, ","); for (i = 1; i <= n; i++) librow[l[i]] = f[1]
    }
}
$1 == "D" { deflib[$4] = $2; defobj[$4] = $3; next }
{ und[NR] = $2 " " $3 " " $4 }
END {
    for (k in und) {
        split(und[k], u, " "); lib = u[1]; s = u[3]; r = librow[lib]; ext = ""
        if (s in deflib) {
            m = deflib[s]; if (m == lib) continue
            layer = rshort[librow[m]]; if (layer == rshort[r]) continue
            hdr = defobj[s]; sub(/^lib[a-z_]+_la-/, "", hdr); sub(/\.o$/, ".h", hdr)
            if (may(r, layer) || (layer == "step" && may(r, hdr))) continue
            printf "%s (%s) uses %s from %s (%s)\n", lib, rshort[r], s, m, layer
            continue
        }
        if (s ~ /^P?MPIX?_|^ompi_/) ext = "MPI"
        else if (s ~ /^protobuf_c_/) ext = "protobuf-c"
        else if (s ~ /^(event_|evbuffer_|evconnlistener_|evhttp_|evutil_|bufferevent_|evthread_)/) ext = "libevent"
        else if (s ~ /^(EVP_|HMAC|RAND_|CRYPTO_|OPENSSL_)/) ext = "OpenSSL"
        else if (s ~ /^XXH/) ext = "xxhash"
        else if (s ~ /^hwloc_/) ext = "hwloc"
        else if (s ~ /^cuda|^cu[A-Z]/) ext = "CUDA"
        else if (s ~ /^nccl/) ext = "NCCL"
        else if (s ~ /^(ucp|ucs)_/) ext = "UCX"
        if (ext != "" && !may(r, ext) && !seen[lib, ext]++)
            printf "%s (%s) uses %s (%s), which README Layout does not let it use\n", lib, rshort[r], ext, s
    }
}' "$syms" | sort)
[ -z "$link_bad" ] || { echo "$link_bad"; die "$(echo "$link_bad" | wc -l) link dependencies break README Layout"; }
nlibs=$(echo "$libs" | wc -w)

# ---- 4. no MPI below the step, in the objects
checked=0
for lib in libfti_base libfti_control libfti_comm libfti_state libfti_heal libfti_lighthouse; do
    a=$B/.libs/$lib.a
    [ -f "$a" ] || die "$a not built"
    syms=$(nm -A "$a" 2>/dev/null | grep -E ' [UTDBR] (P?MPI_|ompi_|MPIX_)' || true)
    [ -z "$syms" ] || die "$lib uses MPI: $(echo "$syms" | head -5)"
    checked=$((checked + 1))
done
for prog in ftmpi-lighthouse ftmpi-run ftmpi-info ftmpi-baby ftmpi-ckpt; do
    bin=$B/.libs/$prog
    [ -x "$bin" ] || bin=$B/$prog
    [ -x "$bin" ] || die "$prog not built"
    syms=$(nm "$bin" 2>/dev/null | grep -E ' [UTDBR] (P?MPI_|ompi_)' || true)
    [ -z "$syms" ] || die "$prog uses MPI: $(echo "$syms" | head -5)"
    if command -v ldd >/dev/null 2>&1 && ldd "$bin" 2>/dev/null | grep -q 'libmpi'; then
        die "$prog is linked against libmpi"
    fi
    checked=$((checked + 1))
done
# the mpi backend's library is the one place in src/comm that does use MPI
nm "$B/.libs/libfti_comm_mpi.a" | grep -q ' U PMPI_\| U MPI_' || die "libfti_comm_mpi.a has no MPI symbol: the check above would prove nothing"
# ftmpi-baby links only src/base and src/comm: no control plane (protobuf,
# libevent's server) in the child either
bin=$B/ftmpi-baby
[ -x "$bin" ] || die "ftmpi-baby not built"
syms=$(nm "$bin" 2>/dev/null | grep -E ' [TU] (protobuf_c_|ftmpi__|fti_store_|fti_manager_|fti_lighthouse)' || true)
[ -z "$syms" ] || die "ftmpi-baby links the control plane: $(echo "$syms" | head -5)"
if command -v ldd >/dev/null 2>&1 && ldd "$bin" 2>/dev/null | grep -Eq 'libmpi|libprotobuf-c'; then
    die "ftmpi-baby is linked against libmpi or protobuf-c"
fi
# ---- 5. the design the code cites is in the tree
D=$S/doc/DESIGN.md
[ -f "$D" ] || die "no doc/DESIGN.md"
need_cmd perl
cites=$(cd "$S" && find src lighthouse mpi_shim tools tests examples -type f \
    \( -name '*.[ch]' -o -name '*.sh' -o -name '*.inc' -o -name '*.cpp' -o -name '*.f90' \) |
    sort | xargs perl -0777 -ne '
        (my $t = $_) =~ s/\n\s*(?:\*|#|\/\/|!)?\s*/ /g;
        while ($t =~ /DESIGN(?:\.md)?\s+(?:sections?|\x{a7}|\xc2\xa7)\s*(\d+(?:\s*(?:,|and|-|\x{2013})\s*\d+)*)/g) {
            my $l = $1; print "$ARGV $_\n" for ($l =~ /(\d+)/g);
        }')
ncites=0
missing=
for n in $(echo "$cites" | awk 'NF == 2 { print $2 }' | sort -un); do
    grep -q "^## $n\. " "$D" || missing="$missing $n ($(echo "$cites" | awk -v n="$n" '$2 == n { print $1 }' | sort -u | head -3 | tr '\n' ' '))"
done
ncites=$(echo "$cites" | grep -c . || true)
[ -z "$missing" ] || die "doc/DESIGN.md has no section$missing"
[ "$ncites" -gt 0 ] || die "found no DESIGN citation at all: the check above would prove nothing"

# ---- 6. test hooks only where configure asked for them
hooks=no
grep -q '^#define FTMPI_TEST_HOOKS 1' "$B/ftmpi_config.h" 2>/dev/null && hooks=yes
for so in "$B/.libs/libftmpi.so" "$B/.libs/libftmpi_pmpi.so"; do
    [ -f "$so" ] || continue
    n=$(strings "$so" | grep -c 'FTMPI_TEST_' || true)
    if [ $hooks = no ] && [ "$n" -gt 0 ]; then
        die "$so was built without --enable-test-hooks but holds $n FTMPI_TEST_* string(s)"
    fi
done

# ---- 7. the mode table: only src/mode/ knows which mode runs
asks=$(cd "$S" && grep -rnE '\bmode_b\b|(->|\.)shim\b' src | grep -v '^src/mode/' || true)
[ -z "$asks" ] || die "code outside src/mode/ asks which mode runs (read the mode table, src/mode/mode.h, instead):
$asks"

# ---- 8. DESIGN.md's layer table is the README's (scripts/design-layers), and
# the check can fail: a copy of DESIGN.md with one cell changed is refused
sh "$S/scripts/design-layers" --check >"$TEST_TMPDIR/layers.out" 2>&1 ||
    die "$(cat "$TEST_TMPDIR/layers.out")"
sed 's/^| `src\/base\/` | `libfti_base.la` |/| `src\/base\/` | `libfti_other.la` |/' "$S/doc/DESIGN.md" >"$TEST_TMPDIR/DESIGN.md"
! cmp -s "$S/doc/DESIGN.md" "$TEST_TMPDIR/DESIGN.md" || die "could not make a differing copy of DESIGN.md"
DESIGN_LAYERS_DESIGN=$TEST_TMPDIR/DESIGN.md sh "$S/scripts/design-layers" --check >/dev/null 2>&1 &&
    die "scripts/design-layers --check took a DESIGN.md whose layer table differs from the README's"

# ---- 9. every file DESIGN.md names with its folder (`src/heal/fetch.c`, or
# as an include names it, `mode/mode.h`) is in the tree
design_paths() {
    grep -oE '`[a-zA-Z0-9_./-]+/[a-zA-Z0-9_.-]+\.(c|h|sh|md|inc|proto|am|supp)`' "$1" | tr -d '`' | sort -u
}
gone=
for f in $(design_paths "$S/doc/DESIGN.md"); do
    [ -e "$S/$f" ] || [ -e "$S/src/$f" ] || gone="$gone $f"
done
[ -z "$gone" ] || die "doc/DESIGN.md names files that are not in the tree:$gone"
ndesign=$(design_paths "$S/doc/DESIGN.md" | wc -l)
[ "$ndesign" -gt 50 ] || die "found only $ndesign file names in doc/DESIGN.md: the check above would prove little"
printf 'see `src/heal/fetched.c`\n' >"$TEST_TMPDIR/fake.md"
[ "$(design_paths "$TEST_TMPDIR/fake.md")" = src/heal/fetched.c ] || die "the file-name reader missed a made-up name"

echo "ok: test hooks $hooks; $ncites DESIGN citations found in doc/DESIGN.md; $(wc -l < "$rules") rows of README Layout; includes of $(echo "$files" | wc -w) files; link dependencies of $nlibs libraries; $checked libraries and programs without MPI"
