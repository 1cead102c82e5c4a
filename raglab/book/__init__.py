"""The book: one file per pipeline stage, in data-flow order."""
