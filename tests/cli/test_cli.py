#!/usr/bin/env python3
"""Tests of the `gstat` command-line tool (standard library only).

usage: test_cli.py GSTAT_BINARY GROUP [--data-dir DIR] [--valgrind-supp FILE]

GROUP is one of: help, usage, malformed, formats, outputs, streaming, memory,
plot, progress, fuzz, wine, valgrind. Exit status 0 pass, 1 fail, 77 skipped.
Environment: GSTAT_CLI_WRAPPER, e.g. "valgrind -q", runs the tool under it.
"""
import argparse
import json
import math
import os
import pty
import random
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET

SKIP = 77
SVG_NS = "{http://www.w3.org/2000/svg}"

GSTAT = None
WRAPPER = shlex.split(os.environ.get("GSTAT_CLI_WRAPPER", ""))
TMP = None
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, flush=True)


def check(cond, msg):
    if not cond:
        fail(msg)
    return cond


def run(args, stdin=None, timeout=120, env=None):
    """Run gstat; returns (rc, stdout, stderr) as (int, str, str)."""
    e = dict(os.environ)
    e.setdefault("OMP_NUM_THREADS", "1")
    if WRAPPER:  # the tool would run itself again outside the wrapper to set its waits
        e.setdefault("OMP_WAIT_POLICY", "passive")
    if env:
        e.update(env)
    p = subprocess.run(WRAPPER + [GSTAT] + args, input=stdin, capture_output=True,
                       timeout=timeout, env=e)
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    # a crash, a sanitizer report or a valgrind error is never acceptable
    if p.returncode < 0 or p.returncode == 99 or "Sanitizer" in err or "==ERROR" in err:
        fail("gstat %s crashed or reported a memory error (rc %d):\n%s" %
             (" ".join(args), p.returncode, err))
    return p.returncode, out, err


def write(name, content):
    path = os.path.join(TMP, name)
    mode = "wb" if isinstance(content, bytes) else "w"
    with open(path, mode) as f:
        f.write(content)
    return path


def close(a, b, tol=1e-9):
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def close_list(a, b, tol=1e-9):
    return len(a) == len(b) and all(close(x, y, tol) for x, y in zip(a, b))


def random_table(n, p, seed, missing=0.0):
    """Rows of correlated values (a few strong directions), as text fields."""
    rng = random.Random(seed)
    mix = [[rng.gauss(0, 1) for _ in range(p)] for _ in range(min(3, p))]
    rows = []
    for _ in range(n):
        z = [rng.gauss(0, s) for s in (3.0, 2.0, 1.0)[:len(mix)]]
        row = []
        for j in range(p):
            v = sum(z[c] * mix[c][j] for c in range(len(mix))) + rng.gauss(0, 0.3) + j
            row.append("%.9g" % v)
        if missing and rng.random() < missing:
            row[rng.randrange(p)] = rng.choice(["NA", "", "NaN", "n/a"])
        rows.append(row)
    return rows


def table_text(rows, names=None, delim=","):
    lines = [delim.join(names)] if names else []
    lines += [delim.join(r) for r in rows]
    return "\n".join(lines) + "\n"


def summary(args, path, stdin=None):
    rc, out, err = run(args + ["--format", "json", path], stdin=stdin)
    if not check(rc == 0, "gstat pca %s %s: rc %d\n%s" % (args, path, rc, err)):
        return None
    try:
        return json.loads(out)
    except ValueError as exc:
        fail("summary JSON of %s does not parse: %s\n%s" % (args, exc, out[:500]))
        return None


def read_csv_numbers(text, row_names=False):
    """Header and rows of numbers (NA -> nan); row_names: drop the first column."""
    lines = text.strip("\n").split("\n")
    skip = 1 if row_names else 0
    head = lines[0].split(",")[skip:]
    rows = []
    for line in lines[1:]:
        cells = line.split(",")[skip:]
        rows.append([float("nan") if v == "NA" else float(v) for v in cells])
    return head, rows


# ---- help and version ------------------------------------------------------------

PCA_OPTIONS = ["--delimiter", "--header", "--no-header", "--missing", "--n-components",
               "--variance", "--center", "--no-center", "--scale", "--no-scale", "--whiten",
               "--method", "--seed", "--backend", "--threads", "--max-memory", "--chunk-rows",
               "--output", "--components", "--scores", "--format", "--plot", "--verbose",
               "--help"]


def test_help():
    rc, out, err = run(["--help"])
    check(rc == 0 and "Usage: gstat COMMAND" in out and "pca" in out and err == "",
          "gstat --help: rc %d\n%s%s" % (rc, out, err))
    rc, out, _ = run(["--version"])
    check(rc == 0 and re.match(r"gstat \d+\.\d+\.\d+ \(libgstat \d+\.\d+\.\d+\)\n", out),
          "gstat --version: rc %d %r" % (rc, out))


def test_passive_waits():
    """Unless the user chose a wait policy, the tool runs with passive OpenMP waits."""
    e = dict(os.environ)
    e.pop("OMP_WAIT_POLICY", None)
    p = subprocess.run([GSTAT, "--version"], capture_output=True, text=True, env=e, timeout=60)
    check(p.returncode == 0 and "OpenMP waits: passive\n" in p.stdout,
          "gstat --version without OMP_WAIT_POLICY: rc %d %r" % (p.returncode, p.stdout))
    rc, out, _ = run(["--version"], env={"OMP_WAIT_POLICY": "active"})
    check(rc == 0 and "OpenMP waits: active\n" in out,
          "gstat --version with OMP_WAIT_POLICY=active: rc %d %r" % (rc, out))
    rc, out, err = run(["pca", "--help"])
    check(rc == 0 and err == "", "gstat pca --help: rc %d %s" % (rc, err))
    found = set(re.findall(r"--[a-z][a-z-]+", out))
    check(set(PCA_OPTIONS) <= found, "pca --help lacks %s" % sorted(set(PCA_OPTIONS) - found))
    for word in ["Usage: gstat pca", "default", "Examples:", "Exit status", "Methods:",
                 "covariance", "gram", "randomized", "complete", "json", "-k,", "-d,", "-o,",
                 "FILE:LINE:COLUMN"]:
        check(word in out, "pca --help does not mention %r" % word)
    rc2, out2, _ = run(["help", "pca"])
    check(rc2 == 0 and out2 == out, "gstat help pca differs from gstat pca --help")
    rc, out3, _ = run(["pca", "-h"])
    check(rc == 0 and out3 == out, "gstat pca -h differs from --help")
    # every option of the help is known to the parser (no "unknown option")
    path = write("help.csv", table_text(random_table(20, 3, 1)))  # fine with(out) --header
    values = {"--delimiter": ",", "--missing": "complete", "--n-components": "2",
              "--variance": "0.5", "--method": "auto", "--seed": "3", "--backend": "cpu",
              "--threads": "1", "--max-memory": "1M", "--chunk-rows": "4",
              "--output": os.path.join(TMP, "o.txt"), "--components": os.path.join(TMP, "c.csv"),
              "--scores": os.path.join(TMP, "s.csv"), "--format": "csv",
              "--plot": os.path.join(TMP, "p.svg")}
    for opt in PCA_OPTIONS:
        if opt == "--help":
            continue
        args = ["pca", opt] + ([values[opt]] if opt in values else []) + [path]
        rc, out, err = run(args)
        check(rc == 0, "%s: rc %d %s" % (" ".join(args), rc, err))


