"""Reading external tuning data into canonical trajectories (`ingest.records`), one reader
module per format (`ingest.readers`), and deterministic lesson distillation (`ingest.distill`).
No database and no HTTP: storing is the service's job."""
