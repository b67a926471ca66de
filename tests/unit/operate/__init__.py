"""Unit tests of mirrorspec/operate/: health, heartbeat, metrics, retention, retry, watch."""
