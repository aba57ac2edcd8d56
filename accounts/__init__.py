"""Identity and access: roles and their policies (SEMANTICS.md §7)."""
