"""anchorpost perun on bad input: a missing file, a 0-byte file, a text
file, HDF5 files that are not perun's (made with h5py here), perun files
with groups, datasets or attributes removed, wrong dtypes and shapes,
inconsistent lengths, wrong node types, soft links.

Each must give exit 1, exactly one stderr line
"anchorpost: FILE: HDF5-PATH: what is wrong", and no output file (nor a
leftover temp file).
"""

import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from perun_testlib import TMP, anchorpost, check, copy_fixture, layout

BAD = os.path.join(TMP, "bad")
os.makedirs(BAD, exist_ok=True)
OUTDIR = os.path.join(TMP, "out")
os.makedirs(OUTDIR, exist_ok=True)

# HDF5 paths inside the fixture (tests/data/perun/emulated_rapl_nvml.hdf5)
_app, _mr, _host = layout(copy_fixture("emulated_rapl_nvml.hdf5", os.path.join(TMP, "layout")))
MR = f"{_app}/nodes/{_mr}"
HOST = MR + "/nodes/0/nodes/" + _host
PKG = HOST + "/nodes/cpu/nodes/cpu_0_package-0"
GPU = HOST + "/nodes/gpu/nodes/CUDA:0_POWER"

ncase = 0


def expect_error(path, want_sub, want_h5path=None, label=None, args=()):
    global ncase
    out = os.path.join(OUTDIR, "o.csv")
    p = anchorpost("perun", path, "-o", out, *args, check_rc=False)
    lines = p.stderr.strip().splitlines()
    what = f"{label or os.path.basename(path)}: rc {p.returncode}, stderr {p.stderr!r}"
    check(p.returncode == 1, what + " (want exit 1)")
    check(len(lines) == 1, what + " (want one line)")
    check(lines[0].startswith(f"anchorpost: {path}: "), what + " (want 'anchorpost: FILE: ')")
    check(want_sub in lines[0], what + f" (want {want_sub!r})")
    if want_h5path:
        check(want_h5path in lines[0], what + f" (want HDF5 path {want_h5path!r})")
    check(os.listdir(OUTDIR) == [], what + f" (left {os.listdir(OUTDIR)})")
    check(p.stdout == "", what + f" (stdout {p.stdout!r})")
    ncase += 1
    print(f"ok: {label or os.path.basename(path)}: {lines[0]}")


def mutated(name, fn):
    path = copy_fixture("emulated_rapl_nvml.hdf5", BAD)
    dst = os.path.join(BAD, name + ".hdf5")
    os.replace(path, dst)
    with h5py.File(dst, "r+") as f:
        fn(f)
    return dst


# files that are not HDF5 at all
expect_error(os.path.join(BAD, "missing.hdf5"), "No such file", label="missing file")
empty = os.path.join(BAD, "empty.hdf5")
open(empty, "wb").close()
expect_error(empty, "empty file", label="0-byte file")
text = os.path.join(BAD, "text.hdf5")
with open(text, "w") as f:
    f.write("multirun,round\n1,2\n" * 100)
expect_error(text, "not an HDF5 file", label="CSV text")
trunc = os.path.join(BAD, "truncated.hdf5")
with open(copy_fixture("emulated_rapl_nvml.hdf5", BAD), "rb") as f:
    data = f.read()
