"""PostgreSQL + pgvector: the embedded server, the build writer and the SearchBackend over it."""
