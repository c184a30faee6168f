"""The knowledge tables: their schema, the database backend, installation and the shared read queries."""
