"""Checks the maps that with_maps.py wrote in a foreign root: every library
a member loaded is the root's own (its base system and Python) or comes
from the venv (TensorFlow, NumPy, ringmaster and what its wheel vendors),
and none of gRPC, protobuf or abseil is loaded from anywhere but the
ringmaster wheel's ringmaster.libs/ or TensorFlow's own package.

    python check_maps.py MAPS_DIR MIN_FILES
"""
import glob
import os
import re
import sys

SITE = re.compile(r"^/opt/venv/lib/python3\.\d+/site-packages/")
SYSTEM = re.compile(r"^(/usr)?/lib(64)?/(x86_64-linux-gnu/)?(ld-linux|libc|libm|libpthread|libdl|librt|libutil|"
                    r"libstdc\+\+|libgcc_s|libz|libexpat|libffi|libbz2|liblzma|libuuid|libssl|libcrypto|libmpdec|"
                    r"libsqlite3|libtinfo|libncursesw|libreadline|libgomp|libnsl|libresolv|libzstd)[.-]")
PYTHON = re.compile(r"^/usr/(bin/python3[.\d]*|lib/python3[.\d]*/)")
OURS_OR_TF = re.compile(r"/site-packages/(ringmaster\.libs|ringmaster|tensorflow|grpc|google)/")
FORBIDDEN = re.compile(r"lib(grpc|gpr|protobuf|absl_|upb|cares|re2|address_sorting|yaml-cpp|cpprest)")


def main() -> int:
    maps_dir, min_files = sys.argv[1], int(sys.argv[2])
    files = sorted(glob.glob(os.path.join(maps_dir, "maps-*.txt")))
    problems = []
    if len(files) < min_files:
        problems.append(f"{len(files)} maps files in {maps_dir}, expected at least {min_files}")
    ringmaster_seen = False
    for f in files:
        paths = set()
        for line in open(f):
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].startswith("/"):
                paths.add(parts[5].strip())
        for p in sorted(paths):
            if not (".so" in os.path.basename(p) or p.startswith("/usr/bin/")):
                continue  # data files (locale archives, /dev/shm, ...)
            if "libringmaster" in p:
                ringmaster_seen = True
            if FORBIDDEN.search(os.path.basename(p)) and not OURS_OR_TF.search(p):
                problems.append(f"{os.path.basename(f)}: {p}: gRPC/protobuf/abseil from outside the wheels")
            elif not (SITE.match(p) or SYSTEM.match(p) or PYTHON.match(p)):
                problems.append(f"{os.path.basename(f)}: {p}: neither the root's base system nor the venv")
    if files and not ringmaster_seen:
        problems.append("no member mapped libringmaster")
    for p in problems:
        print("check_maps:", p)
    print(f"check_maps: {len(files)} members' maps, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
