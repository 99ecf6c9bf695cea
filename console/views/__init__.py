"""Human console views: thin functions over selectors and services, one module per area.

Query errors show inline with a 200, since htmx 2 does not swap 4xx responses.
`base` holds what every view shares (the login guard, partial rendering).
"""
