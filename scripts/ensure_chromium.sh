#!/usr/bin/env bash
# The docs-site browser test needs Debian's chromium. Install it when we can (root + apt-get);
# exit 1 when it is not available, so `make test` can skip that one test (and CI fails instead).
set -u
for name in chromium chromium-browser; do
  command -v "$name" >/dev/null 2>&1 && exit 0
done
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's chromium for the docs-site browser test..." >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null 2>&1
  command -v chromium >/dev/null 2>&1 && exit 0
fi
echo "chromium is not installed: the browser test will be skipped (apt-get install chromium)" >&2
exit 1
