#!/usr/bin/env python3
"""Tests of `gstat spectral` (standard library only; the helpers of test_cli.py).

usage: test_cli_spectral.py GSTAT_BINARY GROUP [--data-dir DIR]

GROUP is one of: help, usage, malformed, karate, points, batch, json, plot, progress, fuzz.
Exit status 0 pass, 1 fail, 77 skipped.
"""
import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_cli as base  # noqa: E402  (run, check, write, the failure list)

SKIP = 77
run, check, fail, write = base.run, base.check, base.fail, base.write


def ari(a, b):
    """Adjusted Rand index of two labelings."""
    from math import comb
    n = len(a)
    pairs = {}
    for x, y in zip(a, b):
        pairs[(x, y)] = pairs.get((x, y), 0) + 1
    ca, cb = {}, {}
    for (x, y), c in pairs.items():
        ca[x] = ca.get(x, 0) + c
        cb[y] = cb.get(y, 0) + c
    s = sum(comb(c, 2) for c in pairs.values())
    sa = sum(comb(c, 2) for c in ca.values())
    sb = sum(comb(c, 2) for c in cb.values())
    expected = sa * sb / comb(n, 2)
    top = (sa + sb) / 2
    return 1.0 if top == expected else (s - expected) / (top - expected)


def labels_csv(text, cols=2):
    """Rows of a labels CSV (header checked by the caller) as lists of strings."""
    lines = text.strip("\n").split("\n")
    return lines[0], [line.rsplit(",", cols - 1) for line in lines[1:]]


def sbm_edges(rng, sizes, pin, pout):
    """Edges (i < j) of a stochastic block model, kept connected by a chain per block
    and one edge between consecutive blocks."""
    n = sum(sizes)
    block = [b for b, s in enumerate(sizes) for _ in range(s)]
    edges = set()
    for i in range(n):
        for j in range(i + 1, n):
            if rng.random() < (pin if block[i] == block[j] else pout):
                edges.add((i, j))
    start = 0
    for s in sizes:
        for i in range(start, start + s - 1):
            edges.add((i, i + 1))
        if start + s < n:
            edges.add((start, start + s))
        start += s
    return sorted(edges), block


# ---- help ----------------------------------------------------------------------------------

SPECTRAL_OPTIONS = ["--points", "--batch", "--node-ids", "--nodes", "--header", "--delimiter",
                    "--symmetrize", "--affinity", "--gamma", "--neighbors", "--eps", "--clusters",
                    "--eigengap", "--max-clusters", "--laplacian", "--assign", "--n-init",
                    "--seed", "--normalize-rows", "--drop-first", "--backend", "--threads",
                    "--output", "--embedding", "--eigenvalues", "--plot", "--format", "--verbose",
                    "--help"]


