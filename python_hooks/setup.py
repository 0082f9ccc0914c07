"""Build the `anchor` package: `pip install ./python_hooks`.

Compiles the same sources as the project Makefile: every .c file in src/
(src/writer.c #includes ../anchors/ring_writer.c), with ../anchors on the
include path, so the checkout's anchors/ must sit beside this directory
(pip >= 21.3 builds a local directory in place).  Installs the package and
anchor's chaining sitecustomize.py (see site/sitecustomize.py).
"""
import glob
import os
import shlex
import subprocess
import sysconfig

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
ANCHORS = os.path.normpath(os.path.join(HERE, "..", "anchors"))

if not os.path.isfile(os.path.join(ANCHORS, "ring_writer.c")):
    raise SystemExit(
        "anchor: %s/ring_writer.c not found; build from a full checkout "
        "(pip install ./python_hooks from the project root)" % ANCHORS
    )



def _tls_flags():
    """-mtls-dialect=gnu2 when the compiler takes it (as the Makefile does):
    the module is dlopen'ed, and TLS descriptors spare the writer a
    __tls_get_addr call on each thread-chunk access."""
    cc = shlex.split(sysconfig.get_config_var("CC") or "cc")
    try:
        r = subprocess.run(cc + ["-mtls-dialect=gnu2", "-fPIC", "-E", "-x", "c", os.devnull],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        return []
    return ["-mtls-dialect=gnu2"] if r.returncode == 0 else []


# Relative paths: setuptools wants sources relative to setup.py.
os.chdir(HERE)
sources = sorted(glob.glob("src/*.c"))

setup(
    packages=["anchor"],
    package_dir={"anchor": "anchor", "": "site"},
    py_modules=["sitecustomize"],
    package_data={"anchor": ["py.typed", "*.pyi"]},
    ext_modules=[
        Extension(
            "anchor._anchor",
            sources=sources,
            include_dirs=["src", ANCHORS],
            define_macros=[("_GNU_SOURCE", None)],
            extra_compile_args=["-std=c11", "-fvisibility=hidden", "-Wall", "-Wextra", "-Wshadow",
                                "-Wno-unused-parameter", "-Wno-missing-field-initializers"] + _tls_flags(),
            libraries=["dl", "pthread"],
            depends=sorted(glob.glob("src/*.h")) + [os.path.join(ANCHORS, f) for f in
                                                    ("ring_writer.c", "ring_writer.h", "ring_format.h",
                                                     "ring_path.c", "ring_path.h", "ring_procstart.c",
                                                     "ring_procstart.h", "ring_rank.h")],
        )
    ],
    zip_safe=False,
)
