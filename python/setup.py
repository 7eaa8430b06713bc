"""Builds collcomm_torch._C with CMake (CMakeLists.txt here builds libcollcomm from the repository too,
or takes the one in COLLCOMM_PREBUILT_DIR)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        out = Path(self.get_ext_fullpath(ext.name)).resolve().parent
        out.mkdir(parents=True, exist_ok=True)
        build = HERE / "build" / "cmake"
        args = [
            "cmake", "-S", str(HERE), "-B", str(build), f"-DPython3_EXECUTABLE={sys.executable}",
            "-DCMAKE_BUILD_TYPE=Release",
        ]
        if shutil.which("ninja"):
            args += ["-G", "Ninja"]
        if shutil.which("ccache"):
            args += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache", "-DCMAKE_C_COMPILER_LAUNCHER=ccache"]
        env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
        subprocess.run(args, check=True, env=env)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")
        subprocess.run(["cmake", "--build", str(build), "--target", "_C", "-j", jobs], check=True, env=env)
        module = next(build.glob("_C*.so"))
        shutil.copy2(module, self.get_ext_fullpath(ext.name))
        # The module needs the library by its soname (libcollcomm.so.<major>, the shortest such name):
        # one copy of it, not one per symlink.
        library_dir = Path((build / "collcomm_library_dir.txt").read_text().strip())
        soname = min(library_dir.glob("libcollcomm.so.*"), key=lambda p: len(p.name))
        shutil.copy2(soname, out / soname.name, follow_symlinks=True)


setup(ext_modules=[Extension("collcomm_torch._C", sources=[])], cmdclass={"build_ext": CMakeBuild})
