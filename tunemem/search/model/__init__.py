"""The performance model: encoding, per-family model, GP residual, chip weights,
the batch's composition and the pooled model over every stored run."""