# ---- usage errors: exit 2 ------------------------------------------------------------

def test_usage():
    path = write("u.csv", "a,b\n1,2\n3,5\n4,4\n")
    cases = [
        ([], "Usage"),
        (["frobnicate"], "unknown command 'frobnicate'"),
        (["--bogus"], "unknown option '--bogus'"),
        (["help", "nope"], "no command 'nope'"),
        (["pca"], "no input FILE"),
        (["pca", path, path], "one input FILE only"),
        (["pca", "--bogus", path], "unknown option '--bogus'"),
        (["pca", "-x", path], "unknown option '-x'"),
        (["pca", "-k", "0", path], "-k: '0' is not a positive whole number"),
        (["pca", "-k", "two", path], "not a positive whole number"),
        (["pca", "--n-components=-3", path], "not a positive whole number"),
        (["pca", path, "-k"], "option '-k' needs a value"),
        (["pca", "--variance", "1.5", path], "strictly between 0 and 1"),
        (["pca", "--variance", "0", path], "strictly between 0 and 1"),
        (["pca", "-k", "2", "--variance", "0.5", path], "exclude each other"),
        (["pca", "--method", "svd", path], "--method: 'svd' is not one of auto, covariance"),
        (["pca", "--method", "randomized", path], "needs -k"),
        (["pca", "--method", "randomized", "-k", "1", "--variance", "0.5", path], "exclude"),
        (["pca", "--backend", "gpu", path], "--backend: 'gpu' is not one of"),
        (["pca", "--format", "xml", path], "--format: 'xml' is not one of csv, json"),
        (["pca", "--missing", "drop", path], "--missing: 'drop' is not one of"),
        (["pca", "--components", "3", path], "use -k 3"),
        (["pca", "--scores", "-", "--components", "-", path], "only one of"),
        (["pca", "-o", "-", "--scores", "-", path], "standard output"),
        (["pca", "--delimiter", "ab", path], "not a usable delimiter"),
        (["pca", "--delimiter", ".", path], "not a usable delimiter"),
        (["pca", "--threads", "-1", path], "not a thread count"),
        (["pca", "--max-memory", "lots", path], "not a size"),
        (["pca", "--chunk-rows", "0", path], "not a positive whole number"),
        (["pca", "--seed", "-4", path], "not a whole number"),
        (["pca", "--center=yes", path], "takes no value"),
        (["pca", "-vk", path], "not combined"),
        (["pca", "--scores", path, path], "would overwrite the input"),
    ]
    for args, msg in cases:
        rc, out, err = run(args)
        check(rc == 2, "gstat %s: rc %d, want 2\n%s" % (" ".join(args), rc, err))
        check(msg in err, "gstat %s: stderr lacks %r:\n%s" % (" ".join(args), msg, err))
        check(out == "", "gstat %s wrote to stdout on a usage error" % " ".join(args))
    with open(path) as f:
        check(f.read() == "a,b\n1,2\n3,5\n4,4\n", "a refused --scores FILE changed the input")


# ---- malformed input: exit 1 with file:line:column: reason ----------------------------------

MALFORMED = [
    # name, content, extra args, line, column, reason
    ("short_row", "a,b\n1,2\n3\n", [], 3, 2, "expected 2 fields (as in line 1), found 1"),
    ("long_row", "a,b\n1,2\n3,4,5\n", [], 3, 5, "expected 2 fields (as in line 1), found 3"),
    ("tsv_long_row", "a\tb\n1\t2\t3\n", [], 2, 5, "expected 2 fields"),
    ("text_field", "a,b\n1,2\n3,x\n", [], 3, 3, 'not a number: "x" in column 2 (b)'),
    ("bad_number", "a,b\n1,2\n1.5.3,4\n", [], 3, 1, 'not a number: "1.5.3"'),
    ("hex_number", "a,b\n1,2\n0x10,4\n", [], 3, 1, 'not a number: "0x10"'),
    ("bare_exponent", "a,b\n1,2\n3,1e\n", [], 3, 3, 'not a number: "1e"'),
    ("empty_file", "", [], 1, 1, "empty input"),
    ("blank_lines_only", "\n  \n\n", [], 3, 1, "only blank lines"),
    ("nul_byte", b"a,b\n1,2\x00\n", [], 2, 4, "NUL byte"),
    ("invalid_utf8", b"a,b\n1,\xff\n", [], 2, 3, "invalid UTF-8 (byte 0xFF)"),
    ("utf8_then_invalid", b"a,b\n1,\xc3\xa9\xfe\n", [], 2, 4, "invalid UTF-8 (byte 0xFE)"),
    ("gzip_file", b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xcbH\xcd\xc9\xc9\x07\x00", [], 1, 2,
     "invalid UTF-8"),
    ("header_only", "a,b,c\n", [], 1, 1, "only a header line, no data rows"),
    ("header_only_crlf", "a,b,c\r\n\r\n", [], 1, 1, "only a header line"),
    ("text_column", "name\nalice\nbob\n", [], 2, 1, 'not a number: "alice" in column 1 (name)'),
    ("unterminated_quote", 'a,b\n"1,2\n3,4\n', [], 2, 1, "unterminated quoted field"),
    ("junk_after_quote", 'a,b\n"1"x,2\n', [], 2, 4, "after a closing quote"),
    ("infinite", "a,b\n1,inf\n2,3\n", [], 2, 3, 'infinite value "inf"'),
    ("out_of_range", "a,b\n1,-1e999\n2,3\n", [], 2, 3, "out of range"),
    ("missing_is_error", "a,b\n1,2\n3,NA\n4,5\n", ["--missing", "error"], 3, 3,
     'missing value "NA" in column 2 (b)'),
    ("empty_is_error", "a,b\n1,2\n,3\n4,5\n", ["--missing", "error"], 3, 1, "(empty field)"),
    ("mixed_first_row", "1,abc\n2,3\n", [], 1, 3, "if this line is a header, pass --header"),
    ("no_header_forced", "a,b\n1,2\n", ["--no-header"], 1, 1, 'not a number: "a"'),
    ("crlf_text", "a,b\r\n1,2\r\n3,q\r\n", [], 3, 3, 'not a number: "q"'),
    # a quoted header name spans lines 1-2: later lines must still be counted right
    ("multiline_header", '"x\ny",b\n1,2\n3,z\n', [], 4, 3, 'not a number: "z"'),
    ("quoted_text", 'a,b\n1,"x, y"\n', [], 2, 3, 'not a number: "x, y"'),
    ("ragged_after_chunks", "a,b\n" + "1,2\n" * 10 + "3,4,5\n", ["--chunk-rows", "3"], 12, 5,
     "expected 2 fields"),
    ("streamed_error", "a,b\n" + "1,2\n2,1\n" * 5 + "3,?\n", ["--method", "covariance",
                                                              "--chunk-rows", "2"], 12, 3,
     'not a number: "?"'),
    ("semicolon_text", "a;b\n1;2\n3;x\n", [], 3, 3, "not a number"),
]


