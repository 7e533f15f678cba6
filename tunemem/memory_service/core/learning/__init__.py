"""The learning loop: retrieve, report, history, and how lessons are presented to a target."""
