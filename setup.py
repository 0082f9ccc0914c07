"""Build the `anchor` package: `pip install .` from the repository root.

Compiles the same sources as the Makefile: every .c file in
python_hooks/src/ (src/writer.c #includes anchors/ring_writer.c), with
anchors/ and include/ (anchor_version.h) on the include path.

Auto mode starts through anchor_auto.pth (one line: `import
_anchor_autostart`, which returns after three environment lookups unless
ANCHOR_AUTO / ANCHOR_SYNC_PULSE is set or libanchor.so is preloaded).  A
.pth file is the one start-up hook the user's own sitecustomize.py cannot
collide with: nothing of the user's is overwritten, and `pip uninstall`
removes only what this package installed.
"""
import glob
import os
import shlex
import subprocess
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
PTH = "anchor_auto.pth"


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


class build_py_with_pth(build_py):
    """Put anchor_auto.pth at the top of the build tree, so the wheel
    installs it into site-packages itself (and lists it in RECORD)."""

    def run(self):
        super().run()
        self.copy_file(os.path.join("python_hooks", "site", PTH), os.path.join(self.build_lib, PTH),
                       preserve_mode=0)

    def get_outputs(self, include_bytecode=1):
        return super().get_outputs(include_bytecode) + [os.path.join(self.build_lib, PTH)]


# Relative paths: setuptools wants sources relative to setup.py.
os.chdir(HERE)
sources = sorted(glob.glob("python_hooks/src/*.c"))
# setuptools' scratch files stay inside the Makefile's build/ (ignored).
PIP_BUILD = os.path.join("build", "pip")
os.makedirs(PIP_BUILD, exist_ok=True)

setup(
    packages=["anchor"],
    package_dir={"anchor": "python_hooks/anchor", "": "python_hooks/site"},
    py_modules=["_anchor_autostart"],
    package_data={"anchor": ["py.typed", "*.pyi"]},
    cmdclass={"build_py": build_py_with_pth},
    ext_modules=[
        Extension(
            "anchor._anchor",
            sources=sources,
            include_dirs=["python_hooks/src", "anchors", "include"],
            define_macros=[("_GNU_SOURCE", None)],
            extra_compile_args=["-std=c11", "-fvisibility=hidden", "-Wall", "-Wextra", "-Wshadow",
                                "-Wno-unused-parameter", "-Wno-missing-field-initializers"] + _tls_flags(),
            libraries=["dl", "pthread"],
            depends=sorted(glob.glob("python_hooks/src/*.h")) + [
                "anchors/ring_writer.c", "anchors/ring_writer.h", "anchors/ring_format.h",
                "anchors/ring_path.c", "anchors/ring_path.h", "anchors/ring_procstart.c",
                "anchors/ring_procstart.h", "anchors/ring_rank.h", "anchors/ring_env.c", "anchors/ring_env.h",
                "include/anchor_version.h"],
        )
    ],
    options={"build": {"build_base": PIP_BUILD}, "egg_info": {"egg_base": PIP_BUILD}},
    zip_safe=False,
)