def test_malformed():
    for name, content, extra, line, col, reason in MALFORMED:
        path = write(name + ".csv", content)
        rc, out, err = run(["pca"] + extra + [path])
        want = "%s:%d:%d: " % (path, line, col)
        check(rc == 1, "%s: rc %d, want 1\n%s" % (name, rc, err))
        check(err.startswith(want) and reason in err.splitlines()[0],
              "%s: stderr %r, want %r + %r" % (name, err, want, reason))
        check(out == "", "%s: wrote to stdout: %r" % (name, out))
    # the same over standard input, and on the streamed path
    rc, out, err = run(["pca", "-"], stdin=b"a,b\n1,2\n3,x\n")
    check(rc == 1 and err.startswith("<stdin>:3:3: not a number"), "stdin error: %s" % err)
    # no output file is left behind after an error
    outs = [os.path.join(TMP, n) for n in ("never.csv", "never.svg", "never.txt")]
    for extra in ([], ["--method", "covariance", "--chunk-rows", "2"]):
        rc, _, err = run(["pca", "--scores", outs[0], "--plot", outs[1], "-o", outs[2]] + extra +
                         [write("late.csv", "a,b\n1,2\n2,3\n3,5\n5,x\n")])
        check(rc == 1 and not any(os.path.exists(o) for o in outs),
              "outputs left after an error: %s" % [o for o in outs if os.path.exists(o)])
    # other failures: exit 1 with a message naming the cause
    other = [
        (["pca", os.path.join(TMP, "does-not-exist.csv")], "cannot open"),
        (["pca", TMP], "is a directory"),
        (["pca", "-k", "3", write("k.csv", "a,b\n1,2\n2,3\n3,5\n")],
         "-k 3 is more than min(rows, columns) = min(3, 2) = 2"),
        (["pca", write("allmiss.csv", "a,b\n1,NA\nNA,2\n")], "no row without missing values"),
        (["pca", write("trail.csv", "a,b,\n1,2,\n3,4,\n")], "no row without missing values"),
        (["pca", "--scale", write("const.csv", "a,b\n1,7\n2,7\n3,7\n")],
         "column 2 (b) is constant"),
    ]
    for args, msg in other:
        rc, out, err = run(args)
        check(rc == 1 and msg in err and out == "",
              "gstat %s: rc %d, stderr %r (want %r)" % (" ".join(args), rc, err, msg))


# ---- formats: same numbers from every spelling of the table ---------------------------------

def check_table_notation():
    """Each numeric column of the text summary has one notation: fixed with the
    same decimals in every row (decimal points aligned), or scientific in every
    row when the variances span too many powers of ten; the numbers are the
    JSON summary's, every variance to 6 significant digits."""
    rng = random.Random(33)
    for name, scales in (("narrow", [2.0, 1.0, 0.5, 0.3]),
                         ("wide", [700.0, 90.0, 3.0, 0.2, 0.01])):
        rows = [["%.9g" % (rng.gauss(0, 1) * sc) for sc in scales] for _ in range(80)]
        path = write("fmt_notation_%s.csv" % name, table_text(rows, ["c%d" % j for j in range(len(scales))]))
        rc, out, err = run(["pca", path])
        rc2, js, _ = run(["pca", "--format", "json", path])
        if not check(rc == 0 and rc2 == 0, "%s: pca failed: %s" % (name, err)):
            continue
        ref = json.loads(js)
        lines = out.strip("\n").split("\n")
        cols = list(zip(*[line.split() for line in lines[1:]]))
        for c, cells in enumerate(cols[1:], start=1):
            sci = [bool(re.match(r"^-?\d\.\d{5}e[+-]\d\d+$", x)) for x in cells]
            dec = set(len(x.split(".")[1]) if "." in x and "e" not in x else -1 for x in cells)
            check(all(sci) or (not any(sci) and len(dec) == 1 and -1 not in dec),
                  "%s: column %d mixes notations or decimals: %r" % (name, c, cells))
            ends = set(len(line) - line.index(cells[i]) - len(cells[i])
                       for i, line in enumerate(lines[1:]))
            check(len(set(len(x) for x in cells)) == 1 or len(ends) == 1,
                  "%s: column %d not aligned" % (name, c))
        var = [float(x) for x in cols[1]]
        check(close_list(var, ref["explained_variance"], 5e-6),
              "%s: table variances %r vs JSON %r" % (name, var, ref["explained_variance"]))
        if name == "narrow":
            check("e" not in out.split("\n", 1)[1], "narrow range went scientific: %r" % out)
        else:
            check(all("e" in x for x in cols[1]), "wide range not scientific: %r" % out)


