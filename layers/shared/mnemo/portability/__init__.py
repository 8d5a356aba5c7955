"""Moving a tenant, a user or some layers between stores: ``mnemo export`` and ``mnemo import``."""
