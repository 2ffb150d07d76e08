"""One monitor run over one batch, whatever the engine: the pipeline, its steps, the driver an engine
supplies, the check plan, partitioned and late-labelled runs, isolation and the spool."""