def test_formats():
    rows = random_table(60, 4, 7)
    names = ["alpha", "beta", "gamma", "delta"]
    variants = {
        "csv": table_text(rows, names),
        "tsv": table_text(rows, names, "\t"),
        "semicolon": table_text(rows, names, ";"),
        "no_header": table_text(rows),
        "crlf_bom": "\ufeff" + table_text(rows, names).replace("\n", "\r\n"),
        "quoted": table_text([['"%s"' % v for v in r] for r in rows],
                             ['"%s"' % n for n in names]),
        "spaces": table_text([[" %s " % v for v in r] for r in rows], names, ", "),
        "blank_lines": "\n" + table_text(rows, names).replace("\n", "\n\n", 5),
    }
    ref = None
    for name, text in variants.items():
        path = write("fmt_" + name + ".txt", text)
        s = summary(["pca"], path)
        if s is None:
            continue
        check(s["rows_read"] == 60 and s["n_features"] == 4, "%s: shape %s" % (name, s))
        want_names = ["x1", "x2", "x3", "x4"] if name == "no_header" else names
        check(s["features"] == want_names, "%s: features %s" % (name, s["features"]))
        if ref is None:
            ref = s
            continue
        for key in ["explained_variance", "explained_variance_ratio", "singular_values", "center"]:
            check(close_list(s[key], ref[key], 1e-12), "%s: %s differs from csv" % (name, key))
    # forced options agree with the detection
    path = write("fmt_forced.txt", table_text(rows, names, "|"))
    s = summary(["pca", "--delimiter", "|", "--header"], path)
    if s and ref:
        check(close_list(s["explained_variance"], ref["explained_variance"], 1e-12), "'|' differs")
    s = summary(["pca", "-d", "tab"], write("fmt_tab.txt", variants["tsv"]))
    if s and ref:
        check(close_list(s["explained_variance"], ref["explained_variance"], 1e-12), "tab differs")
    # number spellings
    s = summary(["pca"], write("numbers.csv", "a,b\n1e3,+2.5\n.5,-0.25E-1\n\"3\",7.\n4,1\n"))
    if s:
        check(close_list(s["center"], [(1000 + 0.5 + 3 + 4) / 4, (2.5 - 0.025 + 7 + 1) / 4], 1e-14),
              "number spellings: center %s" % s["center"])
    # JSON summary content
    if ref:
        k = ref["n_components"]
        check(k == 4 and ref["n_samples"] == 60 and ref["method"] in ("covariance", "gram"),
              "summary fields %s" % ref)
        cum = 0.0
        for i in range(k):
            cum += ref["explained_variance_ratio"][i]
            check(close(cum, ref["cumulative_variance_ratio"][i], 1e-12), "cumulative ratio")
        check(all(a >= b for a, b in zip(ref["explained_variance"], ref["explained_variance"][1:])),
              "variances not descending")
        check(close(sum(ref["explained_variance"]), ref["total_variance"], 1e-10), "total variance")
    # the text table shows the same numbers
    rc, out, err = run(["pca", write("fmt_table.csv", variants["csv"])])
    lines = out.strip("\n").split("\n")
    check(rc == 0 and re.match(r"component +variance +ratio +cumulative$", lines[0]),
          "table header: %r" % out)
    check(len(lines) == 5, "table has %d lines" % len(lines))
    if ref and len(lines) == 5:
        for i, line in enumerate(lines[1:]):
            cells = line.split()
            check(cells[0] == "PC%d" % (i + 1), "table row %d: %r" % (i, line))
            check(close(float(cells[1]), ref["explained_variance"][i], 1e-5) and
                  close(float(cells[2]), ref["explained_variance_ratio"][i], 1e-5),
                  "table row %d %r vs JSON" % (i, line))
    check_table_notation()
    # CSV summary
    rc, out, _ = run(["pca", "--format", "csv", "-k", "2", write("fmt_c.csv", variants["csv"])])
    head, vals = read_csv_numbers(out, row_names=True)
    check(rc == 0 and head == ["variance", "ratio", "cumulative", "singular_value"] and
          len(vals) == 2 and out.split("\n")[1].startswith("PC1,"), "CSV summary: %r" % out)
    # --variance picks the fewest components whose cumulative ratio exceeds it
    if ref:
        for f in (0.5, 0.9, 0.99):
            s = summary(["pca", "--variance", str(f)], write("fmt_v.csv", variants["csv"]))
            want = next(i + 1 for i, c in enumerate(ref["cumulative_variance_ratio"]) if c > f)
            check(s is not None and s["n_components"] == want,
                  "--variance %g: k %s, want %d" % (f, s and s["n_components"], want))
    # scaling: correlation PCA has total variance p
    s = summary(["pca", "--scale"], write("fmt_s.csv", variants["csv"]))
    if s:
        check(close(s["total_variance"], 4.0, 1e-10) and s["scaled"], "--scale total %s" % s)
    s = summary(["pca", "--no-center"], write("fmt_nc.csv", variants["csv"]))
    if s:
        check(s["center"] == [0, 0, 0, 0] and not s["centered"], "--no-center: %s" % s["center"])


# ---- outputs: components, scores, missing rows, stdout rules -------------------------------------