with open(trunc, "wb") as f:
    f.write(data[: len(data) // 3])
expect_error(trunc, "", label="truncated to a third")

# HDF5 but not perun's
p1 = os.path.join(BAD, "dataset_only.hdf5")
with h5py.File(p1, "w") as f:
    f["data"] = np.arange(10.0)
expect_error(p1, "is not a group", "/data", label="h5py file with one dataset")
p2 = os.path.join(BAD, "two_groups.hdf5")
with h5py.File(p2, "w") as f:
    f.create_group("a")
    f.create_group("b")
expect_error(p2, "holds 2 top-level objects", label="h5py file with two groups")
p3 = os.path.join(BAD, "no_type.hdf5")
with h5py.File(p3, "w") as f:
    f.create_group("myapp/nodes")
expect_error(p3, "no attribute 'type'", "/myapp", label="h5py group without perun's type")
p4 = os.path.join(BAD, "empty_h5.hdf5")
h5py.File(p4, "w").close()
expect_error(p4, "holds 0 top-level objects", label="empty HDF5")

# perun files with parts missing
expect_error(mutated("no_values", lambda f: f.__delitem__(PKG + "/raw_data/values")),
             "missing", "/" + PKG + "/raw_data/values", label="values dataset removed")
expect_error(mutated("no_timesteps", lambda f: f.__delitem__(GPU + "/raw_data/timesteps")),
             "missing", "/" + GPU + "/raw_data/timesteps", label="timesteps removed")
expect_error(mutated("no_host_nodes", lambda f: f.__delitem__(HOST + "/nodes")),
             "missing", "/" + HOST + "/nodes", label="host's nodes group removed")
expect_error(mutated("no_version", lambda f: f[MR].attrs.__delitem__("perun_version")),
             "no attribute 'perun_version'", "/" + MR, label="perun_version removed")
expect_error(mutated("no_mag", lambda f: f[GPU + "/raw_data/values"].attrs.__delitem__("mag")),
             "no attribute 'mag'", "/" + GPU + "/raw_data/values", label="mag removed")
expect_error(mutated("no_ranks", lambda f: f[HOST].attrs.__delitem__("mpi_ranks")),
             "no attribute 'mpi_ranks'", "/" + HOST, label="mpi_ranks removed")


# wrong dtypes, shapes, values
def str_values(f):
    del f[PKG + "/raw_data/values"]
    ds = f.create_dataset(PKG + "/raw_data/values", data=np.array([b"x"] * 12))
    ds.attrs["unit"] = "W"
    ds.attrs["mag"] = 1.0


expect_error(mutated("str_values", str_values), "dtype is string, expected int or float",
             "/" + PKG + "/raw_data/values", label="values as strings")


def str_mag(f):
    f[GPU + "/raw_data/values"].attrs["mag"] = "0.001"


expect_error(mutated("str_mag", str_mag), "attribute 'mag' is not a number",
             "/" + GPU + "/raw_data/values", label="mag as a string")


def num_unit(f):
    f[GPU + "/raw_data/values"].attrs["unit"] = 3


expect_error(mutated("num_unit", num_unit), "attribute 'unit' is not a string",
             "/" + GPU + "/raw_data/values", label="unit as a number")


def two_d(f):
    t = f[PKG + "/raw_data/timesteps"][:]
    del f[PKG + "/raw_data/timesteps"]
    ds = f.create_dataset(PKG + "/raw_data/timesteps", data=np.stack([t, t]))
    ds.attrs["unit"] = "s"
    ds.attrs["mag"] = 1.0


expect_error(mutated("two_d", two_d), "has 2 dimensions", "/" + PKG + "/raw_data/timesteps",
             label="2-D timesteps")


def short_values(f):
    v = f[PKG + "/raw_data/values"][:5]
    del f[PKG + "/raw_data/values"]
    ds = f.create_dataset(PKG + "/raw_data/values", data=v)
    ds.attrs["unit"] = "W"
    ds.attrs["mag"] = 1.0


with h5py.File(copy_fixture("emulated_rapl_nvml.hdf5", os.path.join(TMP, "layout")), "r") as _f:
    NT = len(_f[PKG + "/raw_data/timesteps"])
expect_error(mutated("short_values", short_values), f"timesteps has {NT} elements but values 5",
             "/" + PKG + "/raw_data", label="values shorter than timesteps")


def short_alt(f):
    a = f[PKG + "/raw_data/alt_values"][:3]
    del f[PKG + "/raw_data/alt_values"]
    ds = f.create_dataset(PKG + "/raw_data/alt_values", data=a)
    ds.attrs["unit"] = "J"
    ds.attrs["mag"] = 1e-6


expect_error(mutated("short_alt", short_alt), "but alt_values 3", "/" + PKG + "/raw_data",
             label="alt_values shorter")


def ms_timesteps(f):
    f[PKG + "/raw_data/timesteps"].attrs["unit"] = "ms"


expect_error(mutated("ms", ms_timesteps), "timesteps unit is 'ms'", label="timesteps not in s")


def wrong_type(f):
    f[HOST].attrs["type"] = 3


expect_error(mutated("wrong_type", wrong_type), "attribute 'type' is 3, expected 4 (NODE)",
             "/" + HOST, label="host with the RUN type")


def bad_ranks(f):
    f[HOST].attrs["mpi_ranks"] = "zero and one"


expect_error(mutated("bad_ranks", bad_ranks), "attribute 'mpi_ranks' is 'zero and one'",
             "/" + HOST, label="mpi_ranks not a list")


def soft_link(f):
    f[HOST + "/nodes/cpu/nodes/alias"] = h5py.SoftLink("/" + PKG)


expect_error(mutated("soft", soft_link), "soft or external link", "/" + HOST + "/nodes/cpu/nodes",
             label="soft link among sensors")


def energy_str(f):
    f[PKG + "/metrics/ENERGY"].attrs["value"] = "lots"


expect_error(mutated("energy_str", energy_str), "attribute 'value' is not a number",
             "/" + PKG + "/metrics/ENERGY", label="ENERGY value as a string")


def region_rank(f):
    rd = f[MR + "/nodes/0/regions/busy/raw_data"]
    rd["first"] = rd["0"][:]


expect_error(mutated("region_rank", region_rank), "member 'first' is not an MPI rank number",
             "/" + MR + "/nodes/0/regions/busy/raw_data", label="region rank not a number")

# A real file of perun 0.7.0 (tests/data/perun/make_old.sh: its own
# `--sampling_rate 0.5`): refused with the version, and what perun 1.0 calls
# the setting its config names, read from the config, not guessed (issue 22
# point 2).
old07 = copy_fixture("perun070_sampling_rate.hdf5", os.path.join(TMP, "old"))
expect_error(old07, "written by perun 0.7.0; anchorpost reads the files of perun 0.9 and 1.0",
             label="perun 0.7.0 file")
line = anchorpost("perun", old07, "-o", os.path.join(OUTDIR, "o.csv"), check_rc=False).stderr
check("monitor.sampling_rate = 0.5" in line and "--sampling_period" in line,
      "perun 0.7.0 file: its config's sampling_rate and perun 1.0's name for it not said: " + line)

# and the same files are fine before mutation (the errors above are not noise)
good = copy_fixture("emulated_rapl_nvml.hdf5", BAD)
p = anchorpost("perun", good, "-o", os.path.join(OUTDIR, "good.csv"))
check(p.returncode == 0 and os.path.exists(os.path.join(OUTDIR, "good.csv")), "unmutated file fails")
print(f"ok: the unmutated file converts; {ncase} bad inputs gave one-line errors, exit 1, no output")
print("PASS")
