"""The image's state directory and lock file names, and the image knobs' defaults:
what config.py and the daemon read without importing the store, so that `gsmcpd
status` and `stop` import neither (they run before a script's every step)."""

STATE_DIR = ".gsmcpd"
LOCK_NAME = "lock"
JOURNAL_LIMIT = 1024 * 1024   # bytes past which a commit compacts the journal (ImageStore.journal_limit)
# Seconds a session open, refresh, abort or commit waits for the image lock (GS_MCP_IMAGE_LOCK_WAIT):
# any account that can read the image can hold it, so the wait must end.
LOCK_WAIT = 30.0
