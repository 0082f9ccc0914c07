"""A shared mmap file through which a workload tells the updater its phase.

Layout (little-endian, 64-byte header, then NSLOTS slots of 16 bytes):
  0  8s  magic b"ANCHPHS1"
  8  u32 nslots
 12  u32 reserved
 16  u64 count   number of transitions published so far
 64+16*i: u64 t_mono_ns, u32 phase_id, u32 reserved

The workload (one writer) fills slot count % NSLOTS, then stores count+1.
The updater reads count, then the slots it has not seen.  Slot before
count relies on x86-64 store ordering (TSO): each store is one aligned
8-byte memcpy from struct.pack_into, and stores are not reordered with
other stores, so a reader that sees the new count sees the slot.  The
reader refuses to continue if it fell more than NSLOTS behind.

Phase id 0 means "off": before the workload starts and after it ends (the
emulated sensor draws nothing then, so perun's window covers all energy).
"""

import mmap
import os
import struct
import time

MAGIC = b"ANCHPHS1"
NSLOTS = 8192
HEADER = 64
SLOT = 16
SIZE = HEADER + NSLOTS * SLOT
PHASE_OFF = 0


def create(path):
	with open(path, "wb") as f:
		f.write(struct.pack("<8sII", MAGIC, NSLOTS, 0).ljust(HEADER, b"\0"))
		f.write(b"\0" * (NSLOTS * SLOT))


class _Mapped:
	def __init__(self, path, writable):
		self.fd = os.open(path, os.O_RDWR if writable else os.O_RDONLY)
		prot = mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0)
		self.mm = mmap.mmap(self.fd, SIZE, mmap.MAP_SHARED, prot)
		magic, n, _ = struct.unpack_from("<8sII", self.mm, 0)
		if magic != MAGIC or n != NSLOTS:
			raise ValueError(f"{path}: not an anchor_emul phase file")

	def close(self):
		self.mm.close()
		os.close(self.fd)


class Publisher(_Mapped):
	"""Workload side: publish(phase_id) at each phase change."""

	def __init__(self, path):
		super().__init__(path, True)
		self.count = struct.unpack_from("<Q", self.mm, 16)[0]

	def publish(self, phase_id, t_ns=None):
		t = time.monotonic_ns() if t_ns is None else t_ns
		struct.pack_into("<QI", self.mm, HEADER + (self.count % NSLOTS) * SLOT, t, phase_id)
		self.count += 1
		struct.pack_into("<Q", self.mm, 16, self.count)
		return t


class Reader(_Mapped):
	"""Updater side: poll() returns the transitions published since the last call."""

	def __init__(self, path):
		super().__init__(path, False)
		self.seen = 0

	def poll(self):
		count = struct.unpack_from("<Q", self.mm, 16)[0]
		if count - self.seen > NSLOTS:
			raise RuntimeError(f"phase file overrun: {count - self.seen} transitions since last poll")
		out = []
		for i in range(self.seen, count):
			out.append(struct.unpack_from("<QI", self.mm, HEADER + (i % NSLOTS) * SLOT))
		self.seen = count
		return out
