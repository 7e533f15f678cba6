"""The transfer audit: which lessons carry across chips."""
