"""The offline answerer's parts: extractive sentence selection."""
