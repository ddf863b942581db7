"""The submission service's tests (``sharedtask.service``), one module per part of the service."""
