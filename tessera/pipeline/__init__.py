"""The run engine: typed steps over a tenant's run workspace, and the executors that fan a
step's documents out to worker processes or a Ray cluster."""
