"""Reports a person reads: the evidence picture for a scored photo, and ``knockcam explain``'s close look."""
