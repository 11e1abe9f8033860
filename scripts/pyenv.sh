# Sourced by the other scripts: where gspo's pinned Python environment lives on this machine.
# One virtual environment per machine, outside the checkout, keyed by the Python version and the hash of
# scripts/requirements.txt, so a fresh clone (CI) reuses it and a changed pin builds a new one beside it.
#   GSPO_CACHE  root of the per-machine caches (default /var/cache/gspo; ~/.cache/gspo when that is not writable)
#   GSPO_VENV   the environment's directory          GSPO_PY  its python (override: a python with torch 2.11.0,
#                                                      as on the GPU machines, which reach no registry)
_gspo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ -z "${GSPO_CACHE:-}" ]; then
  if mkdir -p /var/cache/gspo 2>/dev/null && [ -w /var/cache/gspo ]; then GSPO_CACHE=/var/cache/gspo
  else GSPO_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/gspo"; fi
fi
GSPO_BASE_PY="${GSPO_BASE_PY:-/usr/bin/python3}"
_gspo_key="$( { "$GSPO_BASE_PY" -c 'import sys; print(sys.version.split()[0])' 2>/dev/null || echo none;
               cat "$_gspo_root/scripts/requirements.txt"; } | sha256sum | cut -c1-12)"
GSPO_VENV="${GSPO_VENV:-$GSPO_CACHE/venv-$_gspo_key}"
GSPO_PY="${GSPO_PY:-$GSPO_VENV/bin/python}"   # may be set to a python that already has torch 2.11.0
export GSPO_CACHE GSPO_VENV GSPO_PY
unset _gspo_root _gspo_key
