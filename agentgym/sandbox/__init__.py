"""Sandboxed execution."""
