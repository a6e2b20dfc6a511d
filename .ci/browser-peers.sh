#!/usr/bin/env bash
# Installs headless Chromium (Debian `chromium`) for the `screenshot` tool's tests
# (crates/tackle-tools/tests/media_screenshot.rs). Never fails the run: when it cannot install,
# it says why and those tests skip with a printed reason.
# Idempotent: with a browser in place it does nothing.
cd "$(dirname "$0")" || exit 0

for candidate in /usr/bin/chromium /usr/bin/chromium-browser; do
  if [[ -x "$candidate" ]]; then
    echo "browser peers: $("$candidate" --version 2>/dev/null || echo "$candidate")"
    exit 0
  fi
done

if ! command -v apt-get >/dev/null 2>&1; then
  echo "browser peers: no apt-get; chromium not installed, the screenshot tests will skip"
  exit 0
fi
if [[ "$(id -u)" != 0 ]]; then
  echo "browser peers: not root; chromium not installed, the screenshot tests will skip"
  exit 0
fi
if ! log="$( (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
  --no-install-recommends chromium) 2>&1)"; then
  echo "browser peers: could not install chromium, the screenshot tests will skip:"
  echo "$log" | tail -n 5
  exit 0
fi
echo "browser peers: $(/usr/bin/chromium --version 2>/dev/null || echo 'chromium installed')"
exit 0
