"""Signals accounts sends to the layers above it (which it does not import)."""

from django.dispatch import Signal

# Sent with ``users=[...]`` after the roles those users hold changed (sign-in, an administrator's change).
roles_changed = Signal()
