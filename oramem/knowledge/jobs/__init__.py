"""Background work (KC §6): the maintenance jobs and the queue of deferred writes."""
