"""The REST API: DRF viewsets over the services (writes) and selectors (reads), mounted at ``/api/``."""
