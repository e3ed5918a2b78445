"""Paper experiments that run from the source tree (not part of the installed wheel)."""
