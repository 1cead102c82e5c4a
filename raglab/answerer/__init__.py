"""The offline answerer: quote the retrieved sentences that answer (``extractive``), each under its API line
(``quotes``), scored by cosine and term overlap (``terms``) or a fitted scorer (``selection``); and post-hoc
attribution for models that do not cite (``attribution``)."""
