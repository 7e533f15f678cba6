"""API shapes only: the request and response models of every door, one family per entity."""
