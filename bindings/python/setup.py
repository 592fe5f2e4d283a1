"""Build the gpuplan extension for `pip install --no-build-isolation ./bindings/python`.

The C library is built first with CMake (static, position-independent,
no CLI or tests) from the checkout two levels up, then linked into
gpuplan._gpuplan; only SQLite is needed at run time.  Needs cmake, a C
compiler and libsqlite3-dev (tools/setup.sh installs them).
"""
import os
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


class CMakeBuildExt(build_ext):
    def run(self):
        if not os.path.exists(os.path.join(ROOT, "libgpuplan", "CMakeLists.txt")):
            sys.exit("gpuplan: build from a gpuplan checkout (libgpuplan/ not found above %s)" % HERE)
        build = os.path.join(os.path.abspath(self.build_temp), "cmake")
        subprocess.check_call([
            "cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
            "-DBUILD_SHARED_LIBS=OFF", "-DCMAKE_POSITION_INDEPENDENT_CODE=ON",
            "-DGPUPLAN_BUILD_TESTS=OFF", "-DGPUPLAN_BUILD_CLI=OFF", "-DGPUPLAN_BUILD_SIM=ON",
            "-DGPUPLAN_BUILD_PYTHON=OFF", "-DGPUPLAN_TESTING=OFF",
        ])
        subprocess.check_call(["cmake", "--build", build, "--target", "gpuplan",
                               "-j", str(os.cpu_count() or 2)])
        for ext in self.extensions:
            ext.include_dirs += [os.path.join(ROOT, "libgpuplan", "include"),
                                 os.path.join(build, "libgpuplan", "include")]
            ext.extra_objects += [os.path.join(build, "libgpuplan", "libgpuplan.a")]
            ext.libraries += ["sqlite3", "m"]
        super().run()


setup(
    ext_modules=[Extension("gpuplan._gpuplan", [os.path.join("_gpuplan.c")],
                           extra_compile_args=["-std=c11", "-fvisibility=hidden"])],
    cmdclass={"build_ext": CMakeBuildExt},
)
