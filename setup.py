"""Build of the compiled kernels (perfsuite._kernels) from kernels/.

ISA-specific code is compiled inside ``#pragma GCC target`` regions, so no global -m flags:
the extension imports on any x86-64 CPU and dispatches at run time."""

import os
import shutil
import sysconfig
from pathlib import Path

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class BuildExtWithClearErrors(build_ext):
    """Fail with a plain message when no C compiler is available."""

    def run(self):
        # distutils compiles with $CC when set, else the compiler Python was built with.
        cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
        if shutil.which(cc) is None:
            raise SystemExit(
                f"perfsuite: no C compiler found (looked for {cc!r}). The kernels are "
                "compiled C: install one (e.g. 'apt-get install gcc') or point CC at it."
            )
        super().run()


extension = Extension(
    "perfsuite._kernels",
    sources=["kernels/_kernels.pyx"],
    # The headers hold the kernels: a change to any of them rebuilds the extension.
    depends=sorted(str(p) for p in Path("kernels").glob("*.h")),
    include_dirs=["kernels", numpy.get_include()],
    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    extra_compile_args=["-O3", "-fopenmp", "-fno-math-errno"],
    extra_link_args=["-fopenmp"],
)

setup(
    ext_modules=cythonize([extension], compiler_directives={"language_level": 3}),
    cmdclass={"build_ext": BuildExtWithClearErrors},
)
