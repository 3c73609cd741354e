# shellcheck shell=bash
# Sourced by tools/tsan.sh and tools/conformance.sh: fetches the original
# sources of a Debian source package with `apt-get source --download-only`.
#
#   deb_source_orig PACKAGE VERSION DIR
#
# puts PACKAGE's orig tarball of Debian version VERSION into DIR (kept there:
# a later call finds it and only checks it), checks it against the SHA-256
# of the package's .dsc and prints its path. apt needs a deb-src entry for
# that; the machine's apt sources usually have none. So the fetch uses a
# private apt configuration for its duration: a deb-src entry for the
# archive and suite of the machine's own `deb` entry for this release's main
# component (deb822 .sources files or one-line .list files), its own package
# lists, all in a temporary directory removed afterwards. /etc/apt and
# /var/lib/apt are not touched, and no root is needed.

# Prints one-line deb-src entries ("deb-src [signed-by=KEY] URI SUITE main")
# for CODENAME's main suite, from the machine's deb entries.
deb_source_entries() {
  local codename="$1"
  cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk -v suite="$codename" '
    function flush() {
      if ((" " types " ") ~ / deb / && (" " suites " ") ~ (" " suite " ") &&
          (" " comps " ") ~ / main / && uris != "")
        print "deb-src " (key != "" ? "[signed-by=" key "] " : "") uris " " suite " main"
      types = suites = comps = uris = key = ""
    }
    /^[ \t]*$/ { flush(); next }
    /^Types:/ { sub(/^Types:[ \t]*/, ""); types = $0 }
    /^URIs:/ { sub(/^URIs:[ \t]*/, ""); uris = $0 }
    /^Suites:/ { sub(/^Suites:[ \t]*/, ""); suites = $0 }
    /^Components:/ { sub(/^Components:[ \t]*/, ""); comps = $0 }
    /^Signed-By:/ { sub(/^Signed-By:[ \t]*/, ""); key = $0 }
    END { flush() }'
  # deb [options] URI suite components...
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
    awk -v suite="$codename" '$1 == "deb" {
      i = 2; opts = ""
      if ($2 ~ /^\[/) { while ($i !~ /\]$/) { opts = opts " " $i; i++ } opts = opts " " $i; i++ }
      if ($(i + 1) == suite && $0 ~ / main( |$)/) print "deb-src" opts " " $i " " suite " main" }'
}

# The fetch of deb_source_orig (run in a subshell: its private apt
# configuration is removed when it exits).
deb_source_fetch() {
  local package="$1" version="$2" dir="$3" codename apt_dir
  codename="$(. /etc/os-release && echo "${VERSION_CODENAME:-}")"
  apt_dir="$(mktemp -d)"
  # shellcheck disable=SC2064 # expanded now: $apt_dir is local
  trap "rm -rf '$apt_dir'" EXIT
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/parts" "$apt_dir/cache/archives/partial"
  deb_source_entries "$codename" >"$apt_dir/sources.list"
  if [[ ! -s $apt_dir/sources.list ]]; then
    echo "deb_source.sh: no deb entry for '$codename' main in /etc/apt to derive a deb-src entry from" >&2
    exit 1
  fi
  local apt=(apt-get -qq -o "Dir::Etc::SourceList=$apt_dir/sources.list"
             -o "Dir::Etc::SourceParts=$apt_dir/parts" -o "Dir::State::Lists=$apt_dir/lists"
             -o "Dir::Cache=$apt_dir/cache" -o "APT::Sandbox::User=root")
  echo "deb_source.sh: apt-get source --download-only $package=$version" \
       "(for it only: $(head -n 1 "$apt_dir/sources.list"))" >&2
  "${apt[@]}" update >"$dir/apt-get-update.log" 2>&1 ||
    { cat "$dir/apt-get-update.log" >&2; exit 1; }
  # Exits non-zero when the Debian patch tarball is missing on the mirror
  # (it often is): the original sources are enough, and checked afterwards.
  (cd "$dir" && "${apt[@]}" source --download-only "$package=$version") >"$dir/apt-get-source.log" 2>&1 ||
    echo "deb_source.sh: apt-get source failed (the Debian patch tarball is often missing); checking the original sources" >&2
}

# The orig tarball of `package`'s upstream version in `dir` (empty: none).
deb_source_tarball() {
  local package="$1" upstream="$2" dir="$3" f
  for f in "$dir/${package}_${upstream}".orig.tar.*; do
    [[ -f $f && $f != *.sha256 ]] && { echo "$f"; return; }
  done
  return 0
}

deb_source_orig() {
  local package="$1" version="$2" dir="$3"
  local upstream="${version#*:}"
  upstream="${upstream%-*}"
  mkdir -p "$dir"
  local tarball
  tarball="$(deb_source_tarball "$package" "$upstream" "$dir")"
  if [[ -n $tarball && -s $tarball.sha256 ]] && sha256sum --quiet -c "$tarball.sha256" >&2; then
    echo "$tarball"
    return
  fi
  (deb_source_fetch "$package" "$version" "$dir") || return 1
  local dsc="$dir/${package}_${version#*:}.dsc"
  tarball="$(deb_source_tarball "$package" "$upstream" "$dir")"
  if [[ -z $tarball || ! -s $dsc ]]; then
    cat "$dir/apt-get-source.log" >&2
    echo "deb_source.sh: apt-get source did not fetch the original sources of $package $version" >&2
    return 1
  fi
  local sum
  sum="$(awk -v f="${tarball##*/}" '/^Checksums-Sha256:/ { on = 1; next } /^[^ ]/ { on = 0 }
                                    on && $3 == f { print $1 }' "$dsc")"
  [[ -n $sum ]] || { echo "deb_source.sh: $dsc lists no SHA-256 for ${tarball##*/}" >&2; return 1; }
  echo "$sum  $tarball" >"$tarball.sha256"
  sha256sum --quiet -c "$tarball.sha256" >&2 || return 1
  echo "$tarball"
}
