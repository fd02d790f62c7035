# Sourced by scripts/build and scripts/python-wheel: the compiler cache.
# With ccache installed (scripts/setup installs it), every tree's objects are
# cached by content in ~/.cache/ringmaster/ccache (RINGMASTER_CACHE moves it),
# so a fresh clone or a fresh tree compiles only what changed. Paths under the
# checkout are hashed relative to it (CCACHE_BASEDIR, always this checkout;
# the build directory is not hashed), so clones at other paths share the
# cache. Sets ccache_defines to the CMake options that turn it on (or off, in a tree
# configured with it before); RINGMASTER_CCACHE=0 turns it off.
ccache_defines=(-DCMAKE_C_COMPILER_LAUNCHER= -DCMAKE_CXX_COMPILER_LAUNCHER=)
if [ "${RINGMASTER_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null; then
  export CCACHE_DIR=${CCACHE_DIR:-${RINGMASTER_CACHE:-$HOME/.cache/ringmaster}/ccache}
  # Always this checkout: one inherited from a caller that sourced another
  # checkout's copy would leave this one's paths absolute (every object a miss).
  CCACHE_BASEDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  export CCACHE_BASEDIR
  export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
  export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-12G}
  ccache_defines=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