def test_outputs():
    rows = random_table(40, 5, 11)
    rows[3][1] = "NA"
    rows[17][4] = ""
    names = ["a", "b", "c", "d", "e"]
    path = write("out.csv", table_text(rows, names))
    comp = os.path.join(TMP, "comp.csv")
    scores = os.path.join(TMP, "scores.csv")
    rc, out, err = run(["pca", "-k", "3", "--components", comp, "--scores", scores, path])
    check(rc == 0, "outputs: rc %d %s" % (rc, err))
    check("2 of 40 data rows hold missing values (the first on line 5)" in err,
          "missing rows not reported: %r" % err)
    check(out.startswith("component"), "summary not on stdout with files: %r" % out)
    with open(comp) as f:
        text = f.read()
    check(text.startswith("component,a,b,c,d,e\nPC1,"), "components CSV layout: %r" % text[:80])
    head, comps = read_csv_numbers(text, row_names=True)
    check(head == names and len(comps) == 3 and all(len(r) == 5 for r in comps),
          "components shape: %s %s" % (head, comps))
    for r in comps:  # unit length, largest-magnitude entry positive
        check(close(sum(v * v for v in r), 1.0, 1e-10), "component not unit length")
        check(max(r, key=abs) > 0, "component sign convention")
    with open(scores) as f:
        head, sc = read_csv_numbers(f.read())
    check(head == ["PC1", "PC2", "PC3"] and len(sc) == 40 and all(len(r) == 3 for r in sc),
          "scores shape %s x %d" % (head, len(sc)))
    check(all(math.isnan(v) for v in sc[3] + sc[17]), "rows with missing values: NA scores")
    check(all(not math.isnan(v) for i, r in enumerate(sc) if i not in (3, 17) for v in r),
          "NA in complete rows")
    # the scores are the centered data times the components
    s = summary(["pca", "-k", "3"], path)
    if s and len(sc) == 40 and len(comps) == 3:
        r = rows[0]
        x = [float(v) - m for v, m in zip(r, s["center"])]
        for i in range(3):
            check(close(sum(a * b for a, b in zip(x, comps[i])), sc[0][i], 1e-9),
                  "score (0, %d)" % i)
        # the fit equals a fit on the complete rows only
        kept = [r for i, r in enumerate(rows) if i not in (3, 17)]
        s2 = summary(["pca", "-k", "3"], write("out_kept.csv", table_text(kept, names)))
        check(s2 and close_list(s["explained_variance"], s2["explained_variance"], 1e-12),
              "fit with dropped rows != fit on complete rows")
        check(s["rows_read"] == 40 and s["rows_dropped"] == 2 and s["n_samples"] == 38,
              "row counts %s" % s)
    # JSON files
    rc, out, err = run(["pca", "-k", "2", "--format", "json", "--components", comp, "--scores",
                        scores, "-o", os.path.join(TMP, "sum.json"), path])
    check(rc == 0 and out == "", "-o: stdout %r" % out)
    try:
        with open(comp) as f:
            c = json.load(f)
        with open(scores) as f:
            s = json.load(f)
        with open(os.path.join(TMP, "sum.json")) as f:
            j = json.load(f)
        check(c["features"] == names and len(c["components"]) == 2 and
              all(len(r) == 5 for r in c["components"]), "JSON components shape")
        check(s["columns"] == ["PC1", "PC2"] and len(s["scores"]) == 40 and
              s["scores"][3] == [None, None] and s["scores"][0][0] is not None, "JSON scores")
        check(j["n_components"] == 2, "JSON summary via -o")
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        fail("JSON outputs: %r" % exc)
    # '-' is stdout; the summary then stays out of it
    rc, out, err = run(["pca", "-k", "2", "--scores", "-", path])
    head, sc2 = read_csv_numbers(out)
    check(rc == 0 and head == ["PC1", "PC2"] and len(sc2) == 40, "--scores -: %r" % out[:200])
    rc, out, err = run(["pca", "-k", "2", "--components", "-", "--format", "json", path])
    try:
        check(rc == 0 and len(json.loads(out)["components"]) == 2, "--components - json")
    except ValueError:
        fail("--components - --format json does not parse: %r" % out)
    # a name that needs quoting in CSV and escaping in JSON
    qpath = write("names.csv", '"x,1","say ""hi""",plain\n1,2,3\n2,1,0\n4,4,1\n')
    rc, out, _ = run(["pca", "--components", "-", qpath])
    check(rc == 0 and out.splitlines()[0] == 'component,"x,1","say ""hi""",plain',
          "quoted names in CSV: %r" % out)
    s = summary(["pca"], qpath)
    check(s and s["features"] == ["x,1", 'say "hi"', "plain"], "names in JSON")
    # a pandas-style index column (no name in the header) is used, with a warning
    rc, out, err = run(["pca", write("index.csv", ",a,b\n0,1,2\n1,3,1\n2,2,2\n")])
    check(rc == 0 and "warning: column 1 has no name" in err, "unnamed column: %r" % err)
    # whiten: unit-variance scores
    rc, out, _ = run(["pca", "--whiten", "-k", "2", "--scores", "-", write("w.csv", table_text(
        random_table(50, 3, 5), ["a", "b", "c"]))])
    _, ws = read_csv_numbers(out)
    for i in range(2):
        col = [r[i] for r in ws]
        m = sum(col) / len(col)
        var = sum((v - m) ** 2 for v in col) / (len(col) - 1)
        check(rc == 0 and close(var, 1.0, 1e-8), "whitened score variance %g" % var)
    # unwritable output: exit 1, message names the file
    rc, out, err = run(["pca", "--scores", os.path.join(TMP, "no", "such", "dir.csv"), path])
    check(rc == 1 and "cannot write the scores" in err, "unwritable output: %d %s" % (rc, err))
    # a write error (file size limit: EFBIG) fails the run; a file the run created is
    # removed, an existing one is not
    if not WRAPPER:
        big = os.path.join(TMP, "big_scores.csv")
        old = os.path.join(TMP, "old_scores.csv")
        write("old_scores.csv", "keep me\n")

        def limit_file_size():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
        for target, existed in ((big, False), (old, True)):
            p = subprocess.run([GSTAT, "pca", "--scores", target, path], capture_output=True,
                               preexec_fn=limit_file_size)
            err = p.stderr.decode()
            check(p.returncode == 1 and "cannot write the scores to %s" % target in err,
                  "write error: rc %d %s" % (p.returncode, err))
            check(os.path.exists(target) == existed,
                  "after a write error %s %s" % (target, "is gone" if existed else "is left"))
        with open(os.path.join(TMP, "stdout.txt"), "wb") as f:
            p = subprocess.run([GSTAT, "pca", "--scores", "-", path], stdout=f,
                               stderr=subprocess.PIPE, preexec_fn=limit_file_size)
        check(p.returncode == 1 and b"cannot write the scores to stdout" in p.stderr,
              "stdout write error: rc %d %s" % (p.returncode, p.stderr))


# ---- streaming: chunked covariance path == in-memory path ----------------------------------------

