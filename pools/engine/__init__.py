"""The pure-Python heart of the pool console.

Everything in this package implements a rule of SEMANTICS.md (pod-template merge, variables, quantities,
resource validation, node membership, GPU accounting, roles) as plain functions over plain data. Nothing
here imports Django or touches a database, so it can be tested exhaustively and called from anywhere.
"""
