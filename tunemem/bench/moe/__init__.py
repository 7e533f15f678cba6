"""`tunemem bench moe`: fused-MoE tuning from the memory, replayed on recorded H200 timings."""
