"""What every benchmark shares: the machine record and the result writer."""
