"""The HTTP app and its page, one job a module: ``app`` (``create_app`` and the routes), ``auth`` (the tokens
file and the bearer check), ``limits`` (a request's limits and the middlewares), ``worker`` (the queue and the
deadline), ``markdown`` (Markdown sources rendered to HTML) and ``page`` (the one-page UI, ``static/``, and its
headers). ``raglab.surfaces.serving`` runs the app."""
