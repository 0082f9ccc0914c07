"""Victim for t_plots_slow: N phases, each spinning a little, repeated.
Usage: plot_victim.py N [--long]
--long gives the phases long names (up to ~60 characters) to test the
pictures' labels; phase i runs (i % 4 + 1) * 20 ms so the bars differ."""
import sys
import time

import anchor


def spin(sec):
	t0 = time.perf_counter()
	while time.perf_counter() - t0 < sec:
		pass


def main():
	n = int(sys.argv[1])
	long_names = "--long" in sys.argv
	names = [(f"model.encoder.layer_{i:02d}.self_attention.output_projection" if long_names and i % 2 == 0
		  else f"data_loader_prefetch_batch_{i:02d}" if long_names else f"phase{i:02d}") for i in range(n)]
	# About 4 s of phases in all: more than perun's own MPI_Init_thread on a
	# loaded machine, else the report refuses the overlap with perun.
	for _ in range(max(3, round(4.0 / (n * 0.05)))):
		for i, name in enumerate(names):
			with anchor.phase(name):
				spin((i % 4 + 1) * 0.02)


if __name__ == "__main__":
	main()
