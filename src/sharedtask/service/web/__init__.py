"""The service's routes and pages, by domain (the domain code lives beside, in ``service/``)."""
