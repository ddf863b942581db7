"""The service's web layer: FastAPI routes (the JSON API and the pages) and the HTML they render.

It imports the domain (:mod:`sharedtask.service.submissions`, ``phases``, ``stages``, ...), never
the reverse; route modules share only :mod:`~sharedtask.service.web.common`.
"""
