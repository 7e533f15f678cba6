"""Lessons: add, list, edit, archive, and the valued listings."""
