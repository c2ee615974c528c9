#!/usr/bin/env bash
# Run by deploy/Dockerfile's build stage, after the build: puts what the runtime image needs
# in one place, so the runtime stage copies one tree and installs one list of packages.
#
#   deploy/stage-runtime.sh BUILD_DIR ROOT PACKAGES
#
#   ROOT/usr/local/bin/{uopd,uopctl}   the binaries
#   ROOT/<the CUDA include directory>  when the build has the CUDA backend: the CUDA headers
#                                      NVRTC reads at run time (cuda_fp16.h, cuda_bf16.h,
#                                      cuda_fp8.h and what they include), at the path compiled
#                                      into the daemon (UOPD_CUDA_INCLUDE_DIR)
#   PACKAGES                           the Debian packages that own the shared libraries the
#                                      binaries load (ldd, then dpkg -S): the runtime stage
#                                      installs exactly these, so a library the build starts
#                                      linking (hiredis, NVRTC) is never forgotten
#
# Fails, naming it, on a library ldd cannot find or that no Debian package owns.
set -euo pipefail

if [[ $# -ne 3 ]]; then
  echo "usage: $0 BUILD_DIR ROOT PACKAGES" >&2
  exit 2
fi
build=$1
root=$2
packages=$3
binaries=("$build/server/uopd" "$build/client/uopctl")

for binary in "${binaries[@]}"; do
  [[ -x $binary ]] || { echo "stage-runtime: $binary is missing (build it first)" >&2; exit 1; }
done
install -d "$root/usr/local/bin"
install -m 0755 "${binaries[@]}" "$root/usr/local/bin/"

# The package owning a file, trying its real path first (a -dev package may own the symlink
# ldd went through, e.g. llvm-19-dev's /usr/lib/llvm-19/lib/libLLVM.so.19.1), then the path as
# given and both sides of the /usr merge.
owner() {
  local path=$1 candidate out
  for candidate in "$(readlink -f "$path")" "$path" "/usr$path" "${path#/usr}"; do
    [[ $candidate == /* ]] || continue
    if out=$(dpkg -S "$candidate" 2>/dev/null); then
      out=$(grep -v '^diversion' <<<"$out" | head -n1 | cut -d: -f1)
      if [[ -n $out ]]; then
        echo "$out"
        return 0
      fi
    fi
  done
  return 1
}

declare -A wanted=()
missing=()
unowned=()
libraries=()
for binary in "${binaries[@]}"; do
  while read -r line; do
    if [[ $line == *"=> not found"* ]]; then
      missing+=("${line%% *}")
    elif [[ $line =~ =\>\ (/[^ ]+) ]]; then
      libraries+=("${BASH_REMATCH[1]}")
    elif [[ $line =~ ^(/[^ ]+)\ \( ]]; then
      libraries+=("${BASH_REMATCH[1]}")  # the dynamic loader
    fi
  done < <(ldd "$binary")
done
for library in "${libraries[@]}"; do
  if package=$(owner "$library"); then
    wanted[$package]=1
  else
    unowned+=("$library")
  fi
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "stage-runtime: ldd cannot find ${missing[*]}" >&2
  exit 1
fi
if [[ ${#unowned[@]} -gt 0 ]]; then
  echo "stage-runtime: no Debian package owns ${unowned[*]}; the runtime image could not install" \
       "it (build with Debian's packages only)" >&2
  exit 1
fi
printf '%s\n' "${!wanted[@]}" | sort >"$packages"
echo "stage-runtime: runtime packages: $(tr '\n' ' ' <"$packages")"

# The CUDA headers, when the daemon was built with the CUDA backend (it then loads NVRTC).
if grep -q '^libnvrtc' "$packages" || ldd "$build/server/uopd" | grep -q 'libnvrtc'; then
  include_dir=$(grep -rhoE 'UOPD_CUDA_INCLUDE_DIR=\\?"[^"\\]+' "$build/build.ninja" \
                  "$build"/backends/cuda/CMakeFiles/*/flags.make 2>/dev/null | head -n1 |
                sed -E 's/^UOPD_CUDA_INCLUDE_DIR=\\?"//' || true)
  if [[ -z $include_dir ]]; then
    echo "stage-runtime: the daemon links NVRTC but $build has no UOPD_CUDA_INCLUDE_DIR" >&2
    exit 1
  fi
  real_dir=$(readlink -f "$include_dir")
  if [[ ! -f $real_dir/cuda_fp16.h ]]; then
    echo "stage-runtime: $real_dir/cuda_fp16.h is missing (the CUDA include directory)" >&2
    exit 1
  fi
  list=$(mktemp)
  package=""
  if package=$(owner "$real_dir/cuda_fp16.h"); then
    # Debian puts the CUDA headers in /usr/include beside every other header: take only the
    # files of the package that ships them (nvidia-cuda-dev).
    dpkg -L "$package" | while read -r file; do
      if [[ $file == "$real_dir"/* && ( -f $file || -L $file ) && ! -d $file ]]; then
        echo "${file#/}"
      fi
    done >"$list"
  else
    find "$real_dir" \( -type f -o -type l \) | sed 's|^/||' >"$list"
  fi
  tar -C / -cf - -T "$list" | tar -C "$root" -xf -
  echo "stage-runtime: $(wc -l <"$list") CUDA headers from $real_dir${package:+ ($package)}"
  rm -f "$list"
  if [[ $include_dir != "$real_dir" && ! -e $root$include_dir ]]; then
    install -d "$root$(dirname "$include_dir")"
    ln -s "$real_dir" "$root$include_dir"
  fi
fi
