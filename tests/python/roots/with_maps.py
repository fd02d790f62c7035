"""Runs a Python script as `python SCRIPT ARGS...` would, then, at exit,
writes this process's /proc/self/maps to $MAPS_DIR/maps-PID.txt, so the
foreign-root test can see every library the member loaded and from where."""
import atexit
import os
import runpy
import sys


def _dump() -> None:
    with open("/proc/self/maps") as src, open(os.path.join(os.environ["MAPS_DIR"], f"maps-{os.getpid()}.txt"),
                                              "w") as dst:
        dst.write(src.read())


atexit.register(_dump)
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
runpy.run_path(sys.argv[0], run_name="__main__")
