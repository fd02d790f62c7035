"""The wheel's `ringmaster` command: runs the CLI binary shipped inside the
package (ringmaster/bin/ringmaster, built from cli/) with the same
arguments, so `pip install ringmaster` is enough for `ringmaster run JOB.yaml`."""
from __future__ import annotations

import os
import sys
from pathlib import Path


def binary() -> Path:
    """Where the package keeps the command."""
    return Path(__file__).resolve().parent / "bin" / "ringmaster"


def main() -> None:
    exe = binary()
    if not os.access(exe, os.X_OK):
        sys.exit(f"ringmaster: the command is missing from the installed package ({exe}); reinstall the wheel")
    os.execv(exe, ["ringmaster", *sys.argv[1:]])


if __name__ == "__main__":
    main()
