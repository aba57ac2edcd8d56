"""The console's pages and htmx fragments, by area, each a declaration over the base classes of ``base``:

- ``pools``: the overview, one pool, its charts and editor, the what-if check
- ``configs``: pod templates, validation sets and roles as documents, the history, revisions and rollbacks
- ``inventory``: the node table, Run:ai's node-pools view, backends and their syncs, a node's GPUs
- ``quotas``: departments, projects, the quota grid and a pool's quota dashboard
- ``utilization``: idle GPUs and GPU-hours
- ``access``: roles, users and service accounts
- ``labels``: gpuctl's label pools and node labels

``pools/urls.py`` gives each page its address.
"""
