"""CPU time of a process tree, for the CPU-activity power model.

Sums utime+stime of the root and every live descendant, plus cutime+cstime
(children already reaped) of each, from /proc/<pid>/stat.  Descendants come
from /proc/<pid>/task/<tid>/children (one read per thread, no /proc scan).
A process that exits between two polls loses its last few ticks unless
its parent reaped it (then they show in the parent's cutime); the
emulated power follows what the kernel reports, which is the point.
"""

import os

TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


def _stat(pid):
	"""(state, utime+stime+cutime+cstime ticks) of pid."""
	with open(f"/proc/{pid}/stat", "rb") as f:
		s = f.read()
	# comm may contain spaces and parens: split after the last ')'.
	fields = s[s.rindex(b")") + 2:].split()
	# fields[0] is state (field 3); utime is field 14 -> index 11.
	return fields[0], int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])


def _children(pid):
	kids = []
	try:
		for tid in os.listdir(f"/proc/{pid}/task"):
			try:
				with open(f"/proc/{pid}/task/{tid}/children") as f:
					kids.extend(int(x) for x in f.read().split())
			except OSError:
				pass
	except OSError:
		pass
	return kids


def tree_cpu_seconds(root):
	"""CPU seconds used so far by root and its descendants; None once root
	has exited (gone, or a zombie its parent has not reaped yet)."""
	total = 0
	stack = [root]
	first = True
	while stack:
		pid = stack.pop()
		try:
			state, ticks = _stat(pid)
		except (OSError, ValueError, IndexError):
			if first:
				return None
			continue
		if first and state in (b"Z", b"X"):
			return None
		total += ticks
		first = False
		stack.extend(_children(pid))
	return total * TICK_S
