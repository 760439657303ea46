"""Training machinery: precision, optimizers and schedules, the CLI run."""
