#!/usr/bin/env python3
"""Write Zachary's karate club (data/karate.edges, data/karate_labels.csv) from
the copy bundled with networkx: 34 members, 78 friendships (unweighted, each
once, smaller id first), and each member's faction after the split.

usage: python3 -m pip install networkx && python3 data/export_karate.py
"""
import os

import networkx as nx

HERE = os.path.dirname(os.path.abspath(__file__))

g = nx.karate_club_graph()
with open(os.path.join(HERE, "karate.edges"), "w") as f:
    f.write("# Zachary's karate club (W. W. Zachary, J. Anthropol. Res. 33, 452-473, 1977)\n")
    f.write("# 34 members (ids 0-33), 78 undirected friendships, one per line: src dst\n")
    f.write("# factions after the split: data/karate_labels.csv (0 Mr. Hi, 1 Officer)\n")
    for u, v in sorted((min(a, b), max(a, b)) for a, b in g.edges()):
        f.write("%d %d\n" % (u, v))
with open(os.path.join(HERE, "karate_labels.csv"), "w") as f:
    f.write("faction\n")
    for i in range(34):
        f.write("%d\n" % (0 if g.nodes[i]["club"] == "Mr. Hi" else 1))
