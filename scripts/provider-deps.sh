#!/bin/sh
# provider-deps.sh - the iwarp provider's file dependency graph, derived from its object files:
# each .o's undefined symbols resolved to the .o that defines them (nm). Prints the edges
# (a -> b: a.c uses something b.c defines) and the strongly connected components with more
# than one file (the import cycles), so claims about the provider's structure can be checked.
#
# Usage: scripts/provider-deps.sh [BUILD_DIR]   (default build/dev; build it first)
#        scripts/provider-deps.sh --edges ...   also list every edge with the symbols behind it
set -eu
verbose=0
if [ "${1:-}" = "--edges" ]; then verbose=1; shift; fi
build=${1:-build/dev}
dir="$build/src/providers/iwarp"
link="$dir/CMakeFiles/ndk-iwarp.dir/link.txt"
[ -f "$link" ] || { echo "provider-deps: no $link (configure and build first)" >&2; exit 2; }
# The module's inputs as its link line names them (so stale objects of removed files do not
# count): its object files and the provider's own static archives (the wire layer).
inputs=$(tr ' ' '\n' < "$link" | tr -d '"' | grep -E '\.(o|a)$' | grep -v '^/' | sort -u)
[ -n "$inputs" ] || { echo "provider-deps: no objects on the link line of $link" >&2; exit 2; }

for i in $inputs; do
    case $i in *common*) continue ;; esac      # src/common is not the provider's
    (cd "$dir" && nm -A "$i")
done | sed -E 's/^([^ ]*[:/])?([^/: ]+)\.c\.o:/\2 /' | awk '
    NF == 4 && $3 ~ /^[TDBRC]$/ { print "D", $1, $4 } NF == 3 && $2 == "U" { print "U", $1, $3 }' |
awk -v verbose="$verbose" '
$1 == "D" { def[$3] = $2; files[$2] = 1; next }
$1 == "U" { use[++n] = $2 " " $3; files[$2] = 1 }
END {
    for (i = 1; i <= n; i++) {
        split(use[i], u, " ")
        d = def[u[2]]
        if (d == "" || d == u[1]) continue
        e = u[1] " " d
        if (!(e in edge)) { edge[e] = u[2]; ne++ } else if (length(edge[e]) < 200) edge[e] = edge[e] "," u[2]
        adj[u[1], d] = 1
    }
    nf = 0
    for (f in files) name[++nf] = f
    # sort names (insertion sort: a few dozen files)
    for (i = 2; i <= nf; i++) { v = name[i]; j = i - 1; while (j > 0 && name[j] > v) { name[j + 1] = name[j]; j-- } name[j + 1] = v }
    print "edges (" ne "):"
    for (i = 1; i <= nf; i++) {
        line = ""
        for (j = 1; j <= nf; j++) if ((name[i], name[j]) in adj) line = line " " name[j]
        if (line != "") print "  " name[i] " ->" line
        if (verbose) for (j = 1; j <= nf; j++) if ((name[i], name[j]) in adj) print "      " name[i] " -> " name[j] ": " edge[name[i] " " name[j]]
    }
    # transitive closure (Floyd-Warshall over reachability)
    for (i = 1; i <= nf; i++) for (j = 1; j <= nf; j++) r[i, j] = ((name[i], name[j]) in adj)
    for (k = 1; k <= nf; k++) for (i = 1; i <= nf; i++) if (r[i, k]) for (j = 1; j <= nf; j++) if (r[k, j]) r[i, j] = 1
    print "strongly connected components with more than one file:"
    found = 0
    for (i = 1; i <= nf; i++) {
        if (done[i]) continue
        comp = name[i]; size = 1
        for (j = i + 1; j <= nf; j++) if (!done[j] && r[i, j] && r[j, i]) { comp = comp " " name[j]; size++; done[j] = 1 }
        done[i] = 1
        if (size > 1) { print "  {" comp " }"; found = 1
            # the edges inside the component
            split(comp, c, " ")
            for (a = 1; a <= size; a++) for (b = 1; b <= size; b++) if ((c[a], c[b]) in adj) print "      " c[a] " -> " c[b] ": " edge[c[a] " " c[b]]
        }
    }
    if (!found) print "  none"
}'