def test_help(data_dir):
    rc, out, err = run(["--help"])
    check(rc == 0 and re.search(r"^  spectral  ", out, re.M), "gstat --help lacks spectral:\n" + out)
    rc, out, err = run(["spectral", "--help"])
    check(rc == 0 and err == "", "gstat spectral --help: rc %d %s" % (rc, err))
    found = set(re.findall(r"--[a-z][a-z-]+", out))
    check(set(SPECTRAL_OPTIONS) <= found,
          "spectral --help lacks %s" % sorted(set(SPECTRAL_OPTIONS) - found))
    for word in ["Usage: gstat spectral", "default", "Examples:", "Exit status", "rbf", "knn",
                 "mutual-knn", "epsilon", "cluster-qr", "rw", "sym", "unnormalized", "graph_id",
                 "FILE:LINE:COLUMN", "-k,", "-o,", "-d,", "-v,", "'#'", "label"]:
        check(word in out, "spectral --help does not mention %r" % word)
    rc2, out2, _ = run(["help", "spectral"])
    check(rc2 == 0 and out2 == out, "gstat help spectral differs from --help")
    rc3, out3, _ = run(["spectral", "-h"])
    check(rc3 == 0 and out3 == out, "gstat spectral -h differs from --help")
    # every option of the help is accepted in some valid combination
    edges = write("h.edges", "".join("%d %d\n" % (i, (i + 1) % 12) for i in range(12)) +
                  "0 6\n")
    pts = write("h.csv", "x,y\n" + "".join("%d,%d\n" % (i % 3 * 10 + i % 2, i // 3)
                                           for i in range(30)))
    batch = write("h.batch", "".join("g%d %d %d\n" % (g, i, (i + 1) % 6)
                                     for g in range(3) for i in range(6)))
    o = os.path.join(TMP(), "h.out")
    runs = [
        ["-k", "2", edges], ["--clusters", "2", edges], ["--eigengap", edges],
        ["--eigengap", "--max-clusters", "4", edges], ["-k", "2", "--node-ids", "label", edges],
        ["-k", "2", "--node-ids", "int", "--nodes", "12", edges], ["-k", "2", "--header", edges],
        ["-k", "2", "--symmetrize", "mean", edges], ["-k", "2", "--laplacian", "sym", edges],
        ["-k", "2", "--laplacian", "unnormalized", edges], ["-k", "2", "--assign", "cluster-qr", edges],
        ["-k", "2", "--n-init", "3", "--seed", "5", edges], ["-k", "2", "--normalize-rows", edges],
        ["-k", "2", "--drop-first", edges], ["-k", "2", "--backend", "cpu", "--threads", "1", edges],
        ["-k", "2", "--output", o, "--embedding", o + "e", "--eigenvalues", o + "v", edges],
        ["-k", "2", "--format", "json", "--verbose", edges],
        ["-k", "2", "--plot", o + ".svg", edges],
        ["--points", "-k", "3", pts], ["--points", "-k", "3", "--delimiter", ",", pts],
        ["--points", "-k", "3", "--affinity", "rbf", "--gamma", "0.5", pts],
        ["--points", "-k", "3", "--affinity", "knn", "--neighbors", "5", "--symmetrize", "max",
         pts],
        ["--points", "-k", "3", "--affinity", "mutual-knn", "--neighbors", "8", pts],
        ["--points", "-k", "3", "--affinity", "epsilon", "--eps", "3", pts],
        ["--batch", "-k", "2", "--eigenvalues", o + "b", batch],
    ]
    for args in runs:
        rc, out, err = run(["spectral"] + args)
        check(rc == 0, "gstat spectral %s: rc %d %s" % (" ".join(args), rc, err))


# ---- usage errors: exit 2 ----------------------------------------------------------------

def test_usage(data_dir):
    p = write("u.edges", "0 1\n1 2\n2 0\n")
    cases = [
        (["spectral"], "no input FILE"),
        (["spectral", p], "give the number of clusters (-k N) or --eigengap"),
        (["spectral", "-k", "2", p, p], "one input FILE only"),
        (["spectral", "-k", "0", p], "-k: '0' is not a positive whole number"),
        (["spectral", "-k", "x", p], "not a positive whole number"),
        (["spectral", "-k", "2", "--eigengap", p], "exclude each other"),
        (["spectral", "-k", "2", "--max-clusters", "3", p], "--max-clusters needs --eigengap"),
        (["spectral", "--bogus", p], "unknown option '--bogus'"),
        (["spectral", "-k", "2", "--laplacian", "normed", p], "--laplacian: 'normed' is not one of"),
        (["spectral", "-k", "2", "--assign", "discretize", p], "--assign: 'discretize'"),
        (["spectral", "-k", "2", "--symmetrize", "min", p], "--symmetrize: 'min' is not one of"),
        (["spectral", "-k", "2", "--format", "xml", p], "--format: 'xml' is not one of csv, json"),
        (["spectral", "-k", "2", "--node-ids", "str", p], "--node-ids: 'str' is not one of"),
        (["spectral", "-k", "2", "--nodes", "0", p], "not a node count"),
        (["spectral", "-k", "2", "--n-init", "0", p], "--n-init"),
        (["spectral", "-k", "2", "--seed", "-1", p], "not a whole number"),
        (["spectral", "-k", "2", "--threads", "-2", p], "not a thread count"),
        (["spectral", "-k", "2", "--backend", "gpu", p], "--backend: 'gpu' is not one of"),
        (["spectral", "-k", "2", "--affinity", "knn", p], "need --points"),
        (["spectral", "-k", "2", "--points", "--batch", p], "exclude each other"),
        (["spectral", "-k", "2", "--points", "--affinity", "cosine", p], "'cosine' is not one of"),
        (["spectral", "-k", "2", "--points", "--gamma", "0", p], "--gamma: '0' is not a number > 0"),
        (["spectral", "-k", "2", "--points", "--gamma", "nan", p], "not a number > 0"),
        (["spectral", "-k", "2", "--points", "--affinity", "epsilon", p], "needs --eps"),
        (["spectral", "-k", "2", "--points", "--eps", "1", p], "--eps is for --affinity epsilon"),
        (["spectral", "-k", "2", "--points", "--neighbors", "3", p], "--neighbors is for"),
        (["spectral", "-k", "2", "--points", "--knn-algorithm", "brute", p], "--knn-algorithm is for"),
        (["spectral", "-k", "2", "--points", "--affinity", "knn", "--knn-algorithm", "fast", p],
         "--knn-algorithm: 'fast' is not one of"),
        (["spectral", "-k", "2", "--knn-algorithm", "brute", p], "need --points"),
        (["spectral", "-k", "2", "--points", "--affinity", "knn", "--neighbors", "0", p],
         "not a positive whole number"),
        (["spectral", "-k", "2", "--points", "--affinity", "knn", "--symmetrize", "check", p],
         "cannot --symmetrize check"),
        (["spectral", "-k", "2", "--points", "--node-ids", "label", p], "for edge lists"),
        (["spectral", "-k", "2", "--batch", "--embedding", "e.csv", p], "not --batch"),
        (["spectral", "-k", "2", "--node-ids", "label", "--nodes", "4", p], "--nodes is for"),
        (["spectral", "-k", "2", "--delimiter", ",", p], "--delimiter is for --points"),
        (["spectral", "-k", "2", "--embedding", "-", p], "only one output"),
        (["spectral", "-k", "2", "--drop-first=1", p], "takes no value"),
        (["spectral", "-k", "2", "-o", p, p], "would overwrite the input"),
    ]
    for args, msg in cases:
        rc, out, err = run(args)
        check(rc == 2, "gstat %s: rc %d, want 2\n%s" % (" ".join(args), rc, err))
        check(msg in err, "gstat %s: stderr lacks %r:\n%s" % (" ".join(args), msg, err))
        check(out == "", "gstat %s wrote to stdout on a usage error" % " ".join(args))
    with open(p) as f:
        check(f.read() == "0 1\n1 2\n2 0\n", "a refused -o FILE changed the input")


# ---- malformed input: exit 1 with file:line[:column]: reason --------------------------------

TRI = "0 1\n1 2\n2 0\n"
MALFORMED = [
    # name, content, extra args, line, column (None: whole line), reason
    ("empty_file", "", [], 1, None, "empty input (no edges)"),
    ("comments_only", "# nothing\n\n   # here\n", [], 3, None, "no edges (only comments"),
    ("header_only", "src dst\n", ["--header"], 1, None, "no edges after the header"),
    ("one_field", "0 1\n2\n", [], 2, 2, "expected 2 fields (as in line 1), found 1"),
    ("first_line_one_field", "7\n", [], 1, None, "expected 2 or 3 fields (src dst [weight])"),
    ("five_fields", "0 1 2 3 4\n", [], 1, None, "expected 2 or 3 fields"),
    ("extra_weight", "0 1\n1 2 3\n", [], 2, 5, "expected 2 fields (as in line 1), found 3"),
    ("missing_weight", "0 1 1.5\n1 2\n", [], 2, 4, "expected 3 fields (as in line 1), found 2"),
    ("comma_extra", "0,1\n1,2,3\n", [], 2, 5, "expected 2 fields"),
    ("empty_comma_field", "0,1\n1,,2\n", [], 2, 3, "empty field"),
    ("bad_id", "0 1\n1 x\n", [], 2, 3, 'not a node id: "x"'),
    ("negative_id", "0 1\n-1 2\n", [], 2, 1, 'not a node id: "-1"'),
    ("fraction_id", "0 1\n1.5 2\n", [], 2, 1, 'not a node id: "1.5"'),
    ("header_hint", "source target\n0 1\n", [], 1, 1, "if this line is a header, pass --header"),
    ("huge_id", "0 1\n1 123456789012\n", [], 2, 3, "node id 123456789012 is too large"),
    ("out_of_range", TRI + "2 7\n", ["--nodes", "5"], 4, 3,
     "node id 7 is out of range (--nodes 5: ids 0 to 4)"),
    ("bad_weight", "0 1 1\n1 2 abc\n", [], 2, 5, 'not a number: weight "abc"'),
    ("hex_weight", "0 1 0x10\n", [], 1, 5, 'not a number: weight "0x10"'),
    ("double_dot", "0 1 1.2.3\n", [], 1, 5, 'not a number: weight "1.2.3"'),
    ("negative_weight", "0 1 1\n1 2 -0.5\n", [], 2, 5, "negative weight -0.5"),
    ("nan_weight", "0 1 1\n1 2 NaN\n", [], 2, 5, 'weight "NaN" is not finite'),
    ("inf_weight", "0 1 inf\n", [], 1, 5, 'weight "inf" is not finite'),
    ("overflow_weight", "0 1 1e999\n", [], 1, 5, 'weight "1e999" is out of range'),
    ("nul_byte", b"0 1\n1\x002\n", [], 2, 2, "NUL byte (a binary file?)"),
    ("binary", b"\x7fELF\x02\x01\x01\x00\x00\x00", [], 1, 8, "NUL byte"),
    ("gzip", b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xcbH\xcd\xc9", [], 1, 2, "invalid UTF-8"),
    ("invalid_utf8", b"a b\nb \xff\n", ["--node-ids", "label"], 2, 3, "invalid UTF-8 (byte 0xFF"),
    ("crlf_bad", "0 1\r\n1 q\r\n", [], 2, 3, 'not a node id: "q"'),
    ("after_comments", "# a\n# b\n0 1\n\n1 z # c\n", [], 5, 3, 'not a node id: "z"'),
    ("utf8_column", "é ü\nü x y z\n", ["--node-ids", "label"], 2, 5,
     "expected 2 fields (as in line 1), found 4"),
    ("batch_two_fields", "g 0 1\ng 1\n", ["--batch"], 2, 4, "expected 3 fields (as in line 1)"),
    ("batch_first_short", "0 1\n", ["--batch"], 1, None,
     "expected 3 or 4 fields (graph_id src dst [weight])"),
    ("batch_bad_weight", "g 0 1 1\nh 0 1 -2\n", ["--batch"], 2, 7, "negative weight -2"),
    ("batch_bad_id", "g 0 1\nh 0 one\n", ["--batch"], 2, 5, 'not a node id: "one"'),
]


def test_malformed(data_dir):
    for name, content, extra, line, col, reason in MALFORMED:
        path = write(name + ".edges", content)
        rc, out, err = run(["spectral", "-k", "1"] + extra + [path])
        want = "%s:%d:%s " % (path, line, "%d:" % col if col else "")
        check(rc == 1, "%s: rc %d, want 1\n%s" % (name, rc, err))
        check(err.startswith(want) and reason in err.splitlines()[0] if err else False,
              "%s: stderr %r, want %r + %r" % (name, err, want, reason))
        check(out == "", "%s: wrote to stdout: %r" % (name, out))
    rc, out, err = run(["spectral", "-k", "1", "-"], stdin=b"0 1\n1 x\n")
    check(rc == 1 and err.startswith("<stdin>:2:3: not a node id"), "stdin error: %r" % err)
    # points go through the CSV reader: its file:line:column messages, missing values refused
    pts = [("pts_text", "x,y\n1,2\n3,q\n", 3, 3, 'not a number: "q"'),
           ("pts_missing", "x,y\n1,2\n3,NA\n", 3, 3, 'missing value "NA"'),
           ("pts_ragged", "x,y\n1,2\n3\n", 3, 2, "expected 2 fields")]
    for name, content, line, col, reason in pts:
        path = write(name + ".csv", content)
        rc, out, err = run(["spectral", "--points", "-k", "1", path])
        check(rc == 1 and err.startswith("%s:%d:%d: " % (path, line, col)) and reason in err,
              "%s: rc %d %r" % (name, rc, err))
    # failures of the computation: exit 1, the reason, nothing written
    o = os.path.join(TMP(), "never.csv")
    other = [
        (["-k", "2", "-o", o, write("split.edges", "0 1\n2 3\n4 5\n")],
         "has 3 connected components, more than n_clusters=2"),
        (["-k", "2", write("gap.edges", "0 1\n1 2\n2 0\n5 6\n")],
         "2 of the ids 0..6 appear in no edge and are isolated nodes"),
        (["-k", "5", write("small.edges", TRI)], "n_clusters=5 exceeds its 3 nodes"),
        (["-k", "2", "--symmetrize", "check", write("asym.edges", "0 1\n1 2\n2 0\n")],
         "--symmetrize check wants every edge in both directions"),
        (["--batch", "-k", "2", "-o", o, write("bsplit.txt", "a 0 1\na 1 2\nb 0 1\nb 2 3\nb 4 5\n")],
         "graph id 'b', first on line 3"),
        (["--points", "-k", "2", "--affinity", "knn", "--neighbors", "9",
          write("few.csv", "x\n1\n2\n3\n")], "--neighbors 9 is more than the 3 points"),
        (["-k", "2", os.path.join(TMP(), "nope.edges")], "cannot open"),
        (["-k", "2", TMP()], "is a directory"),
    ]
    for args, msg in other:
        rc, out, err = run(["spectral"] + args)
        check(rc == 1 and msg in err and out == "",
              "gstat spectral %s: rc %d, stderr %r (want %r)" % (" ".join(args), rc, err, msg))
    check(not os.path.exists(o), "an output file was left after a failure")
    check_bounded_work()


def check_bounded_work():
    """An 11-byte edge list must not make a graph of 10^8 nodes: refused within 1 s and
    100 MB (peak RSS of the tool, measured in a child that runs only it)."""
    tiny = write("far.edges", "0 99999999\n")
    probe = ("import resource, subprocess, sys, time; t = time.time(); "
             "p = subprocess.run(sys.argv[1:], capture_output=True); "
             "print(p.returncode, time.time() - t, "
             "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
             "sys.stderr.write(p.stderr.decode())")
    p = subprocess.run([sys.executable, "-c", probe] + base.WRAPPER +
                       [base.GSTAT, "spectral", "-k", "2", tiny], capture_output=True, timeout=60)
    rc, secs, rss_kb = p.stdout.decode().split()
    err = p.stderr.decode()
    check(rc == "1" and "pass --nodes 100000000 if that is meant" in err,
          "far ids: rc %s, stderr %r" % (rc, err))
    check(float(secs) < 1.0 or base.WRAPPER, "far ids took %s s (limit 1 s)" % secs)
    check(int(rss_kb) < 100 * 1024 or base.WRAPPER, "far ids peaked at %s kB (limit 100 MB)" % rss_kb)
    # --nodes says it is meant; a modest gap needs nothing
    rc, out, err = run(["spectral", "-k", "2", write("near.edges", TRI + "3 4\n4 5\n5 3\n9 10\n")])
    check("connected components" in err and "if that is meant" not in err,
          "a small gap of ids should reach the solver: %r" % err)
    rc, out, err = run(["spectral", "-k", "2", "--nodes", "12", write("far2.edges", TRI + "3 4\n")])
    check("connected components" in err, "--nodes should be taken as meant: %r" % err)


# ---- Zachary's karate club -----------------------------------------------------------------

def test_karate(data_dir):
    edges = os.path.join(data_dir or "", "karate.edges")
    truth_path = os.path.join(data_dir or "", "karate_labels.csv")
    if not (data_dir and os.path.exists(edges) and os.path.exists(truth_path)):
        print("no data/karate.edges: skipped")
        return SKIP
    with open(truth_path) as f:
        truth = [int(v) for v in f.read().split()[1:]]
    # scikit-learn 1.9.1 SpectralClustering(2, affinity="precomputed", random_state=0) on the
    # same graph (tests/reference/graph_reference.csv, cluster/karate/sklearn_ari)
    sklearn_ari = 0.77172503242542156
    rc, out, err = run(["spectral", "-k", "2", edges])
    if not check(rc == 0, "karate: rc %d %s" % (rc, err)):
        return None
    head, rows = labels_csv(out)
    check(head == "node,cluster" and [int(r[0]) for r in rows] == list(range(34)),
          "karate: rows %r" % rows[:3])
    lab = [int(r[1]) for r in rows]
    a = ari(lab, truth)
    print("karate: ARI vs the factions %.4f (scikit-learn %.4f)" % (a, sklearn_ari))
    check(a >= sklearn_ari - 1e-12, "karate: ARI %.4f below scikit-learn's %.4f" % (a, sklearn_ari))
    check(lab[0] != lab[33], "karate: Mr. Hi (0) and the officer (33) in one cluster")
    # the eigengap (it picks 4 groups here, as the Laplacian's spectrum says)
    rc, out, err = run(["spectral", "--eigengap", "--format", "json", edges])
    if check(rc == 0, "karate eigengap: %s" % err):
        j = json.loads(out)
        check(2 <= j["clusters"] <= 10 and j["nodes"] == 34 and j["components"] == 1 and
              len(set(j["labels"])) == j["clusters"], "karate eigengap: %r" % j)
    with open(edges) as f:
        text = f.read()
    comma = write("karate.csv", "src,dst\n" + "\n".join(
        ", ".join(l.split()) for l in text.splitlines() if l and not l.startswith("#")) + "\n")
    rc, out2, err = run(["spectral", "-k", "2", "--header", comma])
    check(rc == 0 and out2 == out_of(["spectral", "-k", "2", edges]),
          "karate: comma-separated input with a header gives other labels: %s" % err)
    # label ids: the same partition, names in order of appearance
    rc, out3, err = run(["spectral", "-k", "2", "--node-ids", "label", edges])
    if check(rc == 0, "karate labels: %s" % err):
        _, rows3 = labels_csv(out3)
        by_name = {int(r[0]): int(r[1]) for r in rows3}
        check(len(by_name) == 34 and
              abs(ari([by_name[i] for i in range(34)], truth) - a) < 1e-12,
              "karate: --node-ids label changes the clustering")
    rc, out4, err = run(["spectral", "-k", "2", "--assign", "cluster-qr", edges])
    if check(rc == 0, "karate cluster-qr: %s" % err):
        # scikit-learn's cluster-QR labels (cluster/karate/sklearn_qr of the reference file)
        skl_qr = [int(c) for c in "0010000011000011001110111111111111"]
        a_qr, s_qr = ari([int(r[1]) for r in labels_csv(out4)[1]], truth), ari(skl_qr, truth)
        check(a_qr >= s_qr - 1e-12, "karate cluster-qr ARI %.4f < scikit-learn's %.4f" % (a_qr, s_qr))
    return None


def corr(a, b):
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    sab = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    saa = sum((x - ma) ** 2 for x in a)
    sbb = sum((y - mb) ** 2 for y in b)
    return sab / (saa * sbb) ** 0.5 if saa > 0 and sbb > 0 else 0.0


def test_plot(data_dir):
    """--plot draws the embedding written by --embedding in the same run: its
    first informative columns (the constant first eigenvector of a connected
    graph left out), one point per node, coloured by the labels written."""
    edges = os.path.join(data_dir or "", "karate.edges")
    if not (data_dir and os.path.exists(edges)):
        print("no data/karate.edges: skipped")
        return SKIP
    d = TMP()
    svg, emb = os.path.join(d, "k.svg"), os.path.join(d, "k.emb")
    for k, extra in ((3, []), (2, []), (3, ["--drop-first"]), (3, ["--laplacian", "sym"])):
        rc, out, err = run(["spectral", "-k", str(k), "--plot", svg, "--embedding", emb] + extra +
                           [edges])
        if not check(rc == 0, "plot %s: %s" % (extra, err)):
            continue
        labels = [int(r[1]) for r in labels_csv(out)[1]]
        with open(emb) as f:
            e = [[float(v) for v in line.split(",")[1:]] for line in f.read().split("\n")[1:] if line]
        root = base.parse_svg(svg, "spectral plot")
        if root is None:
            continue
        pts = [c for c in root.iter(base.SVG_NS + "circle") if c.get("r") == "2.5"]
        check(len(pts) == 34, "plot: %d points, want 34" % len(pts))
        cx = [float(c.get("cx")) for c in pts]
        cy = [float(c.get("cy")) for c in pts]
        col = lambda j: [row[j] for row in e]
        texts = base.svg_texts(root)
        if "--drop-first" in extra:  # nothing trivial left to skip
            x, y, names = col(0), col(1), ("eigenvector 2", "eigenvector 3")
        else:
            spread0 = max(col(0)) - min(col(0))
            if "--laplacian" not in extra:  # rw: the first column is constant, really trivial
                check(spread0 <= 1e-9 * max(abs(v) for v in col(0)), "e1 not constant")
            x, y = col(1), (col(2) if k == 3 else None)
            names = ("eigenvector 2", "eigenvector 3") if k == 3 else ("eigenvector 2",)
        if y is None:  # one informative column: against the node number
            check(corr(cx, list(range(34))) > 1 - 1e-9, "k=2: x is not the node number")
            check(corr(cy, x) < -1 + 1e-6, "k=2: y is not eigenvector 2")
        else:
            check(corr(cx, x) > 1 - 1e-6 and corr(cy, y) < -1 + 1e-6,
                  "%s: points are not the embedding's columns" % extra)
        check(all(n in texts for n in names), "%s: axis labels %s" % (extra, texts))
        colour = {}
        for c, lab in zip(pts, labels):
            colour.setdefault(lab, c.get("fill"))
            check(c.get("fill") == colour[lab] and c.find(base.SVG_NS + "title").text ==
                  "cluster %d" % lab, "point colour/title does not follow its cluster")
        check(len(set(colour.values())) == k, "clusters share a colour")
    rc, _, err = run(["spectral", "-k", "2", "--batch", "--plot", svg, edges])
    check(rc == 2 and "not --batch" in err, "--batch --plot: %d %s" % (rc, err))
    rc, out, err = run(["spectral", "-k", "2", "--plot", "-", "-o", os.path.join(d, "l"), edges])
    check(rc == 0 and out.startswith("<?xml"), "--plot - : %d %s" % (rc, err))
    return None


def on_terminal(args, env):
    """Run gstat with stderr on a pseudo-terminal; (rc, what it wrote there)."""
    master, slave = base.pty.openpty()
    e = dict(os.environ)
    e.update(env)
    proc = subprocess.Popen([base.GSTAT] + args, stdout=subprocess.DEVNULL, stderr=slave, env=e)
    os.close(slave)
    seen = base.read_terminal(master, proc)
    return proc.returncode, seen.decode("utf-8", "replace")


def test_progress(data_dir):
    """The library's progress (kNN, batches, power iterations) on a terminal's
    stderr, one rewritten line erased at the end; never when stderr is not a
    terminal. GSTAT_CLI_PROGRESS_AFTER=0 shows it without the 1 s wait."""
    if base.WRAPPER:
        return SKIP
    rng = random.Random(5)
    pts = write("prog.csv", "x,y\n" + "".join("%.5f,%.5f\n" % (rng.gauss(i % 3 * 6, 1), rng.gauss(0, 1))
                                              for i in range(300)))
    batch = write("prog.batch", "".join("g%d %d %d\n" % (g, i, (i + 1) % 8)
                                        for g in range(40) for i in range(8)))
    now = {"GSTAT_CLI_PROGRESS_AFTER": "0"}
    for args, want in ((["spectral", "--points", "--affinity", "knn", "-k", "3", pts], "knn 300 of 300"),
                       (["spectral", "--batch", "-k", "2", batch], "spectral_batch: graphs"),
                       (["pca", "-k", "1", "--method", "randomized", pts], "power iterations")):
        rc, seen = on_terminal(args, now)
        check(rc == 0 and want in seen and seen.endswith("\r\x1b[K"),
              "%s: no progress line %r on a terminal: %r" % (args[0], want, seen[:400]))
        rc, out, err = run(args, env=now)
        check(rc == 0 and err == "", "%s: progress without a terminal: %r" % (args[0], err))
        if want.startswith("knn"):  # reported early: quiet within the default second
            rc, seen = on_terminal(args, {})
            check(rc == 0 and want not in seen, "quick kNN shows progress: %r" % seen)
    return None


def out_of(args):
    rc, out, err = run(args)
    check(rc == 0, "gstat %s: %s" % (" ".join(args), err))
    return out


# ---- points -------------------------------------------------------------------------------

def blobs(rng, centers, per, sd):
    pts, truth = [], []
    for c, (cx, cy) in enumerate(centers):
        for _ in range(per):
            pts.append((cx + rng.gauss(0, sd), cy + rng.gauss(0, sd)))
            truth.append(c)
    order = list(range(len(pts)))
    rng.shuffle(order)
    return [pts[i] for i in order], [truth[i] for i in order]


def test_points(data_dir):
    rng = random.Random(11)
    pts, truth = blobs(rng, [(0, 0), (6, 0), (3, 5)], 60, 0.7)
    csv = write("blobs.csv", "x,y\n" + "".join("%.9g,%.9g\n" % p for p in pts))
    tsv = write("blobs.tsv", "".join("%.9g\t%.9g\n" % p for p in pts))
    for aff in (["--affinity", "knn", "--neighbors", "10"], ["--affinity", "mutual-knn", "--neighbors", "20"],
                ["--affinity", "rbf", "--gamma", "0.5"], ["--affinity", "epsilon", "--eps", "2"]):
        rc, out, err = run(["spectral", "--points", "-k", "3"] + aff + [csv])
        if not check(rc == 0, "blobs %s: rc %d %s" % (aff, rc, err)):
            continue
        head, rows = labels_csv(out)
        check(head == "point,cluster" and [int(r[0]) for r in rows] == list(range(len(pts))),
              "blobs %s: rows" % aff)
        a = ari([int(r[1]) for r in rows], truth)
        check(a > 0.99, "blobs %s: ARI %.4f" % (aff, a))
    knn = ["spectral", "--points", "-k", "3", "--affinity", "knn"]
    check(out_of(knn + [csv]) == out_of(knn + [tsv]), "blobs: CSV and TSV differ")
    for alg in ("kd-tree", "brute"):  # exact: the same graph as auto's
        check(out_of(knn + ["--knn-algorithm", alg, csv]) == out_of(knn + [csv]),
              "blobs: --knn-algorithm %s differs from auto" % alg)
    _, rows = labels_csv(out_of(knn + ["--knn-algorithm", "nndescent", "--seed", "4", csv]))
    a = ari([int(r[1]) for r in rows], truth)
    check(a > 0.99, "blobs --knn-algorithm nndescent: ARI %.4f" % a)
    # embedding and eigenvalues: shapes, and the first eigenvalue is 0
    e, v = os.path.join(TMP(), "emb.csv"), os.path.join(TMP(), "eig.csv")
    rc, _, err = run(knn + ["--embedding", e, "--eigenvalues", v, "-o", os.devnull, csv])
    if check(rc == 0, "blobs embedding: %s" % err):
        with open(e) as f:
            lines = f.read().strip().split("\n")
        check(lines[0] == "point,e1,e2,e3" and len(lines) == len(pts) + 1, "embedding shape")
        with open(v) as f:
            vals = [float(l.split(",")[1]) for l in f.read().strip().split("\n")[1:]]
        check(len(vals) == 3 and abs(vals[0]) < 1e-9 and vals == sorted(vals),
              "eigenvalues %r" % vals)
    rc, out, err = run(["spectral", "--points", "--eigengap", "--gamma", "0.5",
                        "--format", "json", csv])
    check(rc == 0 and json.loads(out)["clusters"] == 3, "blobs eigengap: %s %s" % (out[:200], err))


# ---- batch == one graph at a time -----------------------------------------------------------

def test_batch(data_dir):
    rng = random.Random(5)
    graphs = []
    for g in range(24):
        sizes = [rng.randrange(3, 12) for _ in range(rng.choice([2, 3]))]
        edges, _ = sbm_edges(rng, sizes, 0.7, 0.05)
        graphs.append(("g%02d" % g, edges, [round(rng.uniform(0.5, 2), 3) for _ in edges]))
    lines = [(gid, u, v, w) for gid, es, ws in graphs for (u, v), w in zip(es, ws)]
    rng.shuffle(lines)  # a graph's lines need not be contiguous
    batch = write("b.txt", "# graph src dst weight\n" +
                  "".join("%s %d %d %s\n" % l for l in lines))
    for opts in (["-k", "2"], ["--eigengap", "--max-clusters", "4"],
                 ["-k", "2", "--assign", "cluster-qr", "--laplacian", "sym"]):
        ev = os.path.join(TMP(), "bev.csv")
        rc, out, err = run(["spectral", "--batch", "--eigenvalues", ev] + opts + [batch],
                           env={"OMP_NUM_THREADS": "2"})
        if not check(rc == 0, "batch %s: %s" % (opts, err)):
            continue
        head, rows = labels_csv(out, 3)
        check(head == "graph,node,cluster", "batch header %r" % head)
        with open(ev) as f:
            evs = f.read().strip().split("\n")[1:]
        order = []
        for l in lines:
            if l[0] not in order:
                order.append(l[0])
        check(sorted(set(r[0] for r in rows)) == sorted(order) and
              [r[0] for r in rows if r[1] == "0"] == order, "batch: graphs not in file order")
        for gid, es, ws in graphs:
            single = write(gid + ".edges", "".join("%d %d %s\n" % (u, v, w)
                                                   for (u, v), w in zip(es, ws)))
            ev1 = os.path.join(TMP(), "ev1.csv")
            o1 = out_of(["spectral", "--eigenvalues", ev1] + opts + [single])
            want = [(r[1], r[2]) for r in rows if r[0] == gid]
            check([tuple(r) for r in labels_csv(o1)[1]] == want,
                  "batch %s: graph %s differs from a single run" % (opts, gid))
            with open(ev1) as f:
                e1 = [l.split(",", 1)[1] for l in f.read().strip().split("\n")[1:]]
            check(e1 == [l.split(",", 2)[2] for l in evs if l.split(",")[0] == gid],
                  "batch %s: eigenvalues of %s differ (bitwise) from a single run" % (opts, gid))
    # label ids in a batch: each graph numbers its own names
    rc, out, err = run(["spectral", "--batch", "--node-ids", "label", "-k", "2", write(
        "bl.txt", "A x y\nA y z\nB p q\nA z x\nB q r\nB r s\nB s p\nA x w\n")])
    check(rc == 0 and out.split("\n")[1:4] == ["A,x,0", "A,y,0", "A,z,0"] and "B,p," in out,
          "batch labels: %r %s" % (out, err))


# ---- JSON ----------------------------------------------------------------------------------

def test_json(data_dir):
    p = write("j.edges", "alice bob\nbob carol\ncarol alice\ndave erin\nerin \"fay\"\n"
                         "\"fay\" dave\ncarol dave 0.5\n".replace(" 0.5", ""))
    rc, out, err = run(["spectral", "-k", "2", "--node-ids", "label", "--format", "json", p])
    if check(rc == 0, "json: %s" % err):
        j = json.loads(out)
        check(j["names"][:3] == ["alice", "bob", "carol"] and j["names"][5] == '"fay"' and
              len(j["labels"]) == 6 and j["clusters"] == 2 and j["labels"][0] != j["labels"][3],
              "json: %r" % j)
    e, v = os.path.join(TMP(), "e.json"), os.path.join(TMP(), "v.json")
    rc, out, err = run(["spectral", "-k", "2", "--format", "json", "--embedding", e,
                        "--eigenvalues", v, "--node-ids", "label", p])
    if check(rc == 0, "json outputs: %s" % err):
        with open(e) as f:
            je = json.load(f)
        with open(v) as f:
            jv = json.load(f)
        check(je["rows"] == 6 and je["columns"] == 2 and len(je["embedding"]) == 6 and
              all(len(r) == 2 for r in je["embedding"]), "json embedding %r" % je)
        check(len(jv["eigenvalues"]) == 2, "json eigenvalues %r" % jv)
    b = write("j.batch", "g1 0 1\ng1 1 2\ng2 0 1\ng2 1 2\ng2 2 3\ng2 3 0\n")
    for extra in ([], ["--eigenvalues", v]):
        rc, out, err = run(["spectral", "--batch", "-k", "2", "--format", "json"] + extra + [b])
        if check(rc == 0, "json batch: %s" % err):
            j = json.loads(out)
            check([g["graph"] for g in j["graphs"]] == ["g1", "g2"] and
                  [g["nodes"] for g in j["graphs"]] == [3, 4], "json batch %r" % j)
    with open(v) as f:
        check(len(json.load(f)["graphs"]) == 2, "json batch eigenvalues")


# ---- fuzz ----------------------------------------------------------------------------------

def test_fuzz(data_dir):
    rng = random.Random(20240611)
    pieces = [b"0", b"1", b"2", b"17", b" ", b" ", b"\t", b",", b"\n", b"\n", b"\r\n", b"#",
              b"-1", b"1.5", b"x", b"nan", b"1e999", b"\x00", b"\xff", b"\xc3\xa9", b"g"]
    opts = [["-k", "1"], ["-k", "2"], ["--eigengap"], ["-k", "1", "--node-ids", "label"],
            ["-k", "1", "--batch"], ["-k", "2", "--batch", "--node-ids", "label"],
            ["-k", "1", "--nodes", "3"], ["-k", "1", "--header", "--format", "json"]]
    path = os.path.join(TMP(), "fuzz.edges")
    for i in range(150):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randrange(0, 40)))
        with open(path, "wb") as f:
            f.write(data)
        o = rng.choice(opts)
        rc, out, err = run(["spectral"] + o + [path])
        ok = rc == 0 or (rc == 1 and (re.match(re.escape(path) + r":\d+:(\d+:)? \S", err) or
                                     err.startswith("gstat spectral: ")))
        check(ok, "fuzz case %d %s %r: rc %d %r" % (i, o, data, rc, err))


def TMP():
    return base.TMP


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gstat")
    ap.add_argument("group")
    ap.add_argument("--data-dir")
    args = ap.parse_args()
    base.GSTAT = os.path.abspath(args.gstat)
    base.TMP = tempfile.mkdtemp(prefix="gstat-cli-spectral-")
    groups = {"help": test_help, "usage": test_usage, "malformed": test_malformed,
              "karate": test_karate, "points": test_points, "batch": test_batch,
              "json": test_json, "plot": test_plot, "progress": test_progress,
              "fuzz": test_fuzz}
    if args.group not in groups:
        print("unknown group %s (one of %s)" % (args.group, ", ".join(groups)))
        return 2
    try:
        result = groups[args.group](args.data_dir)
    finally:
        shutil.rmtree(base.TMP, ignore_errors=True)
    if base.failures:
        print("%d failure(s) in spectral %s" % (len(base.failures), args.group))
        return 1
    if result == SKIP:
        return SKIP
    print("spectral %s: all checks passed" % args.group)
    return 0


if __name__ == "__main__":
    sys.exit(main())
