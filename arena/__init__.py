"""Sixty-three Arena. The rules engine here imports only the standard library."""
