#!/usr/bin/env python3
"""Write the datasets bundled with scikit-learn as plain CSV files in data/.

For each dataset: <name>.csv (header row of feature names, then the numeric
features, one observation per row) and <name>_labels.csv (header "class",
the integer class of each row; the names are in data/README.md).

Values are written as the shortest decimal that reads back to the same
float64 (Python's repr), so a C strtod, R's read.csv and numpy all read
exactly the doubles scikit-learn holds; whole numbers are written without
a decimal point.

usage: python3 data/export_sklearn.py   (from anywhere; writes next to itself)
"""
import os

from sklearn import datasets

LOADERS = {
    "iris": datasets.load_iris,
    "wine": datasets.load_wine,
    "breast_cancer": datasets.load_breast_cancer,
    "digits": datasets.load_digits,
}


def fmt(x):
    x = float(x)
    return str(int(x)) if x.is_integer() else repr(x)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    for name, load in LOADERS.items():
        d = load()
        names = [str(f) for f in d.feature_names]
        assert all("," not in s and '"' not in s for s in names)
        with open(os.path.join(here, name + ".csv"), "w", newline="\n") as f:
            f.write(",".join(names) + "\n")
            for row in d.data:
                f.write(",".join(fmt(v) for v in row) + "\n")
        with open(os.path.join(here, name + "_labels.csv"), "w", newline="\n") as f:
            f.write("class\n")
            for c in d.target:
                f.write(f"{int(c)}\n")
        print(f"{name}: {d.data.shape[0]} x {d.data.shape[1]}")


if __name__ == "__main__":
    main()
