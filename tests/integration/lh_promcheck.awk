# lh_promcheck.awk - checks every line of a Prometheus text exposition
# (format 0.0.4; POSIX awk, mawk included).  Prints "line N: problem: text"
# for each problem and exits 1 if there was any.
#
#   comments  "# HELP name text", "# TYPE name counter|gauge|histogram|summary|untyped"
#             (at most one of each per name, TYPE before the name's samples)
#   samples   name{label="value",...} value [timestamp]: valid metric and label
#             names, escapes \\ \" \n only, a float value (or NaN, +Inf, -Inf);
#             every sample's family has a TYPE, a family's samples are
#             contiguous, counters are >= 0
#   histograms  per series (label set without le): _bucket samples carry le,
#             le ascending, counts cumulative
#             (non-decreasing), the last bucket is le="+Inf" and equals
#             _count, _sum is present

function problem(msg) {
    printf "line %d: %s: %s\n", NR, msg, $0
    bad = 1
}

function valid_name(s) { return s ~ /^[a-zA-Z_:][a-zA-Z0-9_:]*$/ }

function valid_value(s) {
    return s ~ /^[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?$/ ||
        s == "NaN" || s == "+Inf" || s == "-Inf"
}

function num(s) {
    if (s == "+Inf") return 1e308 * 10
    if (s == "-Inf") return -1e308 * 10
    return s + 0
}

# Parses the label set at the start of str ("{...}"); fills lab[] and
# returns the rest of the line after "}", or the string "ERR".
function parse_labels(str,    i, c, lname, val, n) {
    split("", lab)
    i = 2
    n = length(str)
    if (substr(str, i, 1) == "}") return substr(str, i + 1)
    while (i <= n) {
        if (!match(substr(str, i), /^[a-zA-Z_][a-zA-Z0-9_]*/)) return "ERR"
        lname = substr(str, i, RLENGTH)
        i += RLENGTH
        if (substr(str, i, 2) != "=\"") return "ERR"
        i += 2
        val = ""
        while (1) {
            if (i > n) return "ERR"
            c = substr(str, i, 1)
            if (c == "\\") {
                c = substr(str, i + 1, 1)
                if (c != "\\" && c != "\"" && c != "n") return "ERR"
                val = val "\\" c
                i += 2
                continue
            }
            if (c == "\"") break
            val = val c
            i++
        }
        i++
        if (lname in lab) return "ERR"
        lab[lname] = val
        c = substr(str, i, 1)
        i++
        if (c == "}") return substr(str, i)
        if (c != ",") return "ERR"
    }
    return "ERR"
}

/^# HELP / {
    if (!valid_name($3)) problem("bad metric name in HELP")
    if ($3 in help) problem("second HELP")
    help[$3] = 1
    next
}
/^# TYPE / {
    if (!valid_name($3)) problem("bad metric name in TYPE")
    if (NF != 4 || $4 !~ /^(counter|gauge|histogram|summary|untyped)$/) problem("bad TYPE line")
    if ($3 in type) problem("second TYPE")
    if ($3 in seen) problem("TYPE after the samples")
    type[$3] = $4
    next
}
/^#/ { next }
/^$/ { next }
{
    if (!match($0, /^[a-zA-Z_:][a-zA-Z0-9_:]*/)) { problem("bad sample name"); next }
    name = substr($0, 1, RLENGTH)
    rest = substr($0, RLENGTH + 1)
    split("", lab)
    ltxt = ""
    if (substr(rest, 1, 1) == "{") {
        orig = rest
        rest = parse_labels(rest)
        if (rest == "ERR") { problem("bad label set"); next }
        ltxt = substr(orig, 1, length(orig) - length(rest))
    }
    if (substr(rest, 1, 1) != " ") { problem("no space before the value"); next }
    nf = split(substr(rest, 2), parts, " ")
    if (nf < 1 || nf > 2 || substr(rest, 2, 1) == " ") { problem("bad value field"); next }
    value = parts[1]
    if (!valid_value(value)) { problem("value is not a float"); next }
    if (nf == 2 && parts[2] !~ /^-?[0-9]+$/) { problem("bad timestamp"); next }

    family = name
    suffix = ""
    if (match(name, /_(bucket|sum|count)$/)) {
        base = substr(name, 1, RSTART - 1)
        if (type[base] == "histogram" || type[base] == "summary") {
            family = base
            suffix = substr(name, RSTART + 1)
        }
    }
    if (!(family in type)) problem("sample without a TYPE")
    if (family != last_family && (family in seen)) problem("samples of the family are not contiguous")
    seen[family] = 1
    last_family = family
    if (type[family] == "counter" && num(value) < 0) problem("negative counter")

    if (type[family] == "histogram") {
        if (suffix == "") { problem("histogram sample without _bucket/_sum/_count"); next }
        # one series per label set (le aside): its own buckets, _sum, _count
        sub(/le="[^"]*",?/, "", ltxt)
        sub(/,}$/, "}", ltxt)
        if (ltxt == "{}") ltxt = ""
        hs = family "|" ltxt
        hseries[hs] = 1
        if (suffix == "bucket") {
            if (!("le" in lab)) { problem("bucket without le"); next }
            if (!valid_value(lab["le"])) { problem("le is not a float"); next }
            if (hs in inf_seen) problem("bucket after le=\"+Inf\"")
            if ((hs in last_le) && num(lab["le"]) <= last_le[hs]) problem("le not ascending")
            if ((hs in last_cnt) && num(value) < last_cnt[hs]) problem("buckets not cumulative")
            last_le[hs] = num(lab["le"])
            last_cnt[hs] = num(value)
            if (lab["le"] == "+Inf") { inf_seen[hs] = 1; inf_val[hs] = num(value) }
        } else if (suffix == "count") {
            count_val[hs] = num(value)
            has_count[hs] = 1
        } else {
            has_sum[hs] = 1
        }
    }
}
END {
    for (f in hseries) {
        if (!(f in inf_seen)) { printf "histogram %s: no le=\"+Inf\" bucket\n", f; bad = 1 }
        if (!(f in has_count)) { printf "histogram %s: no _count\n", f; bad = 1 }
        if (!(f in has_sum)) { printf "histogram %s: no _sum\n", f; bad = 1 }
        if ((f in inf_seen) && (f in has_count) && inf_val[f] != count_val[f]) {
            printf "histogram %s: le=\"+Inf\" bucket %s != _count %s\n", f, inf_val[f], count_val[f]
            bad = 1
        }
    }
    exit bad
}
