#!/usr/bin/env python3
"""The README's injection table from a jev redteam report: one line per reading (setting), one
column per family with "moved / acted on" in % of the rows (raw first, combined readings last), then the clean accuracy and, for a
reading with the detector, the share of clean rows it flagged.

  python3 measurements/redteam-table.py out/redteam/redteam.json
"""
import argparse
import json


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("report", help="DIR/redteam.json written by jev redteam")
    args = ap.parse_args()
    with open(args.report) as f:
        rep = json.load(f)
    families = [fam["name"] for fam in rep["families"]]
    settings, cells, clean = [], {}, {}
    for fig in rep["figures"]:
        s = fig["setting"]
        if s not in cells:
            settings.append(s)
            cells[s] = {}
        cells[s][fig["family"]] = "%.1f / %.1f" % (100 * fig["moved"], 100 * fig["moved_answered"])
        acc = "%.1f %%" % (100 * fig["clean_accuracy"])
        if fig.get("detected"):
            acc += " (%.1f %% of clean rows flagged)" % (100 * fig.get("clean_flagged", 0))
        clean[s] = acc
    print("| reading | " + " | ".join(families) + " | clean accuracy |")
    print("|---" * (len(families) + 2) + "|")
    # raw first, then the single readings, then the combined ones
    settings.sort(key=lambda s: (len(s.split("+")), s != "raw", s))
    for s in settings:
        print("| %s | %s | %s |" % (s, " | ".join(cells[s].get(f, "—") for f in families), clean[s]))


if __name__ == "__main__":
    main()
