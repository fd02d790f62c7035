# scripts/testbed.d/pause.sh: the real node's two images, built here (no
# registry is reachable from the machine): the sandbox image from pause.c of
# the pinned k8s.io/kubernetes (pins in kubernetes/), compiled static with
# gcc, and a busybox image from Debian's busybox-static for pods of tests.
# Both are OCI archives; node.sh imports them into containerd at up.
ALL_COMPONENTS+=(pause)

pause_module() { echo k8s.io/kubernetes; }
pause_pins() { echo kubernetes; }   # its source is in that module
pause_outputs() { echo pause.tar busybox.tar images.env; }
# What else the cache key covers: the compiler, busybox and this recipe.
pause_key() {
  gcc --version 2>/dev/null | head -n 1
  dpkg-query -W -f='busybox-static ${Version}\n' busybox-static 2>/dev/null
  echo "pause recipe 1"
}

pause_build() {  # OUTDIR GO VERSION
  local out=$1 go=$2 src tag work bb bbver
  command -v gcc >/dev/null || { log "build: pause: no gcc (scripts/setup installs it)"; return 1; }
  bb=/bin/busybox
  bbver=$(dpkg-query -W -f='${Version}' busybox-static 2>/dev/null | sed -E 's/^[0-9]+://; s/-.*//')
  [ -x "$bb" ] && [ -n "$bbver" ] || { log "build: pause: no busybox-static (scripts/setup installs it)"; return 1; }
  src=$("$go" list -m -f '{{.Dir}}' k8s.io/kubernetes)/build/pause || return 1
  tag=$(sed -n 's/^TAG ?= *//p' "$src/Makefile")
  [ -n "$tag" ] || { log "build: pause: no TAG in $src/Makefile"; return 1; }
  work=$(mktemp -d) || return 1
  mkdir -p "$work/pause" "$work/busybox/bin" "$work/busybox/tmp" "$work/busybox/etc"
  gcc -Os -Wall -Werror -static -DVERSION="v$tag-ringmaster" -o "$work/pause/pause" \
    "$src/linux/pause.c" && strip "$work/pause/pause" || { rm -rf "$work"; return 1; }
  cp "$bb" "$work/busybox/bin/busybox"
  local a
  for a in $("$bb" --list); do
    [ "$a" = busybox ] || ln -s busybox "$work/busybox/bin/$a"
  done
  chmod 1777 "$work/busybox/tmp"
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$work/busybox/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\n' >"$work/busybox/etc/group"
  oci_archive "localhost/ringmaster/pause:$tag" "$work/pause" "$out/pause.tar" \
    '"Entrypoint":["/pause"],"User":"65535:65535"' &&
  oci_archive "localhost/ringmaster/busybox:$bbver" "$work/busybox" "$out/busybox.tar" \
    '"Cmd":["sh"],"Env":["PATH=/bin"]' || { rm -rf "$work"; return 1; }
  printf 'PAUSE_IMAGE=%s\nBUSYBOX_IMAGE=%s\n' "localhost/ringmaster/pause:$tag" \
    "localhost/ringmaster/busybox:$bbver" >"$out/images.env"
  rm -rf "$work"
}

# oci_archive REF ROOTFS OUT CONFIG: ROOTFS as a one-layer OCI image archive
# named REF (what `ctr images import` reads), with CONFIG the JSON members of
# the image's runtime config. Reproducible: same files, same digests.
oci_archive() {
  local ref=$1 root=$2 out=$3 cfg=$4 d layer config manifest
  d=$(mktemp -d) || return 1
  mkdir -p "$d/blobs/sha256"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$root" -cf "$d/layer.tar" . || return 1
  layer=$(sha256sum <"$d/layer.tar" | cut -c1-64)
  mv "$d/layer.tar" "$d/blobs/sha256/$layer"
  printf '{"architecture":"amd64","os":"linux","config":{%s},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$cfg" "$layer" >"$d/config"
  config=$(sha256sum <"$d/config" | cut -c1-64)
  mv "$d/config" "$d/blobs/sha256/$config"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
    "$config" "$(stat -c %s "$d/blobs/sha256/$config")" "$layer" "$(stat -c %s "$d/blobs/sha256/$layer")" >"$d/manifest"
  manifest=$(sha256sum <"$d/manifest" | cut -c1-64)
  mv "$d/manifest" "$d/blobs/sha256/$manifest"
  printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "$manifest" "$(stat -c %s "$d/blobs/sha256/$manifest")" "$ref" "$ref" >"$d/index.json"
  echo '{"imageLayoutVersion":"1.0.0"}' >"$d/oci-layout"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$d" -cf "$out" oci-layout index.json blobs ||
    { rm -rf "$d"; return 1; }
  rm -rf "$d"
}
