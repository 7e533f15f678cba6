"""`tunemem bench service`: the served memory's latency, throughput and footprint under load."""