def compare_runs(label, args_a, args_b, path, k, stdin_b=None, path_b=None):
    """Run two ways (k None: no -k) and require the same summary, scores, components."""
    sa = os.path.join(TMP, "sa.csv")
    sb = os.path.join(TMP, "sb.csv")
    ca = os.path.join(TMP, "ca.csv")
    cb = os.path.join(TMP, "cb.csv")
    kk = ["-k", str(k)] if k else []
    a = summary(["pca"] + kk + ["--scores", sa, "--components", ca] + args_a, path)
    b = summary(["pca"] + kk + ["--scores", sb, "--components", cb] + args_b, path_b or path,
                stdin=stdin_b)
    if not a or not b:
        return None
    for key in ["explained_variance", "explained_variance_ratio", "singular_values", "center",
                "scale"]:
        check(close_list(a[key], b[key], 1e-9), "%s: %s %s vs %s" % (label, key, a[key], b[key]))
    for key in ["rows_read", "rows_dropped", "n_samples", "n_components"]:
        check(a[key] == b[key], "%s: %s %s vs %s" % (label, key, a[key], b[key]))
    for fa, fb, key in ((sa, sb, "scores"), (ca, cb, "components")):  # JSON files
        with open(fa) as f:
            ra = [[float("nan") if v is None else v for v in r] for r in json.load(f)[key]]
        with open(fb) as f:
            rb = [[float("nan") if v is None else v for v in r] for r in json.load(f)[key]]
        ok = len(ra) == len(rb) and all(
            (math.isnan(x) and math.isnan(y)) or close(x, y, 1e-8)
            for r1, r2 in zip(ra, rb) for x, y in zip(r1, r2))
        check(ok, "%s: %s differs" % (label, os.path.basename(fa)))
    return a, b


def test_streaming():
    rows = random_table(203, 6, 3, missing=0.05)
    path = write("stream.csv", table_text(rows, ["c%d" % i for i in range(6)]))
    for chunk in ("1", "3", "64", "1000"):
        r = compare_runs("chunk %s" % chunk, ["--method", "gram"],
                         ["--method", "covariance", "--chunk-rows", chunk], path, 4)
        if r:
            check(not r[0]["streamed"] and r[1]["streamed"], "streamed flags %s %s" %
                  (r[0]["streamed"], r[1]["streamed"]))
            check(r[1]["rows_dropped"] > 0, "the streaming test data should have missing rows")
    compare_runs("auto in memory", ["--method", "gram"], [], path, 3)
    compare_runs("scaled", ["--method", "gram", "--scale"],
                 ["--method", "covariance", "--chunk-rows", "5", "--scale"], path, 3)
    compare_runs("variance", ["--method", "gram", "--variance", "0.8"],
                 ["--method", "covariance", "--chunk-rows", "7", "--variance", "0.8"], path, None)
    # auto switches to streaming above --max-memory
    r = compare_runs("auto over max-memory", ["--method", "gram"],
                     ["--max-memory", "2K", "--chunk-rows", "4"], path, 3)
    if r:
        check(r[1]["streamed"], "auto with --max-memory 2K did not stream")
    # standard input: spooled for the second pass
    with open(path, "rb") as f:
        data = f.read()
    compare_runs("stdin", ["--method", "gram"], ["--method", "covariance", "--chunk-rows", "9"],
                 path, 3, stdin_b=data, path_b="-")
    compare_runs("stdin auto", ["--method", "gram"], ["--max-memory", "1K"], path, 2,
                 stdin_b=data, path_b="-")
    compare_runs("stdin in memory", ["--method", "gram"], [], path, 2, stdin_b=data, path_b="-")
    # a FIFO (as <(zcat data.csv.gz) gives) cannot be read twice: it is spooled too
    if hasattr(os, "mkfifo"):
        fifo = os.path.join(TMP, "fifo.csv")
        os.mkfifo(fifo)

        def feed():
            with open(fifo, "wb") as f:
                f.write(data)
        t = threading.Thread(target=feed, daemon=True)
        t.start()
        compare_runs("fifo", ["--method", "gram"], ["--method", "covariance", "--chunk-rows",
                                                    "11"], path, 3, path_b=fifo)
        t.join(5)


def test_memory():
    """Streaming holds O(chunk + p^2): its peak RSS does not grow with the input."""
    if WRAPPER:
        return SKIP
    p = 10
    rng = random.Random(5)
    block = "".join(",".join("%.6f" % rng.gauss(0, 1) for _ in range(p)) + "\n"
                    for _ in range(2000)).encode()
    def peak_rss_kb(args, reps):
        proc = subprocess.Popen([GSTAT] + args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, env=dict(os.environ, OMP_NUM_THREADS="1"))

        def feed():
            try:
                for _ in range(reps):
                    proc.stdin.write(block)
                proc.stdin.close()
            except BrokenPipeError:
                pass
        t = threading.Thread(target=feed)
        t.start()
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        t.join()
        check(proc.returncode == 0, "memory run %s: %s" % (args, err))
        return usage.ru_maxrss

    streamed_args = ["pca", "--method", "covariance", "-k", "2", "--chunk-rows", "1000", "-"]
    # 250 blocks: ~45 MB of text, 5M values, 40 MB as doubles; baseline: one block.
    # ru_maxrss of a child also counts the Python image it was forked from (~20
    # MB, more on some machines): the in-memory run must clear that by far.
    streamed = peak_rss_kb(streamed_args, 250)
    in_memory = peak_rss_kb(["pca", "-k", "2", "-"], 250)
    base = peak_rss_kb(streamed_args, 1)
    print("peak RSS: 2000 rows %d KiB; 500000 rows streamed %d KiB, in memory %d KiB" %
          (base, streamed, in_memory))
    check(streamed < base + 6 * 1024, "streaming RSS grew with the input: %d KiB vs %d KiB" %
          (streamed, base))
    # the in-memory run holds the parsed values (PCA itself makes no copy of them)
    check(in_memory > base + 20 * 1024, "the in-memory run should hold the data (%d KiB): the "
          "measurement is broken" % in_memory)


# ---- plot ------------------------------------------------------------------------------------

def parse_svg(path, label):
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as exc:
        fail("%s: SVG does not parse: %s" % (label, exc))
        return None
    check(root.tag == SVG_NS + "svg", "%s: root is %s" % (label, root.tag))
    return root


def svg_texts(root):
    return ["".join(t.itertext()) for t in root.iter(SVG_NS + "text")]


