"""Loads, or prebuilds into its cache, the TensorFlow op library of
ringmaster.tensorflow and prints its path (e.g. in a Dockerfile, so that
pods do not compile it; with a TensorFlow the package carries a prebuilt op
for, that one is loaded and nothing is compiled):

    python -m ringmaster.tensorflow.build

Importing ringmaster.tensorflow builds it too, on first use; this is the
same build, run ahead of time. Exit status 1 with the compiler's output if
it fails.
"""
from __future__ import annotations

import sys


def main() -> int:
    from . import _build
    try:
        module = _build.load()
    except _build.OpBuildError as e:
        print(e, file=sys.stderr)
        return 1
    import tensorflow as tf
    print(f"ringmaster.tensorflow: op library for TensorFlow {tf.__version__} "
          f"({', '.join(sorted(n for n in dir(module) if n.startswith('ringmaster_')))})", file=sys.stderr)
    print(_build.loaded_path())
    return 0


if __name__ == "__main__":
    sys.exit(main())
