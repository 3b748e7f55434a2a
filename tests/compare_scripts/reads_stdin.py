"""Reads standard input: under accel compare it gets end-of-file at once, never a hang."""

import sys

data = sys.stdin.read()
print(f"read {len(data)} characters from stdin")