def test_plot():
    rows = random_table(120, 5, 9)
    path = write("plot & <data>.csv", table_text(rows, ["a", "b", "c", "d", "e"]))
    svg = os.path.join(TMP, "plot.svg")
    rc, out, err = run(["pca", "--plot", svg, path])
    check(rc == 0 and err == "", "plot: rc %d %s" % (rc, err))
    root = parse_svg(svg, "plot")
    if root is not None:
        texts = svg_texts(root)
        for want in ["explained variance ratio", "principal component", "ratio", "cumulative"]:
            check(want in texts, "plot lacks the label %r" % want)
        check(any(t.startswith("PC1 score (") for t in texts) and
              any(t.startswith("PC2 score (") for t in texts), "scatter axis labels")
        check(any("plot & <data>.csv" in t for t in texts), "title with escaped name")
        check(sum(1 for t in texts if re.fullmatch(r"-?\d+(\.\d+)?", t)) >= 10, "tick labels")
        points = [c for c in root.iter(SVG_NS + "circle") if c.get("r") == "2.5"]
        check(len(points) == 120, "scatter has %d points, want 120" % len(points))
        bars = [r for r in root.iter(SVG_NS + "rect") if r.find(SVG_NS + "title") is not None]
        check(len(bars) == 5, "scree has %d bars, want 5" % len(bars))
        check(root.find(SVG_NS + "polyline") is not None, "no cumulative line")
    # one component: a histogram instead, and a note saying so
    rc, out, err = run(["pca", "-k", "1", "--plot", svg, path])
    check(rc == 0 and "only 1 component" in err, "k=1 plot: %d %s" % (rc, err))
    root = parse_svg(svg, "k=1 plot")
    if root is not None:
        check(any("no PC2" in t for t in svg_texts(root)), "k=1 plot does not say why")
    # the streamed path draws the same points; many rows are sampled
    many = write("many.csv", table_text(random_table(12000, 3, 4), ["a", "b", "c"]))
    for extra in ([], ["--method", "covariance", "--chunk-rows", "500"]):
        rc, out, err = run(["pca", "-k", "2", "--plot", svg] + extra + [many])
        root = parse_svg(svg, "sampled plot %s" % extra)
        if root is not None:
            points = [c for c in root.iter(SVG_NS + "circle") if c.get("r") == "2.5"]
            check(3000 <= len(points) <= 5000, "%s: %d points" % (extra, len(points)))
            check(any("of 12000 rows shown" in t for t in svg_texts(root)), "sampling note")
    check_color_by()
    # --plot - writes the SVG to stdout
    rc, out, err = run(["pca", "--plot", "-", path])
    try:
        check(rc == 0 and ET.fromstring(out.encode()).tag == SVG_NS + "svg", "--plot -")
    except ET.ParseError as exc:
        fail("--plot - output does not parse: %s" % exc)


def check_color_by():
    """--color-by COLUMN: that column is a label, not data (the fit equals the
    fit without it), and each scatter point takes its row's label: its colour
    (one per label, in order of appearance) and its tooltip; rows dropped for
    a missing value drop their label too, in memory and streamed alike."""
    rows = random_table(90, 3, 21)
    kinds = ["setosa", "versicolor", "virginica", ""]
    labels = [kinds[(i * 7) % 4] if i % 11 else "NA" for i in range(90)]
    rows[5][1] = "NA"  # left out of the fit, with its label
    with_label = write("cb.csv", table_text([r[:2] + [lab] + r[2:] for r, lab in zip(rows, labels)],
                                            ["a", "b", "species", "c"]))
    plain = write("cb_plain.csv", table_text(rows, ["a", "b", "c"]))
    _, ref, _ = run(["pca", "--format", "json", plain])
    svgs = []
    for extra in ([], ["--method", "covariance", "--chunk-rows", "7"], ["--color-by", "3"]):
        svg = os.path.join(TMP, "cb%d.svg" % len(svgs))
        opts = extra if "--color-by" in extra else ["--color-by", "species"] + extra
        rc, out, err = run(["pca", "--format", "json", "--plot", svg] + opts + [with_label])
        if not check(rc == 0, "--color-by %s: rc %d %s" % (opts, rc, err)):
            return
        check(close_list(json.loads(out)["explained_variance"],
                         json.loads(ref)["explained_variance"], 1e-10) and
              json.loads(out)["features"] == ["a", "b", "c"], "--color-by changed the fit")
        root = parse_svg(svg, "--color-by")
        if root is None:
            return
        svgs.append(root)
        pts = [c for c in root.iter(SVG_NS + "circle") if c.get("r") == "2.5"]
        kept = [lab for i, lab in enumerate(labels) if i != 5]
        check(len(pts) == len(kept), "--color-by: %d points, want %d" % (len(pts), len(kept)))
        order = []
        for lab in kept:
            if lab not in ("", "NA") and lab not in order:
                order.append(lab)
        colour = {}
        for c, lab in zip(pts, kept):
            title = c.find(SVG_NS + "title")
            if lab in ("", "NA"):
                check(title is None and c.get("fill") == "#b0b0b0", "unlabelled point not grey")
                continue
            check(title is not None and title.text == lab, "point label %r, want %r" %
                  (title.text if title is not None else None, lab))
            colour.setdefault(lab, c.get("fill"))
            check(c.get("fill") == colour[lab], "label %s in two colours" % lab)
        check(len(set(colour.values())) == len(order), "labels share a colour: %s" % colour)
        texts = svg_texts(root)
        check(all(lab in texts for lab in order) and "species" in texts, "legend: %s" % texts)
    if len(svgs) == 3:
        xy = [[(c.get("cx"), c.get("cy"), c.get("fill")) for c in r.iter(SVG_NS + "circle")]
              for r in svgs]
        check(xy[0] == xy[1] == xy[2], "streamed / numbered --color-by plots differ")
    rc, _, err = run(["pca", "--plot", os.path.join(TMP, "x.svg"), "--color-by", "nope", with_label])
    check(rc == 1 and "no column 'nope'" in err and "species" in err, "unknown column: %s" % err)
    rc, out, _ = run(["pca", "--help"])
    check("--color-by COLUMN" in out, "pca --help lacks --color-by")
    rc, _, err = run(["pca", "--color-by", "species", with_label])
    check(rc == 2 and "--plot" in err, "--color-by without --plot: %d %s" % (rc, err))


# ---- progress line: only on a terminal ---------------------------------------------------------

def read_terminal(master, proc, seconds=30):
    """What proc writes on the pseudo-terminal `master` until it closes it
    (or `seconds` pass); waits for proc and closes master."""
    seen = b""
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    proc.wait()
    os.close(master)
    return seen


