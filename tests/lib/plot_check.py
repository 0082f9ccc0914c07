"""Check the pictures of an `anchorpost report` directory as a reader sees
them (tests/report/t_plots_slow.sh):

  python tests/lib/plot_check.py OUTDIR --phases N [--no-sensor]

- phases.svg and timeline.svg carry real <text> elements (selectable,
  searchable) naming every phase of phases.csv, none of the tool's own
  (anchor.*, perun's MPI calls);
- phases.png / timeline.png are PNGs of a readable size;
- timeline.svg's legend gives the N phases N distinct colours;
- --no-sensor: phases.svg says there is no energy and shows one nonzero
  time bar (its "<seconds> s" value) per phase.
Prints one "ok" line per check; exits 1 with "FAIL: ..." on the first."""
import argparse
import csv
import itertools
import os
import re
import struct
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
TOOL = re.compile(r"^(anchor\.|MPI_Init_thread|MPI_Allgather|MPI_Barrier|MPI_Finalize)")


def fail(msg):
	print("FAIL: " + msg)
	sys.exit(1)


def check(cond, msg):
	if not cond:
		fail(msg)


def texts(path):
	root = ET.parse(path).getroot()
	return [("".join(t.itertext()), t) for t in root.iter(SVG + "text")]


def png_size(path):
	with open(path, "rb") as f:
		head = f.read(24)
	check(head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", f"{path}: not a PNG")
	return struct.unpack(">II", head[16:24])


def main():
	ap = argparse.ArgumentParser()
	ap.add_argument("dir")
	ap.add_argument("--phases", type=int, required=True)
	ap.add_argument("--no-sensor", action="store_true")
	a = ap.parse_args()
	d = a.dir
	with open(os.path.join(d, "phases.csv"), newline="") as f:
		rows = [r for r in csv.DictReader(f) if r["scope"] == "all"]
	names = sorted({r["phase"] for r in rows if not r["phase"].startswith("(") and not TOOL.match(r["phase"])})
	tools = sorted({r["phase"] for r in rows if TOOL.match(r["phase"])})
	check(len(names) == a.phases, f"phases.csv has {len(names)} user phases, expected {a.phases}: {names}")

	for pic in ("phases", "timeline"):
		w, h = png_size(os.path.join(d, pic + ".png"))
		check(w >= 600 and h >= 300, f"{pic}.png is {w}x{h}")
		tx = texts(os.path.join(d, pic + ".svg"))
		check(len(tx) > 10, f"{pic}.svg has {len(tx)} <text> elements")
		for n in names:
			check(any(s.startswith(n[:40]) for s, _ in tx), f"{pic}.svg: no <text> names phase {n!r}")
		shown_tools = [s for s, _ in tx if TOOL.match(s)]
		check(not shown_tools, f"{pic}.svg shows the tool's own phases {shown_tools}")
		print(f"ok {pic}: {w}x{h} PNG; SVG with {len(tx)} <text> elements naming all {len(names)} phases, "
		      f"none of the tool's {tools}")

	# Legend squares of timeline.svg (22 x 12 filled paths): one colour each.
	root = ET.parse(os.path.join(d, "timeline.svg")).getroot()
	fills = []
	for p in root.iter(SVG + "path"):
		nums = [float(x) for x in re.findall(r"-?[\d.]+", p.get("d", ""))]
		fill = re.search(r"fill:rgb\(([\d.]+)%,([\d.]+)%,([\d.]+)%\)", p.get("style", ""))
		if fill and len(nums) >= 8 and nums[2] - nums[0] == 22 and nums[5] - nums[3] == 12:
			fills.append(tuple(float(c) / 100 for c in fill.groups()))
	check(len(fills) == len(names), f"timeline legend has {len(fills)} phase squares, expected {len(names)}")
	check(len(set(fills)) == len(fills), f"timeline legend repeats colours: {fills}")
	dmin = min((sum((x - y) ** 2 for x, y in zip(p, q)) ** 0.5 for p, q in itertools.combinations(fills, 2)),
		   default=1)
	check(dmin > 0.1, f"two legend colours are only {dmin:.3f} apart (RGB 0..1)")
	print(f"ok timeline legend: {len(fills)} distinct colours, closest pair {dmin:.2f} apart (RGB 0..1)")

	if a.no_sensor:
		tx = texts(os.path.join(d, "phases.svg"))
		check(any("no energy" in s for s, _ in tx), "phases.svg does not say there is no energy")
		vals = [float(m.group(1)) for s, _ in tx for m in [re.match(r"^([\d.]+(?:e-?\d+)?) s$", s)] if m]
		check(len(vals) == len(names), f"phases.svg has {len(vals)} time bars, expected {len(names)}")
		check(all(v > 0 for v in vals), f"time bars {vals}")
		print(f"ok no sensor: phases.svg says 'no energy' and shows {len(vals)} nonzero time bars {vals}")


if __name__ == "__main__":
	main()
