#!/usr/bin/env bash
# Deterministic starting state per case, applied to a fresh copy of repo/ before either arm runs.
set -euo pipefail
case "$1" in
  config-comments)
    printf '# bench-test settings\n\nname = bob\n# loud = no\nloud=yes\n' > settings.conf
    ;;
esac