def test_progress():
    if WRAPPER:
        return SKIP
    block = ("".join("%d,%d,%d\n" % (i, i * i % 7, i % 5) for i in range(8000))).encode()
    # not a terminal: never a progress line, however long the input takes
    rc, out, err = run(["pca", "-"], stdin=b"a,b,c\n" + block * 4)
    check(rc == 0 and "\r" not in err and err == "", "progress without a tty: %r" % err)
    # a terminal and a slow input (> 1 s): the line appears on stderr
    master, slave = pty.openpty()
    proc = subprocess.Popen([GSTAT, "pca", "-"], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    proc.stdin.write(b"a,b,c\n")
    for _ in range(14):
        proc.stdin.write(block)
        proc.stdin.flush()
        time.sleep(0.12)
    proc.stdin.close()
    seen = read_terminal(master, proc)
    check(proc.returncode == 0, "progress run failed")
    check(b"gstat pca: reading <stdin>:" in seen and b" MB" in seen,
          "no progress line on a terminal: %r" % seen[:300])


# ---- smoke test on a real data set --------------------------------------------------------------

def test_wine(data_dir):
    path = os.path.join(data_dir or "", "wine.csv")
    if not data_dir or not os.path.exists(path):
        print("no %s: skipped" % path)
        return SKIP
    for args in ([], ["--scale"], ["--method", "covariance", "--chunk-rows", "17"]):
        s = summary(["pca"] + args, path)
        if not s:
            continue
        r = s["explained_variance_ratio"]
        check(close(sum(r), 1.0, 1e-9) and all(a >= b for a, b in zip(r, r[1:])),
              "wine %s: ratios %s" % (args, r))
        check(s["n_samples"] >= 100 and s["n_features"] >= 2, "wine shape %s" % s)
    svg = os.path.join(TMP, "wine.svg")
    rc, out, err = run(["pca", "-k", "2", "--scale", "--plot", svg, path])
    check(rc == 0, "wine plot: %s" % err)
    parse_svg(svg, "wine plot")


# ---- random malformed inputs: exit 0 or 1 with a located message, never a crash ------------------

def test_fuzz():
    rng = random.Random(20240607)
    pieces = [b"1", b"2.5", b"-3e2", b",", b",", b"\t", b";", b"\n", b"\n", b"\r\n", b'"', b'""',
              b"NA", b" ", b"x", b"\xc3\xa9", b"\xff", b"\x00", b"inf", b"1e999", b".", b"nan"]
    option_sets = [[], ["--method", "covariance", "--chunk-rows", "1", "--scores", "-"],
                   ["--header"], ["--no-header"], ["--missing", "error"], ["--scale"],
                   ["-k", "1", "--plot", os.path.join(TMP, "fz.svg")],
                   ["--method", "gram", "--scores", "-"]]
    path = os.path.join(TMP, "fuzz.csv")
    for i in range(150):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randrange(0, 50)))
        if rng.random() < 0.5:
            data = b"a,b,c\n" + data
        with open(path, "wb") as f:
            f.write(data)
        opts = rng.choice(option_sets)
        rc, out, err = run(["pca"] + opts + [path])
        ok = rc == 0 or (rc == 1 and (re.match(re.escape(path) + r":\d+:\d+: \S", err) or
                                     err.startswith("gstat pca: ")))
        check(ok, "fuzz case %d %s %r: rc %d %r" % (i, opts, data, rc, err))
        if rc == 0 and "--scores" in opts:  # one score row per data row
            check(len(out.strip("\n").split("\n")) >= 2, "fuzz case %d: no scores" % i)


# ---- a few runs under valgrind -------------------------------------------------------------------

def test_valgrind(supp):
    vg = shutil.which("valgrind")
    if not vg:
        print("valgrind not found: skipped")
        return SKIP
    global WRAPPER
    WRAPPER = [vg, "-q", "--error-exitcode=99", "--leak-check=full",
               "--errors-for-leak-kinds=definite,indirect", "--show-leak-kinds=definite,indirect"]
    if supp:
        WRAPPER.append("--suppressions=" + supp)
    path = write("vg.csv", table_text(random_table(30, 4, 2, missing=0.1), list("abcd")))
    out = os.path.join(TMP, "vg.out")
    runs = [
        (["pca", "-k", "2", "--scores", out, "--components", out + "2", "--plot", out + ".svg",
          "--format", "json", path], 0),
        (["pca", "--method", "covariance", "--chunk-rows", "4", "--scores", out, "--plot",
          out + ".svg", path], 0),
        (["pca", "--method", "gram", "--scale", path], 0),
        (["pca", write("vg_bad.csv", 'a,b\n1,2\n"3,4\n'), ], 1),
        (["pca", write("vg_bin.csv", b"a,b\n\x00\xff\n")], 1),
        (["pca", "-k", "zz", path], 2),
    ]
    for args, want in runs:
        rc, _, err = run(args, timeout=600)
        check(rc == want, "valgrind %s: rc %d (want %d)\n%s" % (" ".join(args), rc, want, err))
    rc, _, err = run(["pca", "--method", "covariance", "--chunk-rows", "3", "--scores", out, "-"],
                     stdin=open(path, "rb").read(), timeout=600)
    check(rc == 0, "valgrind stdin spool: %s" % err)


def main():
    global GSTAT, TMP
    ap = argparse.ArgumentParser()
    ap.add_argument("gstat")
    ap.add_argument("group")
    ap.add_argument("--data-dir")
    ap.add_argument("--valgrind-supp")
    args = ap.parse_args()
    GSTAT = os.path.abspath(args.gstat)
    TMP = tempfile.mkdtemp(prefix="gstat-cli-")
    groups = {
        "help": test_help, "passive_waits": test_passive_waits, "usage": test_usage, "malformed": test_malformed,
        "formats": test_formats, "outputs": test_outputs, "streaming": test_streaming,
        "memory": test_memory, "plot": test_plot, "progress": test_progress, "fuzz": test_fuzz,
        "wine": lambda: test_wine(args.data_dir),
        "valgrind": lambda: test_valgrind(args.valgrind_supp),
    }
    if args.group not in groups:
        print("unknown group %s (one of %s)" % (args.group, ", ".join(groups)))
        return 2
    try:
        result = groups[args.group]()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    if failures:
        print("%d failure(s) in %s" % (len(failures), args.group))
        return 1
    if result == SKIP:
        return SKIP
    print("%s: all checks passed" % args.group)
    return 0


if __name__ == "__main__":
    sys.exit(main())
